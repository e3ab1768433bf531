// Routes of tasks: those of the record kernel (list with assignee or `me`, effective status, due before, company, deal
// and archived filters, newest first or soonest due; sync, export, create, read, update, delete, archive and restore)
// for the task record type. Reads need VIEW_CRM, writes MANAGE_CRM; workspace API keys may call them.
import type { FastifyPluginAsync } from 'fastify';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { taskRecord } from './record.js';

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, taskRecord, app.services.tasks);
};
