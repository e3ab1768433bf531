// The kanban order of deals: the positions of one stage's active deals are 0, 1, 2, … without gaps. Every change of a
// stage's membership or order takes that stage's transaction-scoped advisory lock first (stages in one fixed order,
// so two moves between the same stages cannot deadlock), then renumbers the stage in one statement: concurrent
// moves take turns and each sees the order the previous one left. A gap left by a cascade (a deleted company) closes
// at the next change of its stage.
import type { TenantTx } from '../../db/tenant-scope.js';
import { DEAL_STAGES, type DealStage } from './schemas.js';

/** Takes the advisory locks of `stages` (deduplicated, in board order) for the rest of the transaction. */
export async function lockStages(tx: TenantTx, organizationId: string, stages: DealStage[]): Promise<void> {
  for (const stage of DEAL_STAGES.filter((s) => stages.includes(s))) {
    await tx.$executeRaw`SELECT 1 FROM (SELECT pg_advisory_xact_lock(${stageLockKey(organizationId, stage)})) AS locked`;
  }
}

/** The advisory lock key of one stage of one workspace (what a test holds from a second connection). */
export function stageLockKey(organizationId: string, stage: DealStage): bigint {
  // FNV-1a, 64 bits: a stable key in the process, so tests and the service agree without a database round trip.
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(`deals:${organizationId}:${stage}`)) {
    hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  }
  return BigInt.asIntN(64, hash);
}

/**
 * Renumbers the active deals of `stage` other than `except` as 0, 1, 2, … in their current order, leaving place
 * `gapAt` free when given (where `except` goes). Only rows whose position changes are written, and they get a new
 * version (`updated_at`, strictly later: their ETag changes with the `position` they show). Answers how many deals the
 * stage holds besides `except`. Call with the stage's lock held.
 */
export async function renumberStage(
  tx: TenantTx,
  organizationId: string,
  stage: DealStage,
  except: string | null,
  gapAt: number | null,
): Promise<number> {
  const rows = await tx.$queryRaw<{ count: number }[]>`
    WITH ordered AS (
      SELECT id, position, (row_number() OVER (ORDER BY position NULLS LAST, created_at, id) - 1)::int AS place
      FROM deals
      WHERE organization_id = ${organizationId}::uuid AND stage = ${stage}::deal_stage AND archived_at IS NULL
        AND id IS DISTINCT FROM ${except}::uuid
    ), renumbered AS (
      UPDATE deals d SET position = o.place + CASE WHEN o.place >= ${gapAt}::int THEN 1 ELSE 0 END,
        updated_at = greatest(now(), d.updated_at + interval '1 millisecond')
      FROM ordered o
      WHERE d.id = o.id AND d.organization_id = ${organizationId}::uuid
        AND d.position IS DISTINCT FROM o.place + CASE WHEN o.place >= ${gapAt}::int THEN 1 ELSE 0 END
      RETURNING d.id
    )
    SELECT (SELECT count(*) FROM ordered)::int AS count, (SELECT count(*) FROM renumbered)::int AS written`;
  return rows[0]?.count ?? 0;
}
