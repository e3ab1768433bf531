// The job of one automation run: executes the run's action and records the outcome; the job queue retries it.
import type { TaskList } from 'graphile-worker';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { isInterruptedAttempt, JOBS, mayRetry, RetryLater, rowIdOf } from '../../jobs/queue.js';
import type { EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionOutcome, type ActionSettings } from './run-executor.js';
import { scopeToOrganization, type TenantDb } from '../../db/tenant-scope.js';
import { conditionHolds } from './condition.js';

interface StartedRun {
  id: string;
  organization_id: string;
  automation_id: string;
  event_id: string | null;
  payload: EventPayload;
  attempts: number;
}

/** Final or waiting fields of a run after an attempt; a run waiting for its retry is `queued` with the last error. */
function outcomeFields(outcome: ActionOutcome, retry: boolean, now: Date): Prisma.AutomationRunUncheckedUpdateManyInput {
  if (outcome.status === 'success') return { status: 'success', errorMessage: null, finishedAt: now };
  if (outcome.status === 'skipped') return { status: 'skipped', errorMessage: outcome.errorMessage, finishedAt: now };
  if (retry) return { status: 'queued', errorMessage: outcome.errorMessage };
  return { status: 'failed', errorMessage: outcome.errorMessage, finishedAt: now };
}

/** The rule's condition on the run's event record (see condition.ts), on the run's own organization. */
const checkRecord = (tenant: TenantDb, run: StartedRun, condition: unknown) =>
  conditionHolds(tenant, { organizationId: run.organization_id, name: run.payload.event, data: run.payload.data }, condition);

/**
 * Runs one run (graphile-worker calls it: one worker at a time holds the job, a failure is retried with its
 * backoff, a crashed worker's job is released when its lock expires). The run shows `running` with the attempt
 * counted before the action starts; a run already finished (or deleted with its organization) is left alone.
 */
async function executeRun(deps: AutomationTaskDeps, id: string, attempt: number): Promise<void> {
  const { db } = deps;
  const [run] = await db.$queryRaw<StartedRun[]>`
    UPDATE automation_runs SET status = 'running', attempts = attempts + 1, started_at = now()
    WHERE id = ${id}::uuid AND status IN ('queued', 'running')
    RETURNING id, organization_id, automation_id, event_id, payload, attempts`;
  if (!run) return;
  // From here on the run's own organization is the only door: its rule, its sending account, its ledger.
  const tenant = scopeToOrganization(db, run.organization_id);
  const automation = await tenant.automation.findUnique({ where: { id: run.automation_id } });
  if (!automation) {
    // The rule was deleted after the run was queued: the run stays in the history, executed by nobody.
    const skipped: ActionOutcome = { status: 'skipped', errorMessage: 'The rule was deleted before the run executed.' };
    await tenant.automationRun.updateMany({ where: { id: run.id, status: 'running' }, data: outcomeFields(skipped, false, new Date()) });
    return;
  }
  const interrupted = isInterruptedAttempt(JOBS.automationRun, attempt);
  const verdict = automation.condition === null || interrupted ? { holds: true as const } : await checkRecord(tenant, run, automation.condition);
  const outcome: ActionOutcome = interrupted
    ? { status: 'failed', errorMessage: 'The run was interrupted too often (its worker stopped while executing it).', retryable: false }
    : !verdict.holds
      ? { status: 'skipped', errorMessage: verdict.reason }
      : await executeAction(automation, { id: run.id, deliveryId: run.event_id ?? run.id }, run.payload, { ...deps, db: tenant });
  // The error to retry after, when the failure is transient and attempts remain.
  const retryAfter =
    outcome.status === 'failed' && outcome.retryable && mayRetry(JOBS.automationRun, attempt) ? outcome.errorMessage : null;
  const retry = retryAfter !== null;
  if (outcome.status === 'failed') {
    deps.log.warn(
      { runId: run.id, automationId: automation.id, attempts: run.attempts, final: !retry, reason: outcome.errorMessage },
      'automation run failed',
    );
  }
  await tenant.automationRun.updateMany({ where: { id: run.id, status: 'running' }, data: outcomeFields(outcome, retry, new Date()) });
  if (retryAfter !== null) throw new RetryLater(retryAfter);
}

/** The worker's dependencies: the unscoped client only to start a run found by its id, then scoped to its organization. */
export interface AutomationTaskDeps extends ActionSettings {
  db: Db;
  log: ActionDeps['log'];
}

/** The automation runs' task for the job runner (and for tests that run due jobs themselves). */
export const automationTasks = (deps: AutomationTaskDeps): TaskList => ({
  [JOBS.automationRun.task]: (payload, helpers) => executeRun(deps, rowIdOf(payload), helpers.job.attempts),
});
