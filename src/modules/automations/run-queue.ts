// One attempt of a claimed automation run: its rule, its condition and its action on the run's own organization, reduced
// to the outcome the dispatcher records (and whether it is retried); and a one-shot drain of the due runs.
import type { Db } from '../../db/client.js';
import {
  claimRuns,
  isInterruptedRun,
  mayRetryRun,
  recordRunOutcomes,
  type ClaimedRun,
  type RunOutcome,
} from '../../jobs/automation-runs.js';
import type pg from 'pg';
import type { EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionOutcome, type ActionSettings } from './run-executor.js';
import { scopeToOrganization, type TenantDb } from '../../db/tenant-scope.js';
import { conditionHolds } from './condition.js';

/** The worker's dependencies: the owner's client only to reach the run's organization, then scoped to it. */
export interface AutomationTaskDeps extends ActionSettings {
  db: Db;
  log: ActionDeps['log'];
}

const outcomeOf = (run: ClaimedRun, outcome: ActionOutcome, retry: boolean): RunOutcome => {
  const { id, attempts } = run;
  if (outcome.status === 'success') return { id, attempts, status: 'success', errorMessage: null };
  return { id, attempts, status: outcome.status === 'failed' && retry ? 'queued' : outcome.status, errorMessage: outcome.errorMessage };
};

/** The rule's condition on the run's event record (see condition.ts), on the run's own organization. */
const checkRecord = (tenant: TenantDb, run: ClaimedRun, payload: EventPayload, condition: unknown) =>
  conditionHolds(tenant, { organizationId: run.organization_id, name: payload.event, data: payload.data }, condition);

/**
 * Executes one claimed attempt of a run (the claim marked it `running` with the attempt counted) and answers what to
 * record: `queued` again when a transient failure may be retried (the dispatcher schedules it after the backoff). A
 * rule deleted since the run was queued skips it; an attempt past the last (the one before was interrupted) fails it.
 */
export async function executeRun(deps: AutomationTaskDeps, run: ClaimedRun): Promise<RunOutcome> {
  const { rule } = run;
  const payload = run.payload as EventPayload;
  // The run stays in the history, executed by nobody.
  if (!rule) return outcomeOf(run, { status: 'skipped', errorMessage: 'The rule was deleted before the run executed.' }, false);
  // From here on the run's own organization is the only door: its record's company, its sending account, its ledger.
  const tenant = scopeToOrganization(deps.db, run.organization_id);
  const interrupted = isInterruptedRun(run.attempts);
  const verdict =
    rule.condition === null || interrupted ? { holds: true as const } : await checkRecord(tenant, run, payload, rule.condition);
  const outcome: ActionOutcome = interrupted
    ? { status: 'failed', errorMessage: 'The run was interrupted too often (its worker stopped while executing it).', retryable: false }
    : !verdict.holds
      ? { status: 'skipped', errorMessage: verdict.reason }
      : await executeAction(rule, { id: run.id, deliveryId: run.event_id ?? run.id }, payload, { ...deps, db: tenant });
  const retry = outcome.status === 'failed' && outcome.retryable && mayRetryRun(run.attempts);
  if (outcome.status === 'failed') {
    deps.log.warn(
      { runId: run.id, automationId: rule.id, attempts: run.attempts, final: !retry, reason: outcome.errorMessage },
      'automation run failed',
    );
  }
  return outcomeOf(run, outcome, retry);
}

/**
 * Executes every run due now, a batch at a time, one after the other, and answers how many it executed: for tests
 * that drive the runs step by step and for draining a database by hand. Runs another worker holds are left to it.
 * `sql` must be the owner's (the claim spans workspaces).
 */
export async function runDueRuns(sql: Pick<pg.Pool, 'query'>, deps: AutomationTaskDeps, leaseSeconds = 60): Promise<number> {
  let executed = 0;
  for (;;) {
    const runs = await claimRuns(sql, 100, leaseSeconds);
    if (runs.length === 0) return executed;
    for (const run of runs) {
      await recordRunOutcomes(sql, [await executeRun(deps, run)]);
      executed += 1;
    }
  }
}
