// Routes of CRM contacts: those of the record kernel (list, sync, export, create, read, update, delete, archive,
// restore, timeline) for the contact record type.
import type { FastifyPluginAsync } from 'fastify';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { contactRecord } from './record.js';

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, contactRecord, app.services.contacts);
};
