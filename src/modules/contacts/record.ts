// The contact record type: its table and API fields, filters (search, company, archive state), events, timeline and
// export. A contact's company must belong to the same organization: the composite foreign key (organization_id,
// company_id) guarantees it, and its violation is a 400.
import type { Prisma } from '../../generated/prisma/client.js';
import { pageTable } from '../../db/page-table.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { assigneeName, assigneeNameSql, assigneeSelect } from '../../records/assignee.js';
import type { RecordType } from '../../records/definition.js';
import { RECORD_FIELDS, textFields } from '../../records/filter/fields.js';
import { COMPANY_FIELDS } from '../companies/record.js';
import {
  ContactBodySchemas,
  ContactListQuerySchema,
  ContactParamsSchema,
  ContactQueryPageSchema,
  ContactSchema,
  type ContactDto,
  type ContactListQuery,
  ContactBatchSchemas,
} from './schemas.js';

/** The columns of the API body (not `organizationId`, not the trigger-kept `searchText`). */
const contactBody = {
  id: true,
  companyId: true,
  firstName: true,
  lastName: true,
  email: true,
  phoneNumber: true,
  department: true,
  jobTitle: true,
  notes: true,
  assignedTo: true,
  assignee: assigneeSelect,
  customFields: true,
  archivedAt: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ContactSelect;
export type ContactRow = Prisma.ContactGetPayload<{ select: typeof contactBody }>;

export function toContactDto(contact: ContactRow): ContactDto {
  return {
    id: contact.id,
    company_id: contact.companyId,
    first_name: contact.firstName,
    last_name: contact.lastName,
    email: contact.email,
    phone_number: contact.phoneNumber,
    department: contact.department,
    job_title: contact.jobTitle,
    notes: contact.notes,
    assigned_to: contact.assignedTo,
    assigned_to_name: assigneeName(contact.assignee),
    custom_fields: contact.customFields as Record<string, unknown>,
    archived_at: contact.archivedAt?.toISOString() ?? null,
    created_at: contact.createdAt.toISOString(),
    updated_at: contact.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL (see db/page-query.ts). */
export const contactPage = pageTable<ContactDto, 'company_id'>(
  'contacts',
  [
    'id',
    'company_id',
    'first_name',
    'last_name',
    'email',
    'phone_number',
    'department',
    'job_title',
    'notes',
    'assigned_to',
    'archived_at',
    'custom_fields',
  ],
  ['company_id'],
  {
    name: [
      { column: 'last_name', type: 'text' },
      { column: 'first_name', type: 'text' },
    ],
  },
  assigneeNameSql('contacts'),
  'contact',
);

/** The contact record type: what the record kernel serves contacts from. */
export const contactRecord: RecordType<ContactRow, ContactDto, ContactListQuery> = {
  names: { one: 'Contact', many: 'Contacts' },
  schemas: {
    record: ContactSchema,
    create: ContactBodySchemas.create,
    update: ContactBodySchemas.update,
    listQuery: ContactListQuerySchema,
    params: ContactParamsSchema,
    batch: ContactBatchSchemas,
    queryPage: ContactQueryPageSchema,
  },
  table: contactPage,
  query: {
    fields: {
      ...RECORD_FIELDS,
      first_name: { type: 'text', filled: true },
      last_name: { type: 'text', filled: true },
      ...textFields('email', 'phone_number', 'department', 'job_title', 'notes'),
      company_id: { type: 'uuid' },
      assigned_to: { type: 'uuid' },
    },
    company: { column: 'company_id', fields: COMPANY_FIELDS },
    sortAliases: { name: ['last_name', 'first_name'] },
    search: true,
    searchColumns: ['first_name', 'last_name', 'email', 'phone_number'],
  },
  find: (db, id) => db.contact.findUnique({ select: contactBody, where: { id } }),
  toDto: toContactDto,
  notFound: () => notFound('Contact not found.', 'contact_not_found'),
  filters: (query) => ({ equals: { company_id: query.company_id }, search: query.search, archived: query.archived ?? 'active' }),
  events: 'contact',
  timeline: 'contact_id',
  exportFields: [...contactPage.columns.filter((column) => column !== 'custom_fields'), 'created_at', 'updated_at'],
  sync: true,
  customFields: 'contact',
  notes: {
    list:
      '`search`: case-insensitive substring of first_name, last_name, email or phone_number (`%`, `_`, `\\` ' +
      'literal). `company_id`: only that company\'s contacts. Pages follow the `Link: rel="next"` header; records ' +
      'created meanwhile never shift or repeat a page (they sort before the cursor).',
    create:
      '`company_id` must be a company of the same organization (400 `validation_failed` with `errors.company_id` ' +
      'otherwise). `organization` and `organization_id` are accepted and ignored: the contact belongs to the ' +
      'organization of the path. Other unknown fields answer 400. Dispatches `contact.created`.',
    update:
      'Partial: absent fields stay unchanged; a new `company_id` must be in the same organization (400). ' +
      'Dispatches `contact.updated` (not for an empty body).',
    delete: 'Deletes the contact only, and queues its `contact.deleted` automation runs (the contact as it was) in the same statement.',
  },
  /** A company of another organization is indistinguishable from a missing one. */
  invalidReference: () => validationFailed({ company_id: ['No such company in this organization.'] }),
};
