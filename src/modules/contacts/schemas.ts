// Request and response schemas of the contact endpoints.
import { customFieldsOfBody, customFieldsOfRecord } from '../../records/custom-fields/schemas.js';
import { ALL_BATCH_OPS, batchComponents, recordBatchSchemas } from '../../records/batch-schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { queryPageSchema } from '../../records/filter/schema.js';
import { Email, named, Nullable, Timestamp, Uuid } from '../../lib/http-schemas.js';
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

export const ContactSchema = Type.Object(
  {
    id: Uuid(),
    company_id: Uuid(),
    first_name: Type.String(),
    last_name: Type.String(),
    email: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    department: Nullable(Type.String()),
    job_title: Nullable(Type.String()),
    notes: Nullable(Type.String()),
    assigned_to: Nullable(Uuid({ description: 'The user the contact is assigned to.' })),
    assigned_to_name: Nullable(Type.String({ description: "The assignee's display name, else username." })),
    archived_at: Nullable(Timestamp(), { description: 'When the contact was archived; null while active.' }),
    custom_fields: customFieldsOfRecord(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    ...named('Contact'),
    examples: [
      {
        id: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
        company_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        first_name: 'Ada',
        last_name: 'Lovelace',
        email: 'ada@initech.example',
        phone_number: null,
        department: 'Engineering',
        job_title: 'CTO',
        notes: null,
        assigned_to: null,
        assigned_to_name: null,
        archived_at: null,
        custom_fields: {},
        created_at: '2026-01-15T09:45:00.000Z',
        updated_at: '2026-01-15T09:45:00.000Z',
      },
    ],
  },
);
export type ContactDto = Static<typeof ContactSchema>;

export const ContactBodySchemas = recordBodySchemas(
  'Contact',
  {
    company_id: Uuid({ description: 'A company of the same organization (400 otherwise).' }),
    first_name: Type.String({ minLength: 1, maxLength: 150 }),
    last_name: Type.String({ minLength: 1, maxLength: 150 }),
    email: Nullable(Email()),
    phone_number: Nullable(Type.String({ maxLength: 50 })),
    department: Nullable(Type.String({ maxLength: 150 })),
    job_title: Nullable(Type.String({ maxLength: 150 })),
    notes: Nullable(Type.String({ maxLength: 10000 })),
    custom_fields: customFieldsOfBody(),
    assigned_to: AssignedToField,
  },
  ['company_id', 'first_name', 'last_name'],
  ' A new `company_id` must be in the same organization.',
);
export type ContactCreate = Static<typeof ContactBodySchemas.create>;
export type ContactUpdate = Static<typeof ContactBodySchemas.update>;

export const ContactListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  search: SearchTermSchema('first_name, last_name, email or phone_number'),
  company_id: Type.Optional(Uuid({ description: 'Only the contacts of this company.' })),
  archived: ArchivedQuery,
  sort: SortParameterSchema,
  updated_since: UpdatedSinceSchema,
});
export type ContactListQuery = Static<typeof ContactListQuerySchema>;

export const ContactParamsSchema = RecordParamsSchema('contact_id', 'Contact');

/** The batch endpoint's request and answer (`POST …/contacts/batch/`). */
export const ContactBatchSchemas = recordBatchSchemas('Contact', ContactSchema, ALL_BATCH_OPS);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
/** The answer of a contact query (POST …/query/). */
export const ContactQueryPageSchema = queryPageSchema('Contact', ContactSchema);

export const CONTACT_SCHEMAS = [
  ContactSchema,
  ContactBodySchemas.create,
  ContactBodySchemas.update,
  ...batchComponents(ContactBatchSchemas),
  ContactQueryPageSchema,
];
