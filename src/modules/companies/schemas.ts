// Request and response schemas of the company endpoints.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Nullable, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { RecordParamsSchema, SearchTermSchema, SortParameterSchema, UpdatedSinceSchema, recordBodySchemas } from '../crm/record-schemas.js';

const LIFECYCLE_STAGES = ['lead', 'prospect', 'customer', 'inactive'] as const;

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
    email: Nullable(Email()),
    phone_number: Nullable(Type.String({ maxLength: 50 })),
    website: Nullable(Type.String({ maxLength: 2048 })),
    lifecycle_stage: Ref(LifecycleStageSchema),
  },
  ['name'],
);
export type CompanyCreate = Static<typeof CompanyBodySchemas.create>;
export type CompanyUpdate = Static<typeof CompanyBodySchemas.update>;

export const CompanyListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  search: SearchTermSchema('name, email, phone_number or website'),
  lifecycle_stage: Type.Optional(Ref(LifecycleStageSchema)),
  sort: SortParameterSchema,
  updated_since: UpdatedSinceSchema,
});

export const CompanyParamsSchema = RecordParamsSchema('company_id', 'Company');

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const COMPANY_SCHEMAS = [LifecycleStageSchema, CompanySchema, CompanyBodySchemas.create, CompanyBodySchemas.update];
