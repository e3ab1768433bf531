// The automation worker's step: claims due runs (safe with several instances), executes them, records or retries.
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { retryDelayMs } from '../email/outbox.js';
import type { EventPayload } from './dispatch.js';
import { executeAction, type ActionDeps, type ActionOutcome } from './run-executor.js';

/** Attempts per run: the first, then retries of transient failures after about 10 s and 40 s; then `failed`. */
const MAX_ATTEMPTS = 3;
/** Far longer than an action can take (webhook 5 s, SMTP 10 s per phase): a run held longer was lost by its worker. */
const LEASE_MS = 120_000;
const BATCH = 10;

interface ClaimedRun {
  id: string;
  organization_id: string;
  automation_id: string;
  payload: EventPayload;
  attempts: number;
}

/** Final or retry fields of a run after an attempt; `attempts` counts the one just made. */
function outcomeFields(outcome: ActionOutcome, attempts: number, now: Date): Prisma.AutomationRunUncheckedUpdateManyInput {
  if (outcome.status === 'success') return { status: 'success', errorMessage: null, finishedAt: now, lockedUntil: null };
  if (outcome.status === 'skipped') return { status: 'skipped', errorMessage: outcome.errorMessage, finishedAt: now, lockedUntil: null };
  if (outcome.retryable && attempts < MAX_ATTEMPTS) {
    // The last error stays visible while the run waits for its next attempt.
    return {
      status: 'queued',
      errorMessage: outcome.errorMessage,
      nextAttemptAt: new Date(now.getTime() + retryDelayMs(attempts)),
      lockedUntil: null,
    };
  }
  return { status: 'failed', errorMessage: outcome.errorMessage, finishedAt: now, lockedUntil: null };
}

async function processRun(db: Db, deps: ActionDeps, run: ClaimedRun): Promise<void> {
  // Always by (organization, id): a run can only ever execute a rule of its own organization.
  const automation = await db.automation.findUnique({
    where: { organizationId_id: { organizationId: run.organization_id, id: run.automation_id } },
  });
  if (!automation) return; // deleted together with its organization since the claim; so is the run
  const outcome: ActionOutcome =
    run.attempts > MAX_ATTEMPTS
      ? { status: 'failed', errorMessage: 'The run was interrupted too often (its worker stopped while executing it).', retryable: false }
      : await executeAction(automation, run.id, run.payload, deps);
  if (outcome.status === 'failed') {
    deps.log.warn(
      { runId: run.id, automationId: automation.id, attempts: run.attempts, reason: outcome.errorMessage },
      'automation run failed',
    );
  }
  // Fenced by `attempts`: when this worker's lease ran out and another worker claimed the run, this result is dropped.
  await db.automationRun.updateMany({
    where: { id: run.id, status: 'running', attempts: run.attempts },
    data: outcomeFields(outcome, run.attempts, new Date()),
  });
}

/**
 * Claims due runs with FOR UPDATE SKIP LOCKED and a lease (`locked_until`), so instances never share a run and a
 * crashed worker's runs come back once the lease expires; executes them concurrently. Returns how many it claimed.
 */
export async function processRunBatch(db: Db, deps: ActionDeps): Promise<number> {
  const runs = await db.$queryRaw<ClaimedRun[]>`
    UPDATE automation_runs
    SET status = 'running', attempts = attempts + 1, started_at = now(),
        locked_until = now() + ${LEASE_MS} * interval '1 millisecond'
    WHERE id IN (
      SELECT id FROM automation_runs
      WHERE (status = 'queued' AND next_attempt_at <= now()) OR (status = 'running' AND locked_until <= now())
      ORDER BY next_attempt_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED
    )
    RETURNING id, organization_id, automation_id, payload, attempts`;
  const results = await Promise.allSettled(runs.map((run) => processRun(db, deps, run)));
  for (const result of results) {
    if (result.status === 'rejected') deps.log.error({ err: result.reason }, 'automation run could not be recorded');
  }
  return runs.length;
}
