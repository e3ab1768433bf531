// Which job-queue workers are alive, as PostgreSQL sees it: each process holds a session advisory lock per worker, and
// a sweep releases the jobs of workers whose lock nobody holds any more (their process died: SIGKILL, OOM, power).
import pg from 'pg';

type Log = { warn(obj: object, msg: string): void };

/** The advisory lock key of a worker (namespaced, so it never meets the app's other advisory locks). */
const lockKey = (workerId: string) => `job-worker-alive:${workerId}`;

/**
 * graphile-worker keeps a job locked for 4 hours when its worker vanishes without releasing it. Each process
 * instead proves its workers alive by holding `lockKey(id)` on one connection of its own: PostgreSQL drops those
 * locks the moment that connection dies with the process. Every `recoverySeconds / 3` the sweep looks at jobs locked
 * for over `recoverySeconds`; a worker whose lock it can take is gone, and its jobs are released with
 * graphile-worker's own `force_unlock_workers`, so any live worker retries them.
 */
export class WorkerLiveness {
  private client: pg.Client;
  private readonly held = new Set<string>();
  private connecting: Promise<void> | undefined;
  /** The client's work, one piece at a time: pg deprecates a query sent while another is running on the client. */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly recoverySeconds: number,
    private readonly log: Log,
  ) {
    this.client = this.newClient();
  }

  private newClient(): pg.Client {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 5_000 });
    // A lost connection frees every lock this process held: reconnect and take them again.
    client.on('error', (error) => {
      this.log.warn({ err: error }, 'job worker liveness connection lost; reconnecting');
      this.client = this.newClient();
      this.connecting = undefined;
      for (const id of this.held) void this.lock(id).catch(() => {});
    });
    return client;
  }

  private connected(): Promise<void> {
    const connecting = this.connecting ?? this.client.connect().then(() => undefined);
    this.connecting = connecting;
    return connecting;
  }

  /** Runs `work` on the connected client after the work queued before it (whether that succeeded or not). */
  private serial<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const run = async () => {
      await this.connected();
      return work(this.client);
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async lock(workerId: string): Promise<void> {
    await this.serial((client) => client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey(workerId)]));
  }

  /**
   * A worker (graphile-worker's pool, whose id its jobs' `locked_by` carries) of this process started: it is alive
   * while this process's liveness connection is.
   */
  async hold(workerId: string): Promise<void> {
    if (this.held.has(workerId)) return;
    this.held.add(workerId);
    await this.lock(workerId);
  }

  /** A worker of this process stopped. */
  async release(workerId: string): Promise<void> {
    if (!this.held.delete(workerId)) return;
    await this.serial((client) => client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey(workerId)]));
  }

  /** Releases the jobs of workers that are gone; answers their ids. */
  sweep(): Promise<string[]> {
    return this.serial((client) => this.sweepOn(client));
  }

  private async sweepOn(client: pg.Client): Promise<string[]> {
    const { rows } = await client.query<{ locked_by: string }>(
      `SELECT DISTINCT locked_by FROM graphile_worker.jobs
       WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => $1)`,
      [this.recoverySeconds],
    );
    const gone: string[] = [];
    for (const { locked_by: workerId } of rows) {
      if (this.held.has(workerId)) continue;
      const { rows: taken } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS free', [
        lockKey(workerId),
      ]);
      if (!taken[0]?.free) continue;
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey(workerId)]);
      gone.push(workerId);
    }
    if (gone.length > 0) {
      await client.query('SELECT graphile_worker.force_unlock_workers($1::text[])', [gone]);
      this.log.warn({ workers: gone }, 'released the jobs of job-queue workers whose process is gone');
    }
    return gone;
  }

  /** Sweeps every third of the recovery time until `close`. */
  start(): void {
    const every = Math.max(1_000, (this.recoverySeconds * 1000) / 3);
    this.timer = setInterval(() => {
      if (!this.closed) void this.sweep().catch((error: unknown) => this.log.warn({ err: error }, 'job worker liveness sweep failed'));
    }, every);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.held.clear();
    if (this.connecting) await this.client.end().catch(() => {});
  }
}
