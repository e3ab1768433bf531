// The job of one automation run: executes the run's action and records the outcome; the job queue retries it. The
// runs that start (and end) together are started (and recorded) by one statement.
import type { TaskList } from 'graphile-worker';
import type { Automation } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { coalesce } from '../../jobs/coalesce.js';
import { isInterruptedAttempt, JOBS, mayRetry, RetryLater, rowIdOf } from '../../jobs/queue.js';
import type { EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionOutcome, type ActionSettings } from './run-executor.js';
import { scopeToOrganization, type TenantDb } from '../../db/tenant-scope.js';
import { conditionHolds } from './condition.js';

/** A rule as a run executes it. */
type RunRule = Pick<Automation, 'id' | 'name' | 'actionType' | 'actionConfig' | 'condition'>;

interface StartedRun {
  id: string;
  organization_id: string;
  automation_id: string;
  event_id: string | null;
  payload: EventPayload;
  attempts: number;
  /** The run's rule (of the run's organization), null once deleted. */
  rule: RunRule | null;
}

/** What an attempt leaves on its run: its status (a run waiting for its retry is `queued` with the last error). */
interface Recorded {
  id: string;
  organizationId: string;
  status: 'success' | 'skipped' | 'failed' | 'queued';
  errorMessage: string | null;
}

function recorded(run: StartedRun, outcome: ActionOutcome, retry: boolean): Recorded {
  const { id, organization_id: organizationId } = run;
  if (outcome.status === 'success') return { id, organizationId, status: 'success', errorMessage: null };
  return {
    id,
    organizationId,
    status: outcome.status === 'failed' && retry ? 'queued' : outcome.status,
    errorMessage: outcome.errorMessage,
  };
}

/**
 * Marks runs `running` with their attempt counted and answers each with its rule, in one statement for the runs that
 * start together; a run already finished (or deleted with its organization) answers undefined. Runs are found by id
 * on the installation path (the job carries only the id); the rule is read with the run's own organization.
 */
async function startRuns(db: Db, ids: string[]): Promise<Array<StartedRun | undefined>> {
  const rows = await db.$queryRaw<StartedRun[]>`
    UPDATE automation_runs r SET status = 'running', attempts = r.attempts + 1, started_at = now()
    WHERE r.id = ANY(${ids}::uuid[]) AND r.status IN ('queued', 'running')
    RETURNING r.id, r.organization_id, r.automation_id, r.event_id, r.payload, r.attempts,
      (SELECT json_build_object('id', a.id, 'name', a.name, 'actionType', a.action_type, 'actionConfig', a.action_config,
                                'condition', a.condition)
       FROM automations a WHERE a.organization_id = r.organization_id AND a.id = r.automation_id) AS rule`;
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id));
}

/** Records the outcomes of attempts that ended together, in one statement; a run no longer `running` is left alone. */
async function recordOutcomes(db: Db, outcomes: Recorded[]): Promise<undefined[]> {
  await db.$executeRaw`
    UPDATE automation_runs r
    SET status = o.status::automation_run_status, error_message = o.error_message,
        finished_at = CASE WHEN o.status = 'queued' THEN r.finished_at ELSE now() END
    FROM unnest(${outcomes.map((o) => o.id)}::uuid[], ${outcomes.map((o) => o.organizationId)}::uuid[],
                ${outcomes.map((o) => o.status)}::text[], ${outcomes.map((o) => o.errorMessage)}::text[])
      AS o(id, organization_id, status, error_message)
    WHERE r.id = o.id AND r.organization_id = o.organization_id AND r.status = 'running'`;
  return outcomes.map(() => undefined);
}

/** The rule's condition on the run's event record (see condition.ts), on the run's own organization. */
const checkRecord = (tenant: TenantDb, run: StartedRun, condition: unknown) =>
  conditionHolds(tenant, { organizationId: run.organization_id, name: run.payload.event, data: run.payload.data }, condition);

interface RunSteps {
  start: (id: string) => Promise<StartedRun | undefined>;
  record: (outcome: Recorded) => Promise<undefined>;
}

/**
 * Runs one run (graphile-worker calls it: one worker at a time holds the job, a failure is retried with its
 * backoff, a crashed worker's job is released when its lock expires). The run shows `running` with the attempt
 * counted before the action starts; a run already finished (or deleted with its organization) is left alone.
 */
async function executeRun(deps: AutomationTaskDeps, steps: RunSteps, id: string, attempt: number): Promise<void> {
  const run = await steps.start(id);
  if (!run) return;
  const { rule } = run;
  if (!rule) {
    // The rule was deleted after the run was queued: the run stays in the history, executed by nobody.
    await steps.record(recorded(run, { status: 'skipped', errorMessage: 'The rule was deleted before the run executed.' }, false));
    return;
  }
  // From here on the run's own organization is the only door: its record's company, its sending account, its ledger.
  const tenant = scopeToOrganization(deps.db, run.organization_id);
  const interrupted = isInterruptedAttempt(JOBS.automationRun, attempt);
  const verdict = rule.condition === null || interrupted ? { holds: true as const } : await checkRecord(tenant, run, rule.condition);
  const outcome: ActionOutcome = interrupted
    ? { status: 'failed', errorMessage: 'The run was interrupted too often (its worker stopped while executing it).', retryable: false }
    : !verdict.holds
      ? { status: 'skipped', errorMessage: verdict.reason }
      : await executeAction(rule, { id: run.id, deliveryId: run.event_id ?? run.id }, run.payload, { ...deps, db: tenant });
  // The error to retry after, when the failure is transient and attempts remain.
  const retryAfter =
    outcome.status === 'failed' && outcome.retryable && mayRetry(JOBS.automationRun, attempt) ? outcome.errorMessage : null;
  const retry = retryAfter !== null;
  if (outcome.status === 'failed') {
    deps.log.warn(
      { runId: run.id, automationId: rule.id, attempts: run.attempts, final: !retry, reason: outcome.errorMessage },
      'automation run failed',
    );
  }
  await steps.record(recorded(run, outcome, retry));
  if (retryAfter !== null) throw new RetryLater(retryAfter);
}

/** The worker's dependencies: the unscoped client only to start and record runs found by id, else scoped to their organization. */
export interface AutomationTaskDeps extends ActionSettings {
  db: Db;
  log: ActionDeps['log'];
}

/** The automation runs' task for the job runner (and for tests that run due jobs themselves). */
export function automationTasks(deps: AutomationTaskDeps): TaskList {
  const steps: RunSteps = {
    start: coalesce((ids: string[]) => startRuns(deps.db, ids)),
    record: coalesce((outcomes: Recorded[]) => recordOutcomes(deps.db, outcomes)),
  };
  return {
    [JOBS.automationRun.task]: (payload, helpers) => executeRun(deps, steps, rowIdOf(payload), helpers.job.attempts),
  };
}
