// Deals of one organization: list with filters, create, read, update, delete, archive and restore, kanban moves
// (see board.ts) and the pipeline summary. Money is PostgreSQL numeric end to end: the API's decimal strings go in
// as they are, net/tax/gross are generated columns, sums are numeric sums, and answers print them as strings.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { TenantTx } from '../../db/tenant-scope.js';
import type { ActivityActor } from '../../db/tenant-writes.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { isUuid } from '../../lib/http-schemas.js';
import { afterPosition, newestFirst, type PageRequest } from '../../lib/pagination.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { archivedCondition } from '../../records/archive-schemas.js';
import { moved, recordAttachments, UNATTACHED } from '../../records/attachments.js';
import { checkReferences, writeReferencing as write } from '../../records/references.js';
import { lockStages, renumberStage } from './board.js';
import {
  DEAL_STAGES,
  DEFAULT_CURRENCY,
  type DealCreate,
  type DealDto,
  type DealListQuery,
  type DealMove,
  type DealPipelineStage,
  type DealStage,
  type DealUpdate,
} from './schemas.js';

type DealRow = Prisma.DealGetPayload<object>;

const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

const money = (value: Prisma.Decimal | null) => (value ?? 0).toFixed(2);

export function toDealDto(deal: DealRow): DealDto {
  return {
    id: deal.id,
    title: deal.title,
    company_id: deal.companyId,
    contact_id: deal.contactId,
    assigned_to: deal.assignedTo,
    value: money(deal.value),
    currency: deal.currency,
    tax_rate: money(deal.taxRate),
    amount_includes_tax: deal.amountIncludesTax,
    net_value: money(deal.netValue),
    tax_value: money(deal.taxValue),
    gross_value: money(deal.grossValue),
    probability: deal.probability,
    stage: deal.stage,
    position: deal.position,
    expected_close_date: deal.expectedCloseDate?.toISOString().slice(0, 10) ?? null,
    lost_reason: deal.lostReason,
    notes: deal.notes,
    archived_at: deal.archivedAt?.toISOString() ?? null,
    created_at: deal.createdAt.toISOString(),
    updated_at: deal.updatedAt.toISOString(),
  };
}

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
      data: { ...toDealDto(moved), previous_stage: deal.stage },
    });
  }
  return moved;
}

export function list(tenant: Tenant, query: DealListQuery, page: PageRequest): Promise<DealDto[]> {
  return tenant.db.deal
    .findMany({
      where: {
        stage: query.stage,
        companyId: query.company_id,
        assignedTo: query.assigned_to,
        ...archivedCondition(query.archived),
        ...afterPosition(page.after),
      },
      orderBy: newestFirst,
      take: page.limit + 1,
    })
    .then((rows) => rows.map(toDealDto));
}

export async function get(tenant: Tenant, id: string): Promise<DealDto> {
  const deal = isUuid(id) ? await tenant.db.deal.findFirst({ where: { id } }) : null;
  if (!deal) throw dealNotFound();
  return toDealDto(deal);
}

/** A new deal goes last in its stage (default `lead`); its company's (and contact's) timeline gets `deal_attached`. */
export async function create(tenant: Tenant, actor: ActivityActor, body: DealCreate): Promise<DealDto> {
  const stage = body.stage ?? 'lead';
  if (stage === 'lost' && !body.lost_reason) throw lostReasonRequired();
  const organizationId = tenant.organization.id;
  const columns = columnsOf(body);
  const id = randomUUID();
  const deal = await write(tenant, async (tx) => {
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
      },
    });
  });
  return toDealDto(deal);
}

/**
 * Partial; a changed stage puts the deal last in the new one and dispatches `deal.stage_changed`; a changed company or
 * contact adds `deal_detached` and `deal_attached` to the timelines it leaves and joins. With `expected` (an If-Match),
 * only a deal still at one of those versions changes: 412 otherwise, with nothing written.
 */
export async function update(
  tenant: Tenant,
  actor: ActivityActor,
  id: string,
  body: DealUpdate,
  expected?: ExpectedVersions,
): Promise<DealDto> {
  const organizationId = tenant.organization.id;
  const columns = columnsOf(body);
  const deal = await write(tenant, async (tx) => {
    await checkReferences(tx, body);
    const current = await lockDeal(tx, organizationId, id, body.stage, expected);
    await recordAttachments(tx, { organizationId, actor, type: 'deal', id: current.id, ...moved(current, body) });
    const stage = body.stage ?? current.stage;
    const lostReason = body.lost_reason === undefined ? current.lostReason : body.lost_reason;
    if (stage === 'lost' && !lostReason) throw lostReasonRequired();
    if (stage === current.stage || current.archivedAt !== null) {
      return tx.deal.update({ where: { id: current.id }, data: versioned(current, { ...columns, stage }) });
    }
    return place(tx, organizationId, current, stage, null, columns);
  });
  return toDealDto(deal);
}

/**
 * The kanban move: the deal goes to `position` of `stage`; the places of both stages stay 0, 1, 2, … With `expected`
 * (an If-Match), only a deal still at one of those versions moves: 412 otherwise.
 */
export async function move(tenant: Tenant, id: string, body: DealMove, expected?: ExpectedVersions): Promise<DealDto> {
  const organizationId = tenant.organization.id;
  const deal = await write(tenant, async (tx) => {
    const current = await lockDeal(tx, organizationId, id, body.stage, expected);
    if (current.archivedAt !== null) throw validationFailed({ stage: ['An archived deal is not on the board: restore it first.'] });
    const lostReason = body.lost_reason ?? current.lostReason;
    if (body.stage === 'lost' && !lostReason) throw lostReasonRequired();
    return place(tx, organizationId, current, body.stage, body.position, { lostReason });
  });
  return toDealDto(deal);
}

/** Deletes the deal (with `expected`, an If-Match, only at one of those versions: 412 otherwise); its stage closes the gap. */
export async function remove(tenant: Tenant, id: string, expected?: ExpectedVersions): Promise<void> {
  const organizationId = tenant.organization.id;
  await write(tenant, async (tx) => {
    const current = await lockDeal(tx, organizationId, id, undefined, expected);
    await tx.deal.delete({ where: { id: current.id } });
    if (current.archivedAt === null) await renumberStage(tx, organizationId, current.stage, null, null);
  });
}

/**
 * Archiving takes the deal off the board (its stage closes the gap); restoring puts it last in its stage. With
 * `expected` (an If-Match), only a deal at one of those versions: 412 otherwise, even when nothing would change.
 */
export async function setArchived(tenant: Tenant, id: string, archived: boolean, expected?: ExpectedVersions): Promise<DealDto> {
  const organizationId = tenant.organization.id;
  const deal = await write(tenant, async (tx) => {
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
  return toDealDto(deal);
}

/** Every stage in board order: its active deals' count and, per currency, the sums (kept by a trigger: see the migration). */
export async function pipeline(tenant: Tenant): Promise<DealPipelineStage[]> {
  const rows = await tenant.db.$queryRaw<{ stage: DealStage; currency: string; count: number; net: string; gross: string }[]>`
    SELECT stage::text AS stage, currency, count, round(net_value, 2)::text AS net, round(gross_value, 2)::text AS gross
    FROM deal_pipeline_totals
    WHERE organization_id = ${tenant.organization.id}::uuid AND count > 0
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
