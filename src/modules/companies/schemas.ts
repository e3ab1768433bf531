// Request and response schemas of the company endpoints.
import { customFieldsOfBody, customFieldsOfRecord } from '../../records/custom-fields/schemas.js';
import { ALL_BATCH_OPS, batchComponents, recordBatchSchemas } from '../../records/batch-schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { queryPageSchema } from '../../records/filter/schema.js';
import { Email, named, Nullable, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { ArchivedQuery } from '../../records/activity-schemas.js';
import {
  AssignedToField,
  RecordParamsSchema,
  SearchTermSchema,
  SortParameterSchema,
  UpdatedSinceSchema,
  recordBodySchemas,
} from '../../records/record-schemas.js';

export const LIFECYCLE_STAGES = ['lead', 'prospect', 'customer', 'inactive'] as const;

export const LifecycleStageSchema = StringEnum(LIFECYCLE_STAGES, {
  $id: 'LifecycleStage',
  description: 'Where the company stands: `lead` (default), `prospect`, `customer` or `inactive`.',
});

export const CompanySchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    email: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    website: Nullable(Type.String()),
    lifecycle_stage: Ref(LifecycleStageSchema),
    tax_id: Nullable(Type.String()),
    industry: Nullable(Type.String()),
    address_line_1: Nullable(Type.String()),
    address_line_2: Nullable(Type.String()),
    city: Nullable(Type.String()),
    postal_code: Nullable(Type.String()),
    country: Nullable(Type.String({ description: 'ISO 3166-1 alpha-2, upper case.' })),
    notes: Nullable(Type.String()),
    assigned_to: Nullable(Uuid({ description: 'The user the company is assigned to.' })),
    assigned_to_name: Nullable(Type.String({ description: "The assignee's display name, else username." })),
    customer_code: Nullable(
      Type.String({
        description:
          '`CUS-` and five or more digits, assigned by the server at create, sequential per workspace (numbers of failed ' +
          'creates are skipped). Null only for companies bulk-loaded outside the API.',
      }),
    ),
    archived_at: Nullable(Timestamp(), { description: 'When the company was archived; null while active.' }),
    custom_fields: customFieldsOfRecord(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    ...named('Company'),
    examples: [
      {
        id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        name: 'Initech',
        email: 'hello@initech.example',
        phone_number: '+1 555 0100',
        website: 'https://initech.example',
        lifecycle_stage: 'customer',
        tax_id: 'EL123456789',
        industry: 'Software',
        address_line_1: '1 Main Street',
        address_line_2: null,
        city: 'Athens',
        postal_code: '10558',
        country: 'GR',
        notes: null,
        assigned_to: '9b2e7c1a-7d0c-4c55-8a3e-1f2d3c4b5a69',
        assigned_to_name: 'Alice Example',
        customer_code: 'CUS-00002',
        archived_at: null,
        custom_fields: { plan: 'pro', seats: 25, renewal_date: '2027-01-31' },
        created_at: '2026-01-15T09:30:00.000Z',
        updated_at: '2026-02-01T14:05:00.000Z',
      },
    ],
  },
);
export type CompanyDto = Static<typeof CompanySchema>;

export const CompanyBodySchemas = recordBodySchemas(
  'Company',
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    email: Nullable(Email({ description: 'Unique in the workspace, case-insensitively (400 otherwise).' })),
    phone_number: Nullable(Type.String({ maxLength: 50 })),
    website: Nullable(Type.String({ maxLength: 2048 })),
    lifecycle_stage: Ref(LifecycleStageSchema),
    tax_id: Nullable(Type.String({ maxLength: 50, description: 'Unique in the workspace, case-insensitively (400 otherwise).' })),
    industry: Nullable(Type.String({ maxLength: 100 })),
    address_line_1: Nullable(Type.String({ maxLength: 255 })),
    address_line_2: Nullable(Type.String({ maxLength: 255 })),
    city: Nullable(Type.String({ maxLength: 100 })),
    postal_code: Nullable(Type.String({ maxLength: 20 })),
    country: Nullable(
      Type.String({ pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2 (any case; stored upper case); anything else 400.' }),
    ),
    notes: Nullable(Type.String({ maxLength: 10000 })),
    custom_fields: customFieldsOfBody(),
    assigned_to: AssignedToField,
  },
  ['name'],
  ' `email` and `tax_id` must stay unique in the workspace (case-insensitive); `assigned_to` must be a member.',
);
export type CompanyCreate = Static<typeof CompanyBodySchemas.create>;
export type CompanyUpdate = Static<typeof CompanyBodySchemas.update>;

export const CompanyListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  search: SearchTermSchema('name, email, phone_number or website'),
  lifecycle_stage: Type.Optional(Ref(LifecycleStageSchema)),
  archived: ArchivedQuery,
  sort: SortParameterSchema,
  updated_since: UpdatedSinceSchema,
});
export type CompanyListQuery = Static<typeof CompanyListQuerySchema>;

export const CompanyParamsSchema = RecordParamsSchema('company_id', 'Company');

/** The batch endpoint's request and answer (`POST …/companies/batch/`). */
export const CompanyBatchSchemas = recordBatchSchemas('Company', CompanySchema, ALL_BATCH_OPS);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
/** The answer of a company query (POST …/query/). */
export const CompanyQueryPageSchema = queryPageSchema('Company', CompanySchema);

export const COMPANY_SCHEMAS = [
  LifecycleStageSchema,
  CompanySchema,
  CompanyBodySchemas.create,
  CompanyBodySchemas.update,
  ...batchComponents(CompanyBatchSchemas),
  CompanyQueryPageSchema,
];
