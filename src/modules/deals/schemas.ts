// Request and response schemas of the deal endpoints: the deal, its create/update/move bodies, the pipeline summary.
import { customFieldsOfBody, customFieldsOfRecord } from '../../records/custom-fields/schemas.js';
import { ALL_BATCH_OPS, batchComponents, recordBatchSchemas } from '../../records/batch-schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { queryPageSchema } from '../../records/filter/schema.js';
import { named, Nullable, NullableTimestamp, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { ArchivedFilterSchema } from '../../records/activity-schemas.js';
import { RecordParamsSchema, recordBodySchemas, UpdatedSinceSchema } from '../../records/record-schemas.js';

export const DEAL_STAGES = ['lead', 'qualified', 'proposal', 'negotiation', 'won', 'lost'] as const;
export type DealStage = (typeof DEAL_STAGES)[number];

export const DealStageSchema = StringEnum(DEAL_STAGES, {
  $id: 'DealStage',
  description: 'Where a deal stands on the board: `lead` (default) → `qualified` → `proposal` → `negotiation` → `won` or `lost`.',
});

/** The currency a deal gets when its create body names none. */
export const DEFAULT_CURRENCY = 'EUR';

const Money = (description: string) =>
  Type.String({
    pattern: '^(0|[1-9][0-9]*)\\.[0-9]{2}$',
    description: `${description} A decimal string with two places.`,
    examples: ['1250.00'],
  });
const MoneyInput = Type.String({
  pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,2})?$',
  description:
    'The amount: a decimal string, at most two places (`"1250"`, `"1250.5"`, `"1250.50"`), 0 up to 999999999999.99. Never a JSON number.',
});
const TaxRateInput = Type.String({
  pattern: '^(100(\\.0{1,2})?|[0-9]{1,2}(\\.[0-9]{1,2})?)$',
  description: 'Tax rate in percent, 0 to 100, a decimal string with at most two places (`"24"`, `"7.5"`).',
});
const CurrencyCode = Type.String({
  pattern: '^[A-Z]{3}$',
  description: `ISO 4217 currency code, upper case (an unknown code answers 400); default \`${DEFAULT_CURRENCY}\`.`,
});
const Percent = Type.Integer({ minimum: 0, maximum: 100 });
const LostReason = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Why the deal was lost; required while the stage is `lost`.',
});

export const DealSchema = Type.Object(
  {
    id: Uuid(),
    title: Type.String(),
    company_id: Uuid(),
    contact_id: Nullable(Uuid()),
    assigned_to: Nullable(Uuid({ description: 'User id of the member the deal is assigned to.' })),
    value: Money('The amount as entered: net, or gross when `amount_includes_tax`.'),
    currency: Type.String({ description: 'ISO 4217 code.' }),
    tax_rate: Type.String({ description: 'Tax rate in percent, two places.' }),
    amount_includes_tax: Type.Boolean(),
    net_value: Money('Without tax (exact decimal arithmetic, half-up to cents).'),
    tax_value: Money('The tax: gross_value − net_value.'),
    gross_value: Money('With tax.'),
    probability: Percent,
    stage: Ref(DealStageSchema),
    position: Nullable(Type.Integer({ minimum: 0 }), {
      description:
        'Place within its stage on the board (0 first; the positions of a stage are 0, 1, 2, … without gaps); null while archived.',
    }),
    expected_close_date: Nullable(Type.String({ format: 'date' })),
    lost_reason: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    archived_at: NullableTimestamp(),
    custom_fields: customFieldsOfRecord(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    ...named('Deal'),
    description: 'A deal of a company, on the workspace pipeline.',
    examples: [
      {
        id: '9b2f1c3e-6a7d-4e5f-8a9b-0c1d2e3f4a5b',
        title: 'Initech renewal',
        company_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        contact_id: null,
        assigned_to: null,
        value: '1240.00',
        currency: 'EUR',
        tax_rate: '24.00',
        amount_includes_tax: true,
        net_value: '1000.00',
        tax_value: '240.00',
        gross_value: '1240.00',
        probability: 60,
        stage: 'proposal',
        position: 0,
        expected_close_date: '2026-03-31',
        lost_reason: null,
        notes: null,
        archived_at: null,
        custom_fields: {},
        created_at: '2026-01-15T09:30:00.000Z',
        updated_at: '2026-02-01T14:05:00.000Z',
      },
    ],
  },
);
export type DealDto = Static<typeof DealSchema>;

export const DealBodySchemas = recordBodySchemas(
  'Deal',
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    company_id: Uuid({ description: 'A company of this workspace (else 400).' }),
    contact_id: Nullable(Uuid({ description: 'A contact of this workspace (else 400).' })),
    assigned_to: Nullable(Uuid({ description: 'User id of a member of this workspace (else 400).' })),
    value: MoneyInput,
    currency: CurrencyCode,
    tax_rate: TaxRateInput,
    amount_includes_tax: Type.Boolean({ description: 'Whether `value` includes the tax (default false).' }),
    probability: Percent,
    stage: Ref(DealStageSchema),
    expected_close_date: Nullable(Type.String({ format: 'date' })),
    lost_reason: Nullable(LostReason),
    notes: Nullable(Type.String({ maxLength: 10000 })),
    custom_fields: customFieldsOfBody(),
  },
  ['title', 'company_id'],
  ' A changed `stage` puts the deal last in its new stage (use the move endpoint to choose the place).',
);
export type DealCreate = Static<typeof DealBodySchemas.create>;
export type DealUpdate = Static<typeof DealBodySchemas.update>;

export const DealMoveSchema = Type.Object(
  {
    stage: Ref(DealStageSchema),
    position: Type.Integer({
      minimum: 0,
      maximum: 1000000,
      description: 'The place within the stage, 0 first; beyond the last place the deal goes last.',
    }),
    lost_reason: Type.Optional(LostReason),
  },
  { ...named('DealMove'), additionalProperties: false, description: 'Where a deal goes on the board.' },
);
export type DealMove = Static<typeof DealMoveSchema>;

export const DealPipelineTotalSchema = Type.Object(
  {
    currency: Type.String(),
    net_value: Money('Sum of the net values.'),
    gross_value: Money('Sum of the gross values.'),
  },
  { ...named('DealPipelineTotal'), description: 'The sums of one currency (amounts of different currencies are never added).' },
);

export const DealPipelineStageSchema = Type.Object(
  {
    stage: Ref(DealStageSchema),
    count: Type.Integer({ minimum: 0 }),
    totals: Type.Array(Ref(DealPipelineTotalSchema), { description: 'Per currency, ordered by currency code.' }),
  },
  { ...named('DealPipelineStage'), description: "One stage's active (not archived) deals, counted and summed." },
);
export type DealPipelineStage = Static<typeof DealPipelineStageSchema>;

export const DealListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  stage: Type.Optional(Ref(DealStageSchema)),
  company_id: Type.Optional(Uuid({ description: "Only this company's deals." })),
  assigned_to: Type.Optional(Uuid({ description: 'Only deals assigned to this user.' })),
  archived: Type.Optional(Ref(ArchivedFilterSchema)),
  updated_since: UpdatedSinceSchema,
});
export type DealListQuery = Static<typeof DealListQuerySchema>;

export const DealParamsSchema = RecordParamsSchema('deal_id', 'Deal');

/** The batch endpoint's request and answer (`POST …/deals/batch/`). */
export const DealBatchSchemas = recordBatchSchemas('Deal', DealSchema, ALL_BATCH_OPS);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
/** The answer of a deal query (POST …/query/). */
export const DealQueryPageSchema = queryPageSchema('Deal', DealSchema);

export const DEAL_SCHEMAS = [
  DealStageSchema,
  DealSchema,
  DealBodySchemas.create,
  DealBodySchemas.update,
  DealMoveSchema,
  DealPipelineTotalSchema,
  DealPipelineStageSchema,
  ...batchComponents(DealBatchSchemas),
  DealQueryPageSchema,
];
