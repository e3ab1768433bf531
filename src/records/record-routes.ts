// Registers the endpoints a record type's definition gives (list, sync and export; create, read, update, delete,
// archive and restore; its timeline) in the tenant context, reads needing VIEW_CRM and writes MANAGE_CRM.
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  archiveIfMatchNote,
  CONDITIONAL_GET_NOTE,
  conditionalRead,
  conditionalWrite,
  ifMatch,
  sendRecord,
  tagged,
  withEtag,
} from '../http/etag.js';
import { sendPage } from '../http/pagination.js';
import { requireTenant } from '../http/request.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../lib/http-schemas.js';
import { pageOf, pageResponse } from '../lib/pagination.js';
import { ActivityQuerySchema, ActivitySchema } from './activity-schemas.js';
import { activityPage } from './activity-service.js';
import { routesOf, type RecordOperation, type RecordType } from './definition.js';
import { registerBatchRoute } from './batch-routes.js';
import { registerListRoutes } from './list-routes.js';
import { registerQueryRoute } from './query-routes.js';
import type { RecordService } from './record-service.js';
import { scopeOf } from './scope.js';

/** A record in API shape: its version (`updated_at`) is its ETag. */
type Versioned = { updated_at: string };

/** What archiving or restoring does besides `archived_at`, from what the type has: a timeline, events. */
function archiveNote(type: Pick<RecordType, 'timeline' | 'events'>, action: 'archive' | 'restore', one: string): string {
  const entry = type.timeline ? `Adds ${action === 'archive' ? 'an `archived`' : 'a `restored`'} timeline entry` : '';
  const event = type.events ? 'dispatches the `updated` event' : '';
  const effects = entry && event ? `${entry} and ${event}. ` : entry ? `${entry}. ` : event ? 'Dispatches the `updated` event. ' : '';
  return action === 'archive'
    ? `Sets \`archived_at\`: the ${one} leaves the default list (\`archived=active\`) and shows under \`archived=archived\` ` +
        `and \`archived=all\`. ${effects}Archiving an archived ${one} changes nothing.`
    : `Clears \`archived_at\`. ${effects}Restoring an active ${one} changes nothing.`;
}

export function registerRecordRoutes<Row, Dto extends Versioned & Record<string, unknown>, Query, Create, Update>(
  app: FastifyInstance,
  type: RecordType<Row, Dto, Query>,
  service: RecordService<Dto, Create, Update>,
): void {
  const { names, schemas, notes } = type;
  const { tag, path, idParam } = routesOf(type);
  const item = `${path}:${idParam}/`;
  const one = names.one.toLowerCase();
  const summary = (operation: RecordOperation, generated: string) => type.summaries?.[operation] ?? generated;
  const read = { access: 'VIEW_CRM', apiKeys: true } as const;
  const write = { access: 'MANAGE_CRM', apiKeys: true } as const;
  const common = { tags: [tag] };
  const idOf = (request: FastifyRequest) => (request.params as Record<string, string>)[idParam] ?? '';

  registerListRoutes(app, type, service, summary('list', `${names.many} of a workspace, newest first unless sorted (VIEW_CRM).`));
  if (type.query && service.query && schemas.queryPage) registerQueryRoute(app, type, type.query, service.query, schemas.queryPage);

  app.post(
    path,
    {
      schema: {
        ...common,
        operationId: `create${names.one}`,
        summary: summary('create', `Create a ${one} (MANAGE_CRM).`),
        description: notes.create,
        params: OrganizationParamsSchema,
        body: Ref(schemas.create),
        response: responses({ 201: Ref(schemas.record) }, 401, 403, 404),
      },
      config: { ...write, idempotent: true },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.code(201);
      return service.create(scopeOf(request), request.body as Create);
    },
  );

  app.get(
    item,
    {
      schema: {
        ...common,
        operationId: `get${names.one}`,
        summary: summary('get', `One ${one} (VIEW_CRM).`),
        description: notes.get?.(CONDITIONAL_GET_NOTE) ?? CONDITIONAL_GET_NOTE,
        params: schemas.params,
        ...conditionalRead(Ref(schemas.record)),
      },
      config: read,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const record = await service.get(requireTenant(request), idOf(request));
      return sendRecord(request, reply, record);
    },
  );

  app.patch(
    item,
    {
      schema: {
        ...common,
        operationId: `update${names.one}`,
        summary: summary('update', `Change some fields of a ${one} (MANAGE_CRM).`),
        description: notes.update,
        params: schemas.params,
        body: Ref(schemas.update),
        ...conditionalWrite({ 200: tagged(Ref(schemas.record)) }),
      },
      config: write,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      return withEtag(reply, await service.update(scopeOf(request), idOf(request), request.body as Update, ifMatch(request)));
    },
  );

  const archiving =
    type.archivable === false
      ? []
      : ([
          ['archive', 'Archive'],
          ['restore', 'Restore'],
        ] as const);
  for (const [action, change] of archiving) {
    app.post(
      `${item}${action}/`,
      {
        schema: {
          ...common,
          operationId: `${action}${names.one}`,
          summary: summary(action, `${change} a ${one} (MANAGE_CRM).`),
          description: notes[action]?.(archiveIfMatchNote(one)) ?? `${archiveNote(type, action, one)} ${archiveIfMatchNote(one)}`,
          params: schemas.params,
          ...conditionalWrite({ 200: tagged(Ref(schemas.record)) }),
        },
        config: write,
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        return withEtag(reply, await service[action](scopeOf(request), idOf(request), ifMatch(request)));
      },
    );
  }

  const { timeline } = type;
  if (timeline) {
    app.get(
      `${item}activity/`,
      {
        schema: {
          ...common,
          operationId: `list${names.one}Activity`,
          summary: `The timeline of a ${one}, newest first (VIEW_CRM).`,
          description:
            'Entries `created`, `updated` (the names of the changed fields, never their values), `assigned`, `archived`, ' +
            '`restored`, and the deals and tasks attached to the record or moved away from it (`deal_attached`, ' +
            '`deal_detached`, `task_attached`, `task_detached`), the notes written on it (`note_added`), each with its actor and time, written in the same ' +
            'transaction as the change. Pages follow the `Link: rel="next"` header.',
          params: schemas.params,
          querystring: ActivityQuerySchema,
          response: responses({ 200: pageResponse(Ref(ActivitySchema), 'Timeline entries, newest first.') }, 401, 403, 404),
        },
        config: read,
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const query = request.query as Static<typeof ActivityQuerySchema>;
        const tenant = requireTenant(request);
        const { db } = tenant;
        const id = idOf(request);
        await service.get(tenant, id);
        const page = pageOf(query);
        const record = timeline === 'company_id' ? { companyId: id } : { contactId: id };
        return sendPage(request, reply, await activityPage(db, record, page), page.limit);
      },
    );
  }

  registerBatchRoute(app, type, service);

  app.delete(
    item,
    {
      schema: {
        ...common,
        operationId: `delete${names.one}`,
        summary: summary('delete', `Delete a ${one} (MANAGE_CRM).`),
        description: notes.delete,
        params: schemas.params,
        ...conditionalWrite({ 204: NoContent }),
      },
      config: write,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      await service.remove(scopeOf(request), idOf(request), ifMatch(request));
      return reply.code(204).send(null);
    },
  );
}
