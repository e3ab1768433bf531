// The deal record type: its table and API fields (money as PostgreSQL prints numeric: two places), filters (stage,
// company, assignee, archive state), sync and export. Its writes are the deal's own (service.ts: the board, money).
import type { Prisma } from '../../generated/prisma/client.js';
import { pageTable } from '../../db/page-table.js';
import { notFound } from '../../lib/problem.js';
import type { RecordType } from '../../records/definition.js';
import { enumField, RECORD_FIELDS, textFields, type FieldSpec } from '../../records/filter/fields.js';
import { COMPANY_FIELDS } from '../companies/record.js';
import {
  DEAL_STAGES,
  DealBodySchemas,
  DealListQuerySchema,
  DealParamsSchema,
  DealQueryPageSchema,
  DealSchema,
  DealBatchSchemas,
  type DealDto,
  type DealListQuery,
} from './schemas.js';

export type DealRow = Prisma.DealGetPayload<object>;

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
    custom_fields: deal.customFields as Record<string, unknown>,
    archived_at: deal.archivedAt?.toISOString() ?? null,
    created_at: deal.createdAt.toISOString(),
    updated_at: deal.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL: numeric columns of two places print as the API's money strings. */
export const dealPage = pageTable<DealDto, 'stage' | 'company_id' | 'assigned_to'>(
  'deals',
  [
    'id',
    'title',
    'company_id',
    'contact_id',
    'assigned_to',
    'value',
    'currency',
    'tax_rate',
    'amount_includes_tax',
    'net_value',
    'tax_value',
    'gross_value',
    'probability',
    'stage',
    'position',
    'expected_close_date',
    'lost_reason',
    'notes',
    'archived_at',
    'custom_fields',
  ],
  ['stage', 'company_id', 'assigned_to'],
  {},
  {},
  'deal',
);

/** What a deal's version covers: every field, its board `position` too. */
const VERSION_NOTE =
  "The `ETag` is the deal's version: every change of the deal moves it on, a change of its board `position` by " +
  "another deal's move, insert, archive or deletion in its stage too. ";

export const dealRecord: RecordType<DealRow, DealDto, DealListQuery> = {
  names: { one: 'Deal', many: 'Deals' },
  schemas: {
    record: DealSchema,
    create: DealBodySchemas.create,
    update: DealBodySchemas.update,
    listQuery: DealListQuerySchema,
    params: DealParamsSchema,
    batch: DealBatchSchemas,
    queryPage: DealQueryPageSchema,
  },
  table: dealPage,
  query: {
    fields: {
      ...RECORD_FIELDS,
      ...textFields('title', 'currency', 'lost_reason', 'notes'),
      ...Object.fromEntries(
        ['value', 'tax_rate', 'net_value', 'tax_value', 'gross_value'].map((name) => [name, { type: 'decimal' } as FieldSpec]),
      ),
      company_id: { type: 'uuid' },
      contact_id: { type: 'uuid' },
      assigned_to: { type: 'uuid' },
      amount_includes_tax: { type: 'boolean' },
      probability: { type: 'number' },
      position: { type: 'number' },
      stage: enumField(DEAL_STAGES, 'deal_stage'),
      expected_close_date: { type: 'date' },
    },
    company: { column: 'company_id', fields: COMPANY_FIELDS },
    search: false,
  },
  find: (db, id) => db.deal.findFirst({ where: { id } }),
  toDto: toDealDto,
  notFound: () => notFound('Deal not found.', 'deal_not_found'),
  filters: (query) => ({
    equals: { stage: query.stage, company_id: query.company_id, assigned_to: query.assigned_to },
    archived: query.archived ?? 'active',
  }),
  // `deal.stage_changed` is the deal's own event (service.ts).
  events: null,
  exportFields: [...dealPage.columns.filter((column) => column !== 'custom_fields'), 'created_at', 'updated_at'],
  sync: true,
  customFields: 'deal',
  summaries: {
    list: 'Deals of a workspace, newest first (VIEW_CRM).',
    delete: 'Delete a deal (MANAGE_CRM); the deals after it in its stage move up.',
    archive: 'Archive a deal (MANAGE_CRM): it leaves the default list and the board; idempotent.',
    restore: 'Restore an archived deal (MANAGE_CRM): it goes last in its stage; idempotent.',
  },
  notes: {
    page: 'Deals, newest first.',
    list:
      '`stage`, `company_id`, `assigned_to`: only those deals. `archived`: `active` (default), `archived` or `all`. ' +
      'Pages follow the `Link: rel="next"` header.',
    create:
      '`stage` defaults to `lead`; the deal goes last in its stage. `currency` defaults to `EUR`, `value` and ' +
      '`tax_rate` to 0. `lost_reason` is required with stage `lost`. Accepts `Idempotency-Key`.',
    update:
      'Partial: absent fields stay unchanged. A changed `stage` puts the deal last in its new stage and dispatches ' +
      '`deal.stage_changed`; `lost_reason` is required while the stage is `lost`. With `If-Match`, a deal that ' +
      'changed since answers 412 and nothing is written (no timeline entry, no event).',
    delete: 'With `If-Match`, a deal that changed since answers 412 and stays.',
    get: (conditional) => VERSION_NOTE + conditional,
    archive: (ifMatch) => ifMatch,
    restore: (ifMatch) => ifMatch,
  },
};
