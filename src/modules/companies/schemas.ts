// Request and response schemas of the company endpoints.
import { Type, type Static } from '@sinclair/typebox';
import { Email, Nullable, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { RecordParamsSchema, SearchTermSchema, recordBodySchemas } from '../crm/record-schemas.js';

const LIFECYCLE_STAGES = ['lead', 'prospect', 'customer', 'inactive'] as const;

const LifecycleStageSchema = Type.Union(
  LIFECYCLE_STAGES.map((stage) => Type.Literal(stage)),
  { title: 'LifecycleStage', description: 'Where the company stands: `lead` (default), `prospect`, `customer` or `inactive`.' },
);

export const CompanySchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    email: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    website: Nullable(Type.String()),
    lifecycle_stage: LifecycleStageSchema,
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    title: 'Company',
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
    lifecycle_stage: LifecycleStageSchema,
  },
  ['name'],
);
export type CompanyCreate = Static<typeof CompanyBodySchemas.create>;
export type CompanyUpdate = Static<typeof CompanyBodySchemas.update>;

export const CompanyListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  search: SearchTermSchema('name, email, phone_number or website'),
  lifecycle_stage: Type.Optional(LifecycleStageSchema),
});

export const CompanyParamsSchema = RecordParamsSchema('company_id', 'Company');
