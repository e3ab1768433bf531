// Routes reads to a streaming replica when it is healthy and has replayed the caller's own last write; else the primary.
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type { Db, Queryable } from './client.js';

/** A replica further behind the primary than this is skipped until it catches up. */
export const REPLICA_MAX_LAG_MS = 10_000;
/** How long a read waits for the replica to replay the caller's last write before it goes to the primary. */
export const READ_YOUR_WRITES_WAIT_MS = 200;
/** How long a user's last write position is remembered: past it, any replica in use has replayed it (lag bound). */
export const WRITE_POSITION_TTL_MS = 6 * REPLICA_MAX_LAG_MS;
const HEALTH_INTERVAL_MS = 250;

/** `X/Y` (a pg_lsn) as one number, for comparisons. */
export function lsnValue(lsn: string): bigint {
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** Where a user's last write ended in the WAL: per process, or shared through Redis by every process and instance. */
export interface WritePositions {
  get(userId: string): Promise<bigint | undefined>;
  set(userId: string, lsn: bigint): Promise<void>;
}

export function memoryWritePositions(): WritePositions {
  const positions = new Map<string, { lsn: bigint; until: number }>();
  return {
    async get(userId) {
      const entry = positions.get(userId);
      if (!entry || entry.until < Date.now()) {
        positions.delete(userId);
        return undefined;
      }
      return entry.lsn;
    },
    async set(userId, lsn) {
      // A Map in insertion order: the oldest entries go first when it grows large.
      if (positions.size > 100_000) positions.delete(positions.keys().next().value as string);
      positions.set(userId, { lsn, until: Date.now() + WRITE_POSITION_TTL_MS });
    },
  };
}

export function redisWritePositions(redis: Redis): WritePositions {
  const key = (userId: string) => `crm-write-lsn:${userId}`;
  return {
    async get(userId) {
      const value = await redis.get(key(userId));
      return value === null ? undefined : BigInt(value);
    },
    async set(userId, lsn) {
      await redis.set(key(userId), lsn.toString(), 'PX', WRITE_POSITION_TTL_MS);
    },
  };
}

/** Errors of the connection rather than of the statement: the replica is gone, the read goes to the primary. */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (/^(ECONN|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH)/.test(code) || /^(08|57P0)/.test(code))) return true;
  const message = String((error as { message?: unknown }).message ?? '');
  return /Connection terminated|connection error|timeout exceeded when trying to connect|Can't reach database|ECONNREFUSED/i.test(message);
}

export class ReplicaRouter {
  private healthy = false;
  private replayed = 0n;
  /** Primary WAL positions sampled over the last REPLICA_MAX_LAG_MS, oldest first: the lag is measured against them. */
  private samples: Array<{ at: number; lsn: bigint }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly primary: Queryable,
    private readonly replica: pg.Pool,
    private readonly positions: WritePositions,
    private readonly onChange: (healthy: boolean, reason: string) => void = () => {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), HEALTH_INTERVAL_MS);
    this.timer.unref();
    void this.check();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  markDown(reason: string): void {
    this.setHealth(false, reason);
  }

  private setHealth(healthy: boolean, reason: string): void {
    if (healthy !== this.healthy) this.onChange(healthy, reason);
    this.healthy = healthy;
  }

  /** The replica is usable when it answers, is a standby, and has replayed what the primary had REPLICA_MAX_LAG_MS ago. */
  async check(): Promise<void> {
    try {
      const now = Date.now();
      const [{ rows: primary }, { rows: replica }] = await Promise.all([
        this.primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'),
        this.replica.query<{ standby: boolean; lsn: string | null }>(
          'SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS lsn',
        ),
      ]);
      this.samples.push({ at: now, lsn: lsnValue(primary[0]?.lsn ?? '0/0') });
      while ((this.samples[1]?.at ?? Number.POSITIVE_INFINITY) <= now - REPLICA_MAX_LAG_MS) this.samples.shift();
      const standby = replica[0]?.standby === true && replica[0].lsn !== null;
      this.replayed = lsnValue(replica[0]?.lsn ?? '0/0');
      const due = this.samples[0];
      const behind = due !== undefined && due.at <= now - REPLICA_MAX_LAG_MS && this.replayed < due.lsn;
      if (!standby) this.setHealth(false, 'not a standby');
      else if (behind) this.setHealth(false, `more than ${REPLICA_MAX_LAG_MS} ms behind the primary`);
      else this.setHealth(true, 'replaying');
    } catch (error) {
      this.setHealth(false, (error as Error).message);
    }
  }

  /** Remembers where the primary's WAL stands after a user's write, before its answer leaves. */
  async noteWrite(userId: string): Promise<void> {
    const { rows } = await this.primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    await this.positions.set(userId, lsnValue(rows[0]?.lsn ?? '0/0'));
  }

  /** Whether this user's read may go to the replica: healthy, and its last write replayed (waiting briefly for it). */
  async usableFor(userId: string): Promise<boolean> {
    if (!this.healthy) return false;
    // Positions unreadable (Redis away): the primary is always right.
    const written = await this.positions.get(userId).catch(() => null);
    if (written === null) return false;
    if (written === undefined || this.replayed >= written) return true;
    const deadline = Date.now() + READ_YOUR_WRITES_WAIT_MS;
    for (;;) {
      try {
        const { rows } = await this.replica.query<{ lsn: string }>('SELECT pg_last_wal_replay_lsn()::text AS lsn');
        this.replayed = lsnValue(rows[0]?.lsn ?? '0/0');
      } catch {
        return false;
      }
      if (this.replayed >= written) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** A reader for the raw page statements that falls back to the primary when the replica's connection fails. */
export function failoverReader(replica: pg.Pool, primary: pg.Pool, router: ReplicaRouter): pg.Pool {
  const query = async (...args: unknown[]) => {
    try {
      return await (replica.query as (...a: unknown[]) => Promise<unknown>)(...args);
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      router.markDown((error as Error).message);
      return (primary.query as (...a: unknown[]) => Promise<unknown>)(...args);
    }
  };
  return new Proxy(replica, { get: (target, property) => (property === 'query' ? query : Reflect.get(target, property)) });
}

/** The replica's Prisma client, each of whose operations falls back to the primary's when the replica's connection fails. */
export function failoverClient(replica: Db, primary: Db, router: ReplicaRouter): Db {
  return replica.$extends({
    name: 'replica-failover',
    query: {
      $allModels: {
        async $allOperations({ model, operation, args, query }) {
          try {
            return await query(args);
          } catch (error) {
            if (!isConnectionError(error)) throw error;
            router.markDown((error as Error).message);
            const delegate = (primary as unknown as Record<string, Record<string, (a: unknown) => Promise<unknown>>>)[
              model.charAt(0).toLowerCase() + model.slice(1)
            ];
            return delegate?.[operation]?.(args);
          }
        },
      },
    },
  }) as unknown as Db;
}
