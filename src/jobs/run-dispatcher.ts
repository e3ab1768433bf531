// Each instance's automation run dispatcher: woken by the writes' NOTIFY (and a poll for retries and lapsed leases), it
// claims due runs from automation_runs in batches, executes them a bounded number at a time, and records their outcomes.
import pg from 'pg';
import { coalesce } from './coalesce.js';
import {
  claimRuns,
  recordRunOutcomes,
  releaseRuns,
  renewRunLeases,
  RUNS_CHANNEL,
  type ClaimedRun,
  type RunOutcome,
} from './automation-runs.js';

type Log = { warn(obj: object, msg: string): void };

export interface RunDispatcherOptions {
  /** PostgreSQL itself as the owner (LISTEN needs a session; the claim is installation-wide work). */
  connectionString: string;
  /** Runs executed at once; up to as many more are claimed ahead, so a burst is claimed a batch at a time. */
  concurrency: number;
  /** How long a claim holds a run: renewed every third of it while the worker lives; past it, another worker takes it. */
  leaseSeconds: number;
  /** How often it looks for runs without a wake-up: retries that came due, leases that ran out, a missed notification. */
  pollIntervalMs: number;
  log: Log;
  /** One attempt of a claimed run, reduced to its outcome (never throws for the action's sake). */
  execute: (run: ClaimedRun) => Promise<RunOutcome>;
}

/** How long after a lost LISTEN connection it connects again. */
const RECONNECT_DELAY_MS = 1_000;

/**
 * Claims only when no more than `concurrency` runs are held (executing or claimed ahead), then up to twice that many
 * minus those held: at most one claim in flight, and wake-ups during it fold into one more claim after it. A claim
 * that came back full is followed by another as soon as there is room.
 */
export function createRunDispatcher(options: RunDispatcherOptions) {
  const { concurrency, leaseSeconds, log } = options;
  const capacity = 2 * concurrency;
  const pool = new pg.Pool({ connectionString: options.connectionString, max: 2, connectionTimeoutMillis: 5_000 });
  pool.on('error', (error) => log.warn({ err: error }, 'automation run dispatcher: idle connection failed'));
  const record = coalesce((outcomes: RunOutcome[]) => recordRunOutcomes(pool, outcomes).then(() => outcomes.map(() => undefined)));

  const waiting: ClaimedRun[] = [];
  const executing = new Map<string, ClaimedRun>();
  const finishing = new Set<Promise<void>>();
  let wanted = false;
  let claiming: Promise<void> | undefined;
  let listener: pg.Client | undefined;
  let timers: NodeJS.Timeout[] = [];
  let reconnect: NodeJS.Timeout | undefined;
  let running = false;

  const held = () => waiting.length + executing.size;

  const startWaiting = () => {
    while (running && executing.size < concurrency && waiting.length > 0) {
      const run = waiting.shift() as ClaimedRun;
      // Keyed by claim: a run whose lease ran out (renewals failing) may be claimed again while its old attempt ends.
      const claim = `${run.id}:${run.attempts}`;
      executing.set(claim, run);
      const done = options
        .execute(run)
        .then((outcome) => record(outcome))
        .catch((error: unknown) => {
          // The run keeps its lease and is taken again once it runs out: at least once, never lost.
          log.warn({ err: error, runId: run.id }, 'automation run outcome not recorded; it runs again after its lease');
        })
        .finally(() => {
          executing.delete(claim);
          finishing.delete(done);
          pump();
        });
      finishing.add(done);
    }
  };

  function pump(): void {
    startWaiting();
    if (!running || claiming || !wanted || held() > concurrency) return;
    wanted = false;
    const limit = capacity - held();
    claiming = claimRuns(pool, limit, leaseSeconds)
      .then((runs) => {
        waiting.push(...runs);
        if (runs.length === limit) wanted = true;
      })
      .catch((error: unknown) => log.warn({ err: error }, 'automation runs could not be claimed; trying again at the next poll'))
      .finally(() => {
        claiming = undefined;
        pump();
      });
  }

  const wake = () => {
    wanted = true;
    pump();
  };

  const listen = () => {
    if (!running) return;
    const client = new pg.Client({ connectionString: options.connectionString, connectionTimeoutMillis: 5_000 });
    const lost = (error?: Error) => {
      if (listener !== client) return;
      listener = undefined;
      client.end().catch(() => {});
      if (error) log.warn({ err: error }, 'automation run dispatcher lost its LISTEN connection; reconnecting');
      clearTimeout(reconnect);
      if (running) reconnect = setTimeout(listen, RECONNECT_DELAY_MS);
    };
    listener = client;
    client.on('notification', wake);
    client.on('error', lost);
    client.on('end', () => lost());
    client
      .connect()
      .then(() => client.query(`LISTEN ${RUNS_CHANNEL}`))
      // Whatever was queued while it was not listening.
      .then(wake)
      .catch((error: unknown) => lost(error instanceof Error ? error : new Error(String(error))));
  };

  /** Keeps the held runs' leases ahead of now, so a live worker's run is never taken over however long it takes. */
  const renew = () => {
    const runs = [...executing.values(), ...waiting];
    renewRunLeases(pool, runs, leaseSeconds).catch((error: unknown) =>
      log.warn({ err: error }, 'automation run leases could not be renewed'),
    );
  };

  return {
    start(): void {
      if (running) return;
      running = true;
      listen();
      timers = [setInterval(wake, options.pollIntervalMs), setInterval(renew, Math.max(200, (leaseSeconds * 1000) / 3))];
      for (const timer of timers) timer.unref();
      wake();
    },
    /** Stops claiming, gives back the runs claimed ahead, waits for those executing to be recorded. */
    async close(): Promise<void> {
      running = false;
      for (const timer of timers) clearInterval(timer);
      clearTimeout(reconnect);
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
      await claiming;
      const unstarted = waiting.splice(0);
      await releaseRuns(pool, unstarted).catch((error: unknown) =>
        log.warn({ err: error }, 'claimed automation runs not given back; they run after their lease'),
      );
      await Promise.all(finishing);
      await pool.end().catch(() => {});
    },
  };
}

export type RunDispatcher = ReturnType<typeof createRunDispatcher>;
