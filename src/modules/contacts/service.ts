// Contacts of one organization: the queries behind the shared CRM record behaviour (list with search, company
// filter and keyset pages, read, create, partial update, delete). A contact's company must belong to the same
// organization: the composite foreign key (organization_id, company_id) guarantees it, and its violation is a 400.
import type { Prisma } from '../../generated/prisma/client.js';
import type { ArchivedFilter } from '../../db/page-query.js';
import { pageTable } from '../../db/page-table.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { assigneeName, assigneeNameSql, assigneeSelect } from '../../records/assignee.js';
import { recordService } from '../../records/record-service.js';
import type { ContactDto } from './schemas.js';

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
  ],
  ['company_id'],
  {
    name: [
      { column: 'last_name', type: 'text' },
      { column: 'first_name', type: 'text' },
    ],
  },
  assigneeNameSql('contacts'),
);

export const contactService = recordService({
  event: 'contact',
  toDto: toContactDto,
  notFound: () => notFound('Contact not found.', 'contact_not_found'),
  /** A company of another organization is indistinguishable from a missing one. */
  invalidReference: () => validationFailed({ company_id: ['No such company in this organization.'] }),
  timeline: 'contact_id',
  table: contactPage,
  listFilter: (filters: { search?: string; companyId?: string; archived?: ArchivedFilter }) => ({
    equals: { company_id: filters.companyId },
    search: filters.search,
    archived: filters.archived ?? 'active',
  }),
  find: (db, id) => db.contact.findUnique({ select: contactBody, where: { id } }),
});
