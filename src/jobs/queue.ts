// The job queue (graphile-worker on the application's PostgreSQL): the kinds of job, enqueueing inside a caller's
// transaction, the in-process runner that an app keeps going, and a one-shot drain.
import { EventEmitter } from 'node:events';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Logger, run, runOnce, type LogLevel, type ParsedCronItem, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type { WorkerLiveness } from './liveness.js';
import pg from 'pg';
import { sessionDatabaseUrl } from '../config.js';
import type { Prisma } from '../generated/prisma/client.js';

/** Where graphile-worker keeps its tables and functions (its default); installed by `installJobQueue`. */
export const JOB_SCHEMA = 'graphile_worker';

/**
 * A kind of job. Its payload is always `{ "id": <row id> }`: the row (an outbox email, a reset request, an import) holds everything else, so no message body, link, token or credential is ever copied into the queue.
 * `attempts` is how often the work is tried; the job gets one attempt more, which only ever runs when the process
 * died during the last real one and records that (see `isInterruptedAttempt`).
 */
export interface JobKind {
  task: string;
  attempts: number;
}

export const JOBS = {
  /** An email_outbox row: the first attempt and up to nine retries, about 3.5 hours with graphile-worker's backoff. */
  email: { task: 'email_outbox', attempts: 10 },
  /** A password_reset_requests row: the lookup, the link and its email, in one transaction. */
  passwordReset: { task: 'password_reset_request', attempts: 6 },
  /** An imports row: its batches, resumed after the last committed one on each of up to three attempts. */
  import: { task: 'csv_import', attempts: 3 },
  /** A custom_field_definitions row: its range-and-sort index built or dropped to match (idempotent, so retried freely). */
  customFieldIndex: { task: 'custom_field_index', attempts: 5 },
} as const satisfies Record<string, JobKind>;

/** The job's key: at most one job per row, and the handle by which the console and tests find it. */
export const jobKey = (kind: JobKind, id: string) => `${kind.task}:${id}`;

/**
 * SQL queueing a job for the row whose id is the SQL expression `idSql` (a column or a parameter), whose value is the
 * job's id: for statements that insert rows and queue their jobs at once. Only constants are interpolated. Through
 * `crm_add_job`, which calls `graphile_worker.add_job` as the job queue's owner: the serving role, which row-level
 * security binds, may not write the queue's tables itself. `keepExisting`: leave a job already queued under the key
 * alone, even one in progress (graphile-worker's `unsafe_dedupe`); by default a new job replaces a waiting one.
 */
export function addJobSql(kind: JobKind, idSql: string, keepExisting = false): string {
  return (
    `crm_add_job('${kind.task}', json_build_object('id', ${idSql}), '${kind.task}:' || ${idSql}, ` +
    `${kind.attempts + 1}${keepExisting ? ", 'unsafe_dedupe'" : ''})`
  );
}

/**
 * Queues the job of one row on the caller's client: inside a transaction, the job exists exactly when the row does
 * (it commits or rolls back with it), and graphile-worker's NOTIFY wakes a worker at commit.
 */
export async function enqueueJob(client: Pick<Prisma.TransactionClient, '$executeRaw'>, kind: JobKind, id: string): Promise<void> {
  await client.$executeRaw`SELECT crm_add_job(${kind.task}::text, json_build_object('id', ${id}::uuid),
    ${jobKey(kind, id)}::text, ${kind.attempts + 1}::int)`;
}

/** The row id a job carries. */
export function rowIdOf(payload: unknown): string {
  const id = (payload as { id?: unknown } | null)?.id;
  if (typeof id !== 'string') throw new Error('job payload without a row id');
  return id;
}

/**
 * True for the extra attempt: the previous one never reported back (its process died mid-way, e.g. SIGKILL, and
 * graphile-worker released the job when its lock expired). The task records the failure instead of trying again.
 */
export const isInterruptedAttempt = (kind: JobKind, attempt: number) => attempt > kind.attempts;

/** True when a failure on this attempt may be retried: graphile-worker does so with its exponential backoff. */
export const mayRetry = (kind: JobKind, attempt: number) => attempt < kind.attempts;

/**
 * Thrown by a task after it recorded a retryable failure on its row: graphile-worker schedules the next attempt
 * (exponential backoff) and logs nothing more than a line at debug level, since the task already logged why.
 */
export class RetryLater extends Error {
  override name = 'RetryLater';
}

type Log = Pick<FastifyBaseLogger, 'error' | 'warn' | 'info' | 'debug'>;

/**
 * Completions and failures go through graphile-worker's batcher (with no delay), not its direct path: a database
 * error there reaches an error handler that stops the runner (started again below) instead of surfacing as an
 * unhandled rejection, and a stopping runner waits for them, so a drain returns with every outcome written.
 */
const RELEASE_THROUGH_BATCHER = { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } };

/** graphile-worker's log lines into the app's log: its routine chatter at debug, problems at warn and error. */
function jobLogger(log: Log, label: string): Logger {
  return new Logger((scope) => (level: LogLevel, message: string, meta?: Record<string, unknown>) => {
    const context = { jobQueue: label, ...(scope.taskIdentifier ? { task: scope.taskIdentifier } : {}) };
    const error = meta?.error;
    if (meta?.failure) {
      // A task's failure (the message's first line; the stack goes with `err`): RetryLater was logged by the task
      // itself; anything else is unexpected.
      const line = message.split('\n', 1)[0] ?? message;
      if (error instanceof RetryLater) log.debug(context, line);
      else log.warn({ ...context, err: error }, line);
    } else if (level === 'error') log.error({ ...context, ...(error ? { err: error } : {}) }, message);
    else if (level === 'warning') log.warn(context, message);
    else log.debug(context, message);
  });
}

export interface JobRunnerOptions {
  /** Names the runner in the log. */
  label: string;
  /** Proves this runner's workers alive to the other processes (and releases the jobs of dead ones). */
  liveness: WorkerLiveness;
  taskList: TaskList;
  /** Jobs run at once in this process. */
  concurrency: number;
  /** Jobs queued on a schedule, from code only (graphile-worker's cron queues each once, whatever the instances). */
  cronItems?: ParsedCronItem[];
  /**
   * Fetch (and lock) up to this many due jobs in one query and hand them to the workers from memory (graphile-worker's
   * local queue), instead of one query per job: for runners whose jobs come in bursts. Unset: one at a time.
   */
  batchSize?: number;
  /**
   * For a runner whose jobs are rare beside the others' (emails, imports): every queued job of any runner wakes every
   * runner (graphile-worker's one NOTIFY channel), and a look for jobs costs more the longer the queue of others' jobs
   * it passes over. After a look that found none, this runner waits about this long, or for QUIET_WAKE_UPS wake-ups,
   * before looking again: a burst of another runner's jobs does not make it look once per job.
   */
  quietMs?: number;
}

/** How many wake-ups at most (a random number up to it, per quiet spell) end a quiet runner's wait early. */
const QUIET_WAKE_UPS = 20;
/** How long a quiet runner keeps a fetched job it has no free worker for. */
const QUIET_TTL_MS = 1_000;

/** graphile-worker's settings of a runner: batched completions, and its local queue when it batches or keeps quiet. */
function runnerPreset(options: JobRunnerOptions, pollInterval: number) {
  const { batchSize, quietMs, concurrency } = options;
  if (!batchSize && !quietMs) return RELEASE_THROUGH_BATCHER;
  const localQueue = quietMs
    ? {
        size: Math.max(2, batchSize ?? concurrency),
        refetchDelay: { durationMs: Math.min(quietMs, pollInterval), maxAbortThreshold: QUIET_WAKE_UPS },
        // A job fetched beside a running one (an import behind an import) goes back within a second, for another process.
        ttl: QUIET_TTL_MS,
      }
    : { size: batchSize as number };
  return { worker: { ...RELEASE_THROUGH_BATCHER.worker, localQueue } };
}

/** How long after an unexpected stop (e.g. the database went away mid-job) a runner is started again. */
const RESTART_DELAY_MS = 5_000;
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * Runs the tasks in this process while the app is up, on a pool of its own (its LISTEN connection and job fetches
 * never wait behind requests): from `onReady`, woken by LISTEN/NOTIFY, polling every OUTBOX_POLL_INTERVAL_MS only
 * for retries that came due. graphile-worker stops a runner whose connection failed while it released a job; it
 * is started again after a pause. On close it stops taking jobs and waits for those in progress (SIGTERM drains).
 */
export function keepJobRunner(app: FastifyInstance, options: JobRunnerOptions): void {
  const { label, taskList, concurrency, liveness } = options;
  const events: WorkerEvents = new EventEmitter();
  // graphile-worker locks jobs in the name of the worker pool (`locked_by` = the pool's id).
  events.on('pool:create', ({ workerPool }) => {
    liveness.hold(workerPool.id).catch((error: unknown) => app.log.warn({ err: error, jobQueue: label }, 'worker liveness lock failed'));
  });
  events.on('pool:release', ({ workerPool }) => {
    liveness.release(workerPool.id).catch(() => {});
  });
  let runner: Runner | undefined;
  let starting: Promise<void> | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let closing = false;
  const pool = new pg.Pool({
    // LISTEN/NOTIFY and graphile-worker's locks need sessions: PostgreSQL itself, never a transaction pooler.
    connectionString: sessionDatabaseUrl(app.config),
    max: concurrency + 2,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // A connection lost while idle or in use must not crash the process; graphile-worker reconnects.
  pool.on('error', (error) => app.log.warn({ err: error, jobQueue: label }, 'idle job queue connection failed'));
  pool.on('connect', (client) => client.on('error', () => {}));

  const restartLater = () => {
    if (closing) return;
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => void start(), RESTART_DELAY_MS);
  };
  const start = () => {
    starting = (async () => {
      try {
        const started = await run({
          pgPool: pool,
          taskList,
          concurrency,
          pollInterval: app.config.outboxPollIntervalMs,
          noHandleSignals: true,
          // The schedule comes from the code only: no crontab file next to the process may add any.
          parsedCronItems: options.cronItems ?? [],
          preset: runnerPreset(options, app.config.outboxPollIntervalMs),
          logger: jobLogger(app.log, label),
          events,
        });
        runner = started;
        started.promise.then(
          () => {
            if (!closing) app.log.warn({ jobQueue: label }, 'job runner stopped; starting it again');
            restartLater();
          },
          (error: unknown) => {
            app.log.error({ err: error, jobQueue: label }, 'job runner failed; starting it again');
            restartLater();
          },
        );
      } catch (error) {
        app.log.error({ err: error, jobQueue: label }, 'job runner could not start; trying again');
        restartLater();
      }
    })().finally(() => {
      starting = undefined;
    });
  };

  app.addHook('onReady', async () => {
    start();
  });
  app.addHook('preClose', async () => {
    closing = true;
    clearTimeout(restartTimer);
    await starting;
    await runner?.stop().catch(() => {});
    await pool.end();
  });
}

/**
 * Runs every job of `taskList` that is due now, one at a time, then returns how many ran: for tests that drive
 * the queue step by step, and for draining a database by hand. Jobs locked by a live runner are left to it.
 */
export async function runDueJobs(connectionString: string, taskList: TaskList, log?: Log): Promise<number> {
  const events = new EventEmitter();
  let ran = 0;
  events.on('job:start', () => {
    ran += 1;
  });
  const quiet = { error() {}, warn() {}, info() {}, debug() {} };
  await runOnce({
    connectionString,
    taskList,
    noHandleSignals: true,
    preset: RELEASE_THROUGH_BATCHER,
    events,
    logger: jobLogger(log ?? quiet, 'run once'),
  });
  return ran;
}
