// The automation runs' queue is the automation_runs table itself: the wake-up a write sends, and the statements by which
// workers claim due runs (FOR UPDATE SKIP LOCKED, with a lease), renew their leases and record outcomes and retries.
import type pg from 'pg';
import type { Automation } from '../generated/prisma/client.js';

/** The channel a write NOTIFYs (at commit) when it queued runs; every instance's run dispatcher LISTENs on it. */
export const RUNS_CHANNEL = 'automation_runs';

/**
 * SQL waking the run dispatchers when the CTE `runs` inserted any row, to append to the statement that inserts them:
 * one notification per statement however many runs (PostgreSQL folds equal ones of a transaction), none without a
 * run. A SELECT in WITH runs only when read, so the statement reads it (its value is never negative).
 */
export const WAKE_RUNS_SQL = `(SELECT count(pg_notify('${RUNS_CHANNEL}', '')) FROM (SELECT 1 FROM runs LIMIT 1) AS queued)`;

/** A run is tried this often: the first attempt and up to two retries of transient failures. */
export const RUN_ATTEMPTS = 3;

/**
 * True for an attempt past the last: the previous one never reported back (its worker died mid-way and its lease ran
 * out). That attempt records the failure instead of trying again.
 */
export const isInterruptedRun = (attempt: number) => attempt > RUN_ATTEMPTS;
/** True when a transient failure on this attempt is tried again later. */
export const mayRetryRun = (attempt: number) => attempt < RUN_ATTEMPTS;

/** The wait before attempt n + 1 after attempt n failed, in seconds: exp(min(n, 10)), graphile-worker's backoff as before. */
export const retryDelaySeconds = (attempt: number) => Math.exp(Math.min(attempt, 10));

/** A rule as a run executes it. */
export type RunRule = Pick<Automation, 'id' | 'name' | 'actionType' | 'actionConfig' | 'condition'>;

/** A run a worker claimed: marked `running` with this attempt counted, leased to the worker. */
export interface ClaimedRun {
  id: string;
  organization_id: string;
  automation_id: string;
  event_id: string | null;
  payload: unknown;
  /** This attempt's number (1 for the first): it also identifies the claim, a later claim counts one more. */
  attempts: number;
  /** The run's rule, read with the run's own organization; null once deleted. */
  rule: RunRule | null;
}

/** What an attempt leaves on its run: its status (a run waiting for its retry is `queued` with the last error). */
export interface RunOutcome {
  id: string;
  /** The attempt this outcome is of: a run claimed again meanwhile (its lease ran out) is not overwritten. */
  attempts: number;
  status: 'success' | 'skipped' | 'failed' | 'queued';
  errorMessage: string | null;
}

type Sql = Pick<pg.Pool, 'query'>;

/**
 * Claims up to `limit` due runs across workspaces, oldest due first, and answers them with their rules: queued runs
 * whose time has come and running runs whose lease ran out (their worker died). Rows another worker is claiming are
 * skipped, not waited for. Each becomes `running` with its attempt counted and a lease of `leaseSeconds`. Installation-
 * wide work: the caller's connection is the owner's (row-level security would admit no workspace's runs); the rule is
 * read by the run's own organization and id, and everything the run does after is scoped to that organization.
 */
export async function claimRuns(sql: Sql, limit: number, leaseSeconds: number): Promise<ClaimedRun[]> {
  const { rows } = await sql.query<ClaimedRun>({
    name: 'crm-claim-automation-runs',
    text: `WITH due AS (
        SELECT id FROM automation_runs
        WHERE status IN ('queued', 'running') AND run_at <= now()
        ORDER BY run_at
        LIMIT $1
        FOR UPDATE SKIP LOCKED
      )
      UPDATE automation_runs r
      SET status = 'running', attempts = r.attempts + 1, started_at = now(), run_at = now() + make_interval(secs => $2)
      FROM due WHERE r.id = due.id
      RETURNING r.id, r.organization_id, r.automation_id, r.event_id, r.payload, r.attempts,
        (SELECT json_build_object('id', a.id, 'name', a.name, 'actionType', a.action_type, 'actionConfig', a.action_config,
                                  'condition', a.condition)
         FROM automations a WHERE a.organization_id = r.organization_id AND a.id = r.automation_id) AS rule`,
    values: [limit, leaseSeconds],
  });
  return rows;
}

/**
 * Records the outcomes of attempts that ended together, in one statement. A retry becomes `queued` again, due after the
 * backoff (counted from now, after the failed attempt). A run no longer in the attempt recorded (claimed again after its
 * lease ran out, or finished) is left alone.
 */
export async function recordRunOutcomes(sql: Sql, outcomes: RunOutcome[]): Promise<void> {
  await sql.query({
    name: 'crm-record-automation-runs',
    text: `UPDATE automation_runs r
      SET status = o.status::automation_run_status, error_message = o.error_message,
          finished_at = CASE WHEN o.status = 'queued' THEN r.finished_at ELSE now() END,
          run_at = CASE WHEN o.status = 'queued' THEN now() + make_interval(secs => exp(least(r.attempts, 10)::float8)) ELSE r.run_at END
      FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]) AS o(id, attempts, status, error_message)
      WHERE r.id = o.id AND r.attempts = o.attempts AND r.status = 'running'`,
    values: [
      outcomes.map((o) => o.id),
      outcomes.map((o) => o.attempts),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.errorMessage),
    ],
  });
}

/** Extends the leases of runs a live worker holds (claimed, not yet recorded) by `leaseSeconds` from now. */
export async function renewRunLeases(sql: Sql, runs: Array<Pick<ClaimedRun, 'id' | 'attempts'>>, leaseSeconds: number): Promise<void> {
  if (runs.length === 0) return;
  await sql.query({
    name: 'crm-renew-automation-runs',
    text: `UPDATE automation_runs r SET run_at = now() + make_interval(secs => $3)
      FROM unnest($1::uuid[], $2::int[]) AS o(id, attempts)
      WHERE r.id = o.id AND r.attempts = o.attempts AND r.status = 'running'`,
    values: [runs.map((r) => r.id), runs.map((r) => r.attempts), leaseSeconds],
  });
}

/**
 * Gives back runs claimed but never started (a stopping worker): queued again, due now, their attempt not counted, so
 * that another worker takes them at once instead of after the lease.
 */
export async function releaseRuns(sql: Sql, runs: Array<Pick<ClaimedRun, 'id' | 'attempts'>>): Promise<void> {
  if (runs.length === 0) return;
  await sql.query({
    name: 'crm-release-automation-runs',
    text: `UPDATE automation_runs r
      SET status = 'queued', attempts = r.attempts - 1, run_at = now(),
          started_at = CASE WHEN r.attempts = 1 THEN NULL ELSE r.started_at END
      FROM unnest($1::uuid[], $2::int[]) AS o(id, attempts)
      WHERE r.id = o.id AND r.attempts = o.attempts AND r.status = 'running'`,
    values: [runs.map((r) => r.id), runs.map((r) => r.attempts)],
  });
}
