// Routes of notes: those of the record kernel (list, sync, create, read, update, delete; no archive) for the note
// record type, and the notes of one record under each record type it can be on. Reads need VIEW_CRM, writes MANAGE_CRM
// (and, for changes and deletions, the author or an owner or admin: service.ts); workspace API keys may call them.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { requireTenant } from '../../http/request.js';
import { isUuid, Ref, responses } from '../../lib/http-schemas.js';
import { routesOf, type RecordType } from '../../records/definition.js';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { companyRecord } from '../companies/record.js';
import { contactRecord } from '../contacts/record.js';
import { dealRecord } from '../deals/record.js';
import { taskRecord } from '../tasks/record.js';
import { noteRecord } from './record.js';
import { NoteSchema, type NoteTargetType } from './schemas.js';

/** What a record's notes list needs of the record type: its names, path parameters and one-record read. */
type TargetRecord = Pick<RecordType<unknown>, 'names' | 'schemas' | 'find' | 'notFound'>;

/** The record types a note can be on, by their target type. */
const TARGETS: ReadonlyArray<[NoteTargetType, TargetRecord]> = [
  ['company', companyRecord],
  ['contact', contactRecord],
  ['deal', dealRecord],
  ['task', taskRecord],
];

export const tenantRoutes: FastifyPluginAsync = async (app) => {
  registerRecordRoutes(app, noteRecord, app.services.notes);

  for (const [targetType, type] of TARGETS) {
    const { tag, path, idParam } = routesOf(type);
    const one = type.names.one.toLowerCase();
    app.get(
      `${path}:${idParam}/notes/`,
      {
        schema: {
          tags: [tag, 'notes'],
          operationId: `list${type.names.one}Notes`,
          summary: `The notes on a ${one}, newest first (VIEW_CRM).`,
          description: `Every note that has this ${one} among its targets, newest first, as one list (not paged). An unknown ${one} answers 404.`,
          params: type.schemas.params,
          response: responses({ 200: Type.Array(Ref(NoteSchema), { description: `The ${one}'s notes, newest first.` }) }, 401, 403, 404),
        },
        config: { access: 'VIEW_CRM', apiKeys: true },
      },
      async (request: FastifyRequest) => {
        const { db } = requireTenant(request);
        const id = (request.params as Record<string, string>)[idParam] ?? '';
        if (!isUuid(id) || !(await type.find(db, id))) throw type.notFound();
        return app.services.notes.notesOf(db, { type: targetType, id: id.toLowerCase() });
      },
    );
  }
};
