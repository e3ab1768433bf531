// Request and response schemas of the contact endpoints.
import { Type, type Static } from '@sinclair/typebox';
import { Email, Nullable, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { RecordParamsSchema, SearchTermSchema, recordBodySchemas } from '../crm/record-schemas.js';

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
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { title: 'Contact' },
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
});

export const ContactParamsSchema = RecordParamsSchema('contact_id', 'Contact');
