// Routes of CRM contacts: list (search, company filter, keyset pages), create, read, update, delete.
import type { FastifyPluginAsync } from 'fastify';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { ContactBodySchemas, ContactListQuerySchema, ContactParamsSchema, ContactSchema } from './schemas.js';
import { contactPage } from './service.js';

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, {
    tag: 'contacts',
    names: { one: 'Contact', many: 'Contacts' },
    path: '/contacts/',
    idParam: 'contact_id',
    table: contactPage,
    schemas: {
      record: ContactSchema,
      create: ContactBodySchemas.create,
      update: ContactBodySchemas.update,
      listQuery: ContactListQuerySchema,
      params: ContactParamsSchema,
    },
    filters: (query) => ({ search: query.search, companyId: query.company_id, archived: query.archived }),
    syncFilters: (query) => ({ company_id: query.company_id }),
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
    timeline: 'contactId',
    exportFields: [...contactPage.columns, 'created_at', 'updated_at'],
    service: app.services.contacts,
  });
};
