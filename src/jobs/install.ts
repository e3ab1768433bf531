// Installs or upgrades the job queue's schema (graphile-worker's own migrations, shipped inside the npm package,
// so offline) and gives every row still waiting for work its job; runs after our migrations, before the app serves.
import { Logger, runMigrations } from 'graphile-worker';
import pg from 'pg';
import { addJobSql, JOB_SCHEMA, JOBS, type JobKind } from './queue.js';

/** The task under which versions before the run dispatcher queued each automation run (`automation_run:<id>`). */
const LEGACY_RUN_TASK = 'automation_run';

/** Rows that are waiting for a job, per kind: what `installJobQueue` gives a job when it has none. */
const WAITING: Array<{ kind: JobKind; table: string; where: string }> = [
  { kind: JOBS.email, table: 'email_outbox', where: `status = 'pending'` },
  { kind: JOBS.passwordReset, table: 'password_reset_requests', where: 'true' },
];

/**
 * Applies graphile-worker's migrations to the database (safe to run concurrently and again: it records them in
 * `graphile_worker.migrations`), then queues a job for every waiting row without one: rows written before the job
 * queue existed (an upgrade) or whose job was removed by hand. `unsafe_dedupe` leaves an existing job alone, even
 * one being worked on, so a running delivery is never doubled. Returns how many jobs it queued.
 */
export async function installJobQueue(connectionString: string, log: (msg: string) => void = () => {}): Promise<number> {
  await runMigrations({
    connectionString,
    maxPoolSize: 2,
    logger: new Logger(() => (level, message) => {
      if (level === 'error' || level === 'warning') log(`job queue: ${message}`);
    }),
  });
  const client = new pg.Client({ connectionString });
  client.on('error', () => {});
  await client.connect();
  try {
    let queued = 0;
    for (const { kind, table, where } of WAITING) {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(${addJobSql(kind, 'w.id', true)})::int AS n
         FROM ${table} w
         WHERE ${where} AND NOT EXISTS (SELECT 1 FROM ${JOB_SCHEMA}.jobs j WHERE j.key = '${kind.task}:' || w.id)`,
      );
      queued += rows[0]?.n ?? 0;
    }
    if (queued > 0) log(`job queue: queued ${queued} waiting row(s)`);
    // Automation runs are claimed from automation_runs itself now: the jobs an older version queued for them go.
    const { rows: removed } = await client.query<{ n: number }>(
      `SELECT count(${JOB_SCHEMA}.remove_job(key))::int AS n FROM ${JOB_SCHEMA}.jobs WHERE task_identifier = '${LEGACY_RUN_TASK}'`,
    );
    if ((removed[0]?.n ?? 0) > 0) log(`job queue: removed ${removed[0]?.n} job(s) of automation runs, now claimed from their table`);
    return queued;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whether the job queue's schema is installed (readiness: without it no email or run could be queued). */
export async function jobQueueInstalled(client: Pick<pg.Pool, 'query'>): Promise<boolean> {
  const { rows } = await client.query<{ installed: boolean }>(
    `SELECT to_regprocedure('${JOB_SCHEMA}.add_job(text, json, text, timestamptz, integer, text, integer, text[], text)')
       IS NOT NULL AS installed`,
  );
  return rows[0]?.installed === true;
}
