// Deals of one organization: the deal's own rules on top of the record kernel (record.ts: lists, reads, sync, export):
// create, update, delete, archive and restore with the board's positions, kanban moves (see board.ts) and the pipeline
// summary. Money is PostgreSQL numeric end to end: the API's decimal strings go in
// as they are, net/tax/gross are generated columns, sums are numeric sums, and answers print them as strings.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { isUuid } from '../../lib/http-schemas.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { moved, recordAttachments, UNATTACHED } from '../../records/attachments.js';
import { recordService, type CrmScope } from '../../records/record-service.js';
import { checkReferences, writeReferencing as write } from '../../records/references.js';
import { customFieldsOf, mergeCustomValues, withCustomFields } from '../../records/custom-fields/values.js';
import { lockStages, renumberStage } from './board.js';
import { dealRecord, toDealDto, type DealRow } from './record.js';
import {
  DEAL_STAGES,
  DEFAULT_CURRENCY,
  type DealCreate,
  type DealDto,
  type DealMove,
  type DealPipelineStage,
  type DealStage,
  type DealUpdate,
} from './schemas.js';

const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

const dealNotFound = () => notFound('Deal not found.', 'deal_not_found');
const lostReasonRequired = () => validationFailed({ lost_reason: ['Required when the stage is lost.'] });

/** The columns of a body's plain fields (references and stage are handled by the callers). */
function columnsOf(body: DealUpdate): Prisma.DealUncheckedUpdateInput {
  if (body.currency !== undefined && !CURRENCIES.has(body.currency)) {
    throw validationFailed({ currency: ['Not an ISO 4217 currency code.'] });
  }
  return {
    title: body.title,
    companyId: body.company_id,
    contactId: body.contact_id,
    assignedTo: body.assigned_to,
    value: body.value,
    currency: body.currency,
    taxRate: body.tax_rate,
    amountIncludesTax: body.amount_includes_tax,
    probability: body.probability,
    expectedCloseDate: body.expected_close_date === undefined ? undefined : body.expected_close_date && new Date(body.expected_close_date),
    lostReason: body.lost_reason,
    notes: body.notes,
  };
}

/**
 * The deal, its row locked for the transaction, with its stage's lock (and `target`'s) held: 404 when absent, 412 when
 * it is not at a version `expected` (an If-Match) names.
 */
async function lockDeal(
  tx: TenantTx,
  organizationId: string,
  id: string,
  target?: DealStage,
  expected?: ExpectedVersions,
): Promise<DealRow> {
  for (;;) {
    const seen = isUuid(id) ? await tx.deal.findFirst({ select: { stage: true }, where: { id } }) : null;
    if (!seen) throw dealNotFound();
    await lockStages(tx, organizationId, target ? [seen.stage, target] : [seen.stage]);
    await tx.$executeRaw`SELECT 1 FROM deals WHERE organization_id = ${organizationId}::uuid AND id = ${id}::uuid FOR UPDATE`;
    const deal = await tx.deal.findFirst({ where: { id } });
    if (!deal) throw dealNotFound();
    // A concurrent move changed the stage before the locks were ours: lock the stage it is in now.
    if (deal.stage !== seen.stage) continue;
    if (!versionMatches(expected, deal.updatedAt)) throw changedSince();
    return deal;
  }
}

/** The changes of the locked `deal` with its next version (its `updated_at`, the ETag). */
const versioned = (deal: DealRow, changes: Prisma.DealUncheckedUpdateInput): Prisma.DealUncheckedUpdateInput => ({
  ...changes,
  updatedAt: nextVersion(deal.updatedAt),
});

/** The deal as the API shows it, its custom fields included. */
const shown = (scope: CrmScope, deal: DealRow) => customFieldsOf(scope, 'deal').show(toDealDto(deal));

/**
 * Puts the locked `deal` at `position` of `stage` (clamped to the stage's end), closing its place in the stage it
 * leaves; queues `deal.stage_changed` when the stage changes. Answers the deal as stored.
 */
async function place(
  tx: TenantTx,
  organizationId: string,
  deal: DealRow,
  stage: DealStage,
  position: number | null,
  changes: Prisma.DealUncheckedUpdateInput = {},
): Promise<DealRow> {
  if (deal.stage !== stage && deal.archivedAt === null) await renumberStage(tx, organizationId, deal.stage, deal.id, null);
  const others = await renumberStage(tx, organizationId, stage, deal.id, position);
  const moved = await tx.deal.update({
    where: { id: deal.id },
    data: versioned(deal, { ...changes, stage, position: Math.min(position ?? others, others) }),
  });
  if (moved.stage !== deal.stage) {
    await dispatchEvent(tx, {
      organizationId,
      name: 'deal.stage_changed',
      data: { ...(await withCustomFields(tx, 'deal', toDealDto(moved))), previous_stage: deal.stage },
    });
  }
  return moved;
}

/** A new deal goes last in its stage (default `lead`); its company's (and contact's) timeline gets `deal_attached`. */
async function create(scope: CrmScope, body: DealCreate): Promise<DealDto> {
  const { actor } = scope;
  const stage = body.stage ?? 'lead';
  if (stage === 'lost' && !body.lost_reason) throw lostReasonRequired();
  const { organizationId } = scope;
  const columns = columnsOf(body);
  const customFields = (await customFieldsOf(scope, 'deal').check(body.custom_fields, true)) as Prisma.InputJsonObject;
  const id = randomUUID();
  const deal = await write(scope, async (tx) => {
    await checkReferences(tx, body);
    await lockStages(tx, organizationId, [stage]);
    const position = await renumberStage(tx, organizationId, stage, null, null);
    const after = { companyId: body.company_id, contactId: body.contact_id ?? null };
    await recordAttachments(tx, { organizationId, actor, type: 'deal', id, before: UNATTACHED, after });
    return tx.deal.create({
      data: {
        ...(columns as Prisma.DealUncheckedCreateInput),
        id,
        organizationId,
        currency: body.currency ?? DEFAULT_CURRENCY,
        stage,
        position,
        customFields,
      },
    });
  });
  return shown(scope, deal);
}

/**
 * Partial; a changed stage puts the deal last in the new one and dispatches `deal.stage_changed`; a changed company or
 * contact adds `deal_detached` and `deal_attached` to the timelines it leaves and joins. With `expected` (an If-Match),
 * only a deal still at one of those versions changes: 412 otherwise, with nothing written.
 */
async function update(scope: CrmScope, id: string, body: DealUpdate, expected?: ExpectedVersions): Promise<DealDto> {
  const { organizationId, actor } = scope;
  const custom = await customFieldsOf(scope, 'deal').check(body.custom_fields, false);
  const deal = await write(scope, async (tx) => {
    await checkReferences(tx, body);
    const current = await lockDeal(tx, organizationId, id, body.stage, expected);
    // The row is locked: merging in JavaScript is as safe as the kernel's merge in its statement.
    const columns = custom
      ? { ...columnsOf(body), customFields: mergeCustomValues(current.customFields, custom) as Prisma.InputJsonObject }
      : columnsOf(body);
    await recordAttachments(tx, { organizationId, actor, type: 'deal', id: current.id, ...moved(current, body) });
    const stage = body.stage ?? current.stage;
    const lostReason = body.lost_reason === undefined ? current.lostReason : body.lost_reason;
    if (stage === 'lost' && !lostReason) throw lostReasonRequired();
    if (stage === current.stage || current.archivedAt !== null) {
      return tx.deal.update({ where: { id: current.id }, data: versioned(current, { ...columns, stage }) });
    }
    return place(tx, organizationId, current, stage, null, columns);
  });
  return shown(scope, deal);
}

/**
 * The kanban move: the deal goes to `position` of `stage`; the places of both stages stay 0, 1, 2, … With `expected`
 * (an If-Match), only a deal still at one of those versions moves: 412 otherwise.
 */
async function move(scope: CrmScope, id: string, body: DealMove, expected?: ExpectedVersions): Promise<DealDto> {
  const { organizationId } = scope;
  const deal = await write(scope, async (tx) => {
    const current = await lockDeal(tx, organizationId, id, body.stage, expected);
    if (current.archivedAt !== null) throw validationFailed({ stage: ['An archived deal is not on the board: restore it first.'] });
    const lostReason = body.lost_reason ?? current.lostReason;
    if (body.stage === 'lost' && !lostReason) throw lostReasonRequired();
    return place(tx, organizationId, current, body.stage, body.position, { lostReason });
  });
  return shown(scope, deal);
}

/** Deletes the deal (with `expected`, an If-Match, only at one of those versions: 412 otherwise); its stage closes the gap. */
async function remove(scope: CrmScope, id: string, expected?: ExpectedVersions): Promise<void> {
  const { organizationId } = scope;
  await write(scope, async (tx) => {
    const current = await lockDeal(tx, organizationId, id, undefined, expected);
    await tx.deal.delete({ where: { id: current.id } });
    if (current.archivedAt === null) await renumberStage(tx, organizationId, current.stage, null, null);
  });
}

/**
 * Archiving takes the deal off the board (its stage closes the gap); restoring puts it last in its stage. With
 * `expected` (an If-Match), only a deal at one of those versions: 412 otherwise, even when nothing would change.
 */
async function setArchived(scope: CrmScope, id: string, archived: boolean, expected?: ExpectedVersions): Promise<DealDto> {
  const { organizationId } = scope;
  const deal = await write(scope, async (tx) => {
    const current = await lockDeal(tx, organizationId, id, undefined, expected);
    if ((current.archivedAt !== null) === archived) return current;
    if (archived) {
      const done = await tx.deal.update({
        where: { id: current.id },
        data: versioned(current, { archivedAt: new Date(), position: null }),
      });
      await renumberStage(tx, organizationId, current.stage, null, null);
      return done;
    }
    const position = await renumberStage(tx, organizationId, current.stage, current.id, null);
    return tx.deal.update({ where: { id: current.id }, data: versioned(current, { archivedAt: null, position }) });
  });
  return shown(scope, deal);
}

/** Every stage in board order: its active deals' count and, per currency, the sums (kept by a trigger: see the migration). */
async function pipeline(db: TenantDb, organizationId: string): Promise<DealPipelineStage[]> {
  const rows = await db.$queryRaw<{ stage: DealStage; currency: string; count: number; net: string; gross: string }[]>`
    SELECT stage::text AS stage, currency, count, round(net_value, 2)::text AS net, round(gross_value, 2)::text AS gross
    FROM deal_pipeline_totals
    WHERE organization_id = ${organizationId}::uuid AND count > 0
    ORDER BY currency`;
  return DEAL_STAGES.map((stage) => {
    const own = rows.filter((row) => row.stage === stage);
    return {
      stage,
      count: own.reduce((sum, row) => sum + row.count, 0),
      totals: own.map((row) => ({ currency: row.currency, net_value: row.net, gross_value: row.gross })),
    };
  });
}

/** Deals: the record kernel's reads, lists, syncs and exports (record.ts), with the deal's own writes and board. */
export const dealService = {
  ...recordService<DealRow, DealDto>(dealRecord),
  create,
  update,
  remove,
  archive: (scope: CrmScope, id: string, expected?: ExpectedVersions) => setArchived(scope, id, true, expected),
  restore: (scope: CrmScope, id: string, expected?: ExpectedVersions) => setArchived(scope, id, false, expected),
  move,
  pipeline,
};
