// Companies of one organization: the queries behind the shared CRM record behaviour (list with search, lifecycle
// stage and keyset pages, read, create, partial update, delete).
import type { Prisma } from '../../generated/prisma/client.js';
import { pageTable } from '../../db/tenant-pages.js';
import { notFound } from '../../lib/problem.js';
import { recordService } from '../crm/record-service.js';
import type { CompanyDto } from './schemas.js';

/** The columns of the API body (not `organizationId`, not the trigger-kept `searchText`). */
const companyBody = {
  id: true,
  name: true,
  email: true,
  phoneNumber: true,
  website: true,
  lifecycleStage: true,
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
    created_at: company.createdAt.toISOString(),
    updated_at: company.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL (see db/tenant-pages.ts). */
export const companyPage = pageTable<CompanyDto, 'lifecycle_stage'>(
  'companies',
  ['id', 'name', 'email', 'phone_number', 'website', 'lifecycle_stage'],
  ['lifecycle_stage'],
  { name: [{ column: 'name', type: 'text' }] },
);

export const companyService = recordService({
  event: 'company',
  toDto: toCompanyDto,
  notFound: () => notFound('Company not found.', 'company_not_found'),
  table: companyPage,
  list: (pages, filters: { search?: string; lifecycleStage?: CompanyDto['lifecycle_stage'] }, page) =>
    pages.read(companyPage, { equals: { lifecycle_stage: filters.lifecycleStage }, search: filters.search, ...page }),
  find: (db, id) => db.company.findUnique({ select: companyBody, where: { id } }),
});
