// The background work as tests see it: a row's job (graphile-worker's public `jobs` view), an automation run's due time
// (its own `run_at`), and moving a retry's due time to now.
import type { App } from '../../src/app.js';
import { jobKey, type JobKind } from '../../src/jobs/queue.js';
import type { AutomationTaskDeps } from '../../src/modules/automations/run-queue.js';

/** Anything that runs a parameterized query: a pg.Pool, pg.Client or the app's `app.pg`. */
export interface Sql {
  query<R extends object>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

export interface JobRow {
  id: string;
  run_at: Date;
  attempts: number;
  max_attempts: number;
  locked_at: Date | null;
  locked_by: string | null;
  last_error: string | null;
}

/** The job of a row, if there is one. */
export async function jobOf(sql: Sql, kind: JobKind, rowId: string): Promise<JobRow | undefined> {
  const { rows } = await sql.query<JobRow>(
    'SELECT id, run_at, attempts, max_attempts, locked_at, locked_by, last_error FROM graphile_worker.jobs WHERE key = $1',
    [jobKey(kind, rowId)],
  );
  return rows[0];
}

/**
 * Everything stored for a row's job, payload included. The public view leaves the payload out, so this reads
 * graphile-worker's private table: only tests do, to prove that no body, link or secret reaches the queue.
 */
export async function storedJobOf(sql: Sql, kind: JobKind, rowId: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await sql.query<Record<string, unknown>>('SELECT * FROM graphile_worker._private_jobs WHERE key = $1', [
    jobKey(kind, rowId),
  ]);
  return rows[0];
}

/**
 * What the passing of time does to a retry: the row's job becomes due now (optionally with `attempts` already
 * made), through graphile-worker's administrative `reschedule_jobs`. That skips a job still locked by the attempt
 * that just failed, so this waits until the attempt has released it; a job already done (gone) is left alone.
 */
export async function makeDue(sql: Sql, kind: JobKind, rowId: string, options: { attempts?: number } = {}, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql.query<{ rescheduled: number; present: number }>(
      `WITH r AS (SELECT id FROM graphile_worker.reschedule_jobs(
         ARRAY(SELECT id FROM graphile_worker.jobs WHERE key = $1), run_at := now(), attempts := $2::int))
       SELECT (SELECT count(*) FROM r)::int AS rescheduled, (SELECT count(*) FROM graphile_worker.jobs WHERE key = $1)::int AS present`,
      [jobKey(kind, rowId), options.attempts ?? null],
    );
    if (rows[0]!.rescheduled === 1 || rows[0]!.present === 0) return;
    if (Date.now() > deadline) throw new Error(`the job of ${rowId} stayed locked`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Takes a row's waiting job out of the queue (graphile-worker's administrative `remove_job`). */
export async function removeJob(sql: Sql, kind: JobKind, rowId: string): Promise<void> {
  await sql.query('SELECT graphile_worker.remove_job($1)', [jobKey(kind, rowId)]);
}

/** graphile-worker's delay before retry n (its exponential backoff: exp(min(n, 10)) seconds), in milliseconds. */
export const backoffMs = (attempt: number) => Math.exp(Math.min(attempt, 10)) * 1000;

/**
 * What the passing of time does to an automation run's retry: once its failed attempt is recorded (the run `queued`
 * again), it becomes due now. A run already ended is left alone.
 */
export async function makeRunDue(sql: Sql, runId: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql.query<{ status: string }>(
      `WITH due AS (UPDATE automation_runs SET run_at = now() WHERE id = $1 AND status = 'queued' RETURNING status)
       SELECT status::text FROM due UNION ALL SELECT status::text FROM automation_runs WHERE id = $1 AND status NOT IN ('queued', 'running')`,
      [runId],
    );
    if (rows.length > 0) return;
    if (Date.now() > deadline) throw new Error(`the run ${runId} stayed running`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What an automation run's execution needs of a test app, as src/workers.ts gives it (private targets allowed: local receivers). */
export const runDepsOf = (app: App, allowPrivateTargets = true): AutomationTaskDeps => ({
  db: app.db,
  encryptionKey: app.config.emailEncryptionKey,
  allowPrivateTargets,
  automationEmailsPerHour: 100,
  smtpAllowPrivate: true,
  log: app.log,
});
