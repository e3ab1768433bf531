// The company record type: its table and API fields, filters (search, lifecycle stage, archive state), events,
// timeline and export, and its own rules (a customer code at create, the country code, duplicates of tax_id and email).
import countries from 'i18n-iso-countries';
import type { Prisma } from '../../generated/prisma/client.js';
import { pageTable } from '../../db/page-table.js';
import type { Numbering } from '../../db/tenant-writes.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { assigneeName, assigneeNameSql, assigneeSelect } from '../../records/assignee.js';
import type { RecordType } from '../../records/definition.js';
import { enumField, RECORD_FIELDS, textFields, type FieldCatalog } from '../../records/filter/fields.js';
import {
  CompanyBodySchemas,
  CompanyListQuerySchema,
  CompanyParamsSchema,
  CompanyQueryPageSchema,
  CompanySchema,
  LIFECYCLE_STAGES,
  type CompanyDto,
  type CompanyListQuery,
  CompanyBatchSchemas,
} from './schemas.js';

/** The columns of the API body (not `organizationId`, not the trigger-kept `searchText`). */
const companyBody = {
  id: true,
  name: true,
  email: true,
  phoneNumber: true,
  website: true,
  lifecycleStage: true,
  taxId: true,
  industry: true,
  addressLine1: true,
  addressLine2: true,
  city: true,
  postalCode: true,
  country: true,
  notes: true,
  assignedTo: true,
  assignee: assigneeSelect,
  customerCode: true,
  customFields: true,
  archivedAt: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.CompanySelect;
export type CompanyRow = Prisma.CompanyGetPayload<{ select: typeof companyBody }>;

export function toCompanyDto(company: CompanyRow): CompanyDto {
  return {
    id: company.id,
    name: company.name,
    email: company.email,
    phone_number: company.phoneNumber,
    website: company.website,
    lifecycle_stage: company.lifecycleStage,
    tax_id: company.taxId,
    industry: company.industry,
    address_line_1: company.addressLine1,
    address_line_2: company.addressLine2,
    city: company.city,
    postal_code: company.postalCode,
    country: company.country,
    notes: company.notes,
    assigned_to: company.assignedTo,
    assigned_to_name: assigneeName(company.assignee),
    customer_code: company.customerCode,
    custom_fields: company.customFields as Record<string, unknown>,
    archived_at: company.archivedAt?.toISOString() ?? null,
    created_at: company.createdAt.toISOString(),
    updated_at: company.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL (see db/page-query.ts). */
export const companyPage = pageTable<CompanyDto, 'lifecycle_stage'>(
  'companies',
  [
    'id',
    'name',
    'email',
    'phone_number',
    'website',
    'lifecycle_stage',
    'tax_id',
    'industry',
    'address_line_1',
    'address_line_2',
    'city',
    'postal_code',
    'country',
    'notes',
    'assigned_to',
    'customer_code',
    'archived_at',
    'custom_fields',
  ],
  ['lifecycle_stage'],
  { name: [{ column: 'name', type: 'text' }] },
  assigneeNameSql('companies'),
  'company',
);

/** The fields a company query filters and sorts by (and `company.<field>` of the other record types). */
export const COMPANY_FIELDS: FieldCatalog = {
  ...RECORD_FIELDS,
  ...textFields('name', 'email', 'phone_number', 'website', 'tax_id', 'industry', 'address_line_1', 'address_line_2'),
  ...textFields('city', 'postal_code', 'country', 'notes', 'customer_code'),
  name: { type: 'text', filled: true },
  country: { type: 'text', sqlType: 'bpchar' },
  lifecycle_stage: enumField(LIFECYCLE_STAGES, 'lifecycle_stage'),
  assigned_to: { type: 'uuid' },
};

/** Every company gets the next customer code of its workspace, whether created through the API or imported. */
export const COMPANY_NUMBERING: Numbering = { column: 'customer_code', next: 'next_customer_number', prefix: 'CUS-' };

/** The unique indexes of the migration crm_profiles_archive_activity, by the field they keep unique. */
const DUPLICATE_INDEXES: Record<string, string> = {
  companies_organization_id_tax_id_unique: 'tax_id',
  companies_organization_id_email_unique: 'email',
};

const ALPHA_2 = new Set(Object.keys(countries.getAlpha2Codes()));

/** `country` upper-cased and one of ISO 3166-1's alpha-2 codes (400 on the field otherwise). */
function checkedCountry<T extends Record<string, unknown>>(body: T): T {
  if (typeof body.country !== 'string') return body;
  const country = body.country.toUpperCase();
  if (!ALPHA_2.has(country)) throw validationFailed({ country: ['Not an ISO 3166-1 alpha-2 country code.'] });
  return { ...body, country };
}

/** The company record type: what the record kernel serves companies from. */
export const companyRecord: RecordType<CompanyRow, CompanyDto, CompanyListQuery> = {
  names: { one: 'Company', many: 'Companies' },
  schemas: {
    record: CompanySchema,
    create: CompanyBodySchemas.create,
    update: CompanyBodySchemas.update,
    listQuery: CompanyListQuerySchema,
    params: CompanyParamsSchema,
    batch: CompanyBatchSchemas,
    queryPage: CompanyQueryPageSchema,
  },
  table: companyPage,
  query: { fields: COMPANY_FIELDS, search: true, searchColumns: ['name', 'email', 'phone_number', 'website'] },
  find: (db, id) => db.company.findUnique({ select: companyBody, where: { id } }),
  toDto: toCompanyDto,
  notFound: () => notFound('Company not found.', 'company_not_found'),
  filters: (query) => ({
    equals: { lifecycle_stage: query.lifecycle_stage },
    search: query.search,
    archived: query.archived ?? 'active',
  }),
  events: 'company',
  timeline: 'company_id',
  exportFields: [...companyPage.columns.filter((column) => column !== 'custom_fields'), 'created_at', 'updated_at'],
  sync: true,
  customFields: 'company',
  notes: {
    list:
      '`search`: case-insensitive substring of name, email, phone_number or website (`%`, `_`, `\\` literal). ' +
      '`lifecycle_stage`: only that stage. Pages follow the `Link: rel="next"` header; records created meanwhile ' +
      'never shift or repeat a page (they sort before the cursor).',
    create:
      '`lifecycle_stage` defaults to `lead`. `organization` and `organization_id` are accepted and ignored: the ' +
      'company belongs to the organization of the path. Other unknown fields answer 400. Dispatches `company.created`.',
    update: 'Partial: absent fields stay unchanged. Dispatches `company.updated` (not for an empty body).',
    delete:
      "Also deletes the company's contacts. Queues the `company.deleted` automation runs (the company as it was) in the " +
      'same statement; the contacts it takes along send no `contact.deleted` each.',
  },
  duplicate: (constraint) => {
    const field = DUPLICATE_INDEXES[constraint];
    return field ? validationFailed({ [field]: [`Another company of this workspace has this ${field}.`] }) : undefined;
  },
  prepare: checkedCountry,
  numbering: COMPANY_NUMBERING,
};
