// Routes of CRM companies: those of the record kernel (list, sync, export, create, read, update, delete, archive,
// restore, timeline) for the company record type.
import type { FastifyPluginAsync } from 'fastify';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { companyRecord } from './record.js';

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, companyRecord, app.services.companies);
};
