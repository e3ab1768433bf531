// Forces interleavings for race tests: a second PostgreSQL connection that holds row locks, and a wait for blocked queries.
import pg from 'pg';
import type { Test } from 'tap';

export interface LockHolder {
  /** Runs SQL inside the holder's open transaction (e.g. `SELECT ... FOR UPDATE`). */
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  /** Commits, releasing every lock the holder took. */
  release(): Promise<void>;
  /** How many other sessions on this database are waiting for a lock right now. */
  lockWaiters(): Promise<number>;
  /** Resolves once at least `count` sessions wait for a lock, or as soon as `orElse` returns true. */
  waitForLockWaiters(count: number, orElse?: () => boolean): Promise<void>;
}

export async function holdLocks(t: Test, databaseUrl: string): Promise<LockHolder> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  // Outside the holder's transaction: pg_stat_activity is a snapshot frozen for the rest of a transaction.
  const monitor = new pg.Client({ connectionString: databaseUrl });
  monitor.on('error', () => {});
  await client.connect();
  await monitor.connect();
  await client.query('BEGIN');
  let open = true;
  t.teardown(async () => {
    if (open) await client.query('ROLLBACK').catch(() => {});
    await client.end().catch(() => {});
    await monitor.end().catch(() => {});
  });
  const holder: LockHolder = {
    query: (text, values) => client.query(text, values as unknown[]),
    async release() {
      if (!open) return;
      open = false;
      await client.query('COMMIT');
    },
    async lockWaiters() {
      const { rows } = await monitor.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0]!.n;
    },
    async waitForLockWaiters(count, orElse = () => false) {
      for (;;) {
        if (orElse() || (await holder.lockWaiters()) >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
  };
  return holder;
}

/** Tracks whether a promise has settled, for `waitForLockWaiters(count, orElse)`. */
export function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  return { promise: tracked, settled: () => done };
}
