// Routes of CRM companies: list (search, lifecycle stage, keyset pages), create, read, update, delete.
import type { FastifyPluginAsync } from 'fastify';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { CompanyBodySchemas, CompanyListQuerySchema, CompanyParamsSchema, CompanySchema } from './schemas.js';
import { companyPage } from './service.js';

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, {
    tag: 'companies',
    names: { one: 'Company', many: 'Companies' },
    path: '/companies/',
    idParam: 'company_id',
    table: companyPage,
    schemas: {
      record: CompanySchema,
      create: CompanyBodySchemas.create,
      update: CompanyBodySchemas.update,
      listQuery: CompanyListQuerySchema,
      params: CompanyParamsSchema,
    },
    filters: (query) => ({ search: query.search, lifecycleStage: query.lifecycle_stage, archived: query.archived }),
    syncFilters: (query) => ({ lifecycle_stage: query.lifecycle_stage }),
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
    timeline: 'companyId',
    exportFields: [...companyPage.columns, 'created_at', 'updated_at'],
    service: app.services.companies,
  });
};
