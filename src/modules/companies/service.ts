// Companies of one organization: the queries behind the shared CRM record behaviour (list with search, lifecycle
// stage and keyset pages, read, create, partial update, delete).
import { pageTable } from '../../db/tenant-pages.js';
import { notFound } from '../../lib/problem.js';
import { recordService } from '../crm/record-service.js';
import type { CompanyDto } from './schemas.js';

/** The list reads the API fields straight from SQL (see db/tenant-pages.ts). */
export const companyPage = pageTable<CompanyDto, 'lifecycle_stage'>(
  'companies',
  ['id', 'name', 'email', 'phone_number', 'website', 'lifecycle_stage'],
  ['lifecycle_stage'],
);

export const companyService = recordService({
  event: 'company',
  notFound: () => notFound('Company not found.', 'company_not_found'),
  table: companyPage,
  list: (pages, filters: { search?: string; lifecycleStage?: CompanyDto['lifecycle_stage'] }, page) =>
    pages.read(companyPage, { equals: { lifecycle_stage: filters.lifecycleStage }, search: filters.search, ...page }),
});
