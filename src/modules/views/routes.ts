// Routes of saved views (`…/views/`): list, create, read, change and delete in the tenant context (VIEW_CRM, API keys
// too); the service checks bodies (400 with each problem's path) and who may write which view.
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { CONDITIONAL_GET_NOTE, conditionalRead, conditionalWrite, ifMatch, sendRecord, tagged, withEtag } from '../../http/etag.js';
import { sendPage } from '../../http/pagination.js';
import { requestAudit, requireTenant } from '../../http/request.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageResponse } from '../../lib/pagination.js';
import { MAX_CONDITIONS, MAX_DEPTH } from '../../records/filter/validate.js';
import { MAX_VIEW_COLUMNS } from '../../records/views.js';
import {
  MAX_VIEW_NAME,
  MAX_VIEWS_PER_WORKSPACE,
  SavedViewCreateSchema,
  SavedViewSchema,
  SavedViewUpdateSchema,
  ViewListQuerySchema,
  ViewParamsSchema,
} from './schemas.js';
import { createView, deleteView, getView, listViews, updateView, type Viewer } from './service.js';

const documented = { tags: ['views'] };
const base = '/views';

/** What a route's validator compiler is asked for: one part of one route's schema. */
type SchemaPart = { schema: object; method: string; url: string; httpPart?: string };

const viewerOf = (request: FastifyRequest): Viewer => ({ userId: request.currentUser?.id ?? null, audit: requestAudit(request) });
const viewIdOf = (request: FastifyRequest) => (request.params as { view_id: string }).view_id;

const SEEN_NOTE =
  "Needs VIEW_CRM. A personal view is seen by its creator only: another member's answers 404 `view_not_found`, as an " +
  "unknown id or another workspace's does. Workspace API keys see workspace views only. ";
const WRITE_NOTE =
  'A workspace view needs MANAGE_CRM (403 `permission_denied`); a personal one is changed and deleted by its creator ' +
  'only (to others it does not exist: 404). ';
const CHECK_NOTE =
  `\`filter\`, \`search\` and \`sort\` are checked as a query's of \`object\` (\`POST …/{object}/query/\`: at most ` +
  `${MAX_CONDITIONS} conditions, ${MAX_DEPTH} levels, 3 sort keys), \`columns\` are at most ${MAX_VIEW_COLUMNS} distinct ` +
  'fields of the record; each problem answers 400 with its path in `errors` (`filter.and.1.field`, `sort.0.field`, ' +
  `\`columns.3\`). \`name\`: 1-${MAX_VIEW_NAME} characters (trimmed). They are stored as given and checked again at each ` +
  'use: a view naming a field its record type no longer has (an archived custom field) lists 400 `view_field_archived`. ';
const ETAG_NOTE =
  "The answer carries the view's new `ETag`. With `If-Match`, only a view still at that version (412 " +
  '`precondition_failed` otherwise); without it the change applies whatever happened meanwhile.';

/** The saved views of the workspace in the path. */
// Not the TypeBox provider: the filter tree is recursive, and the bodies are checked by the service.
export const tenantRoutes: FastifyPluginAsync = async (app) => {
  /**
   * The body passes as it came (the service checks it and reports each problem at its path); headers (a too long
   * `Idempotency-Key`) and parameters are validated as everywhere.
   */
  const bodyUnchecked = (part: SchemaPart) => {
    if (part.httpPart === 'body') return (data: unknown) => ({ value: data });
    const compile = app.validatorCompiler;
    if (!compile) throw new Error('the app has no validator compiler');
    return compile(part);
  };

  app.get(
    `${base}/`,
    {
      schema: {
        ...documented,
        operationId: 'listViews',
        summary: 'Saved views the caller sees: its personal ones and the workspace views (VIEW_CRM).',
        description: `${SEEN_NOTE}Newest first, in pages (\`limit\`, \`Link: rel="next"\`); \`object\` keeps one record type's views.`,
        params: OrganizationParamsSchema,
        querystring: ViewListQuerySchema,
        response: responses({ 200: pageResponse(Ref(SavedViewSchema), 'Saved views, newest first.') }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const query = request.query as Static<typeof ViewListQuerySchema>;
      const page = pageOf(query);
      const views = await listViews(requireTenant(request), viewerOf(request), page, query.object);
      return sendPage(request, reply, views, page.limit);
    },
  );

  app.post(
    `${base}/`,
    {
      schema: {
        ...documented,
        operationId: 'createView',
        summary: 'Save a view: a named filter, search and sort of one record type, and its columns.',
        description:
          'A personal view needs VIEW_CRM (and a signed-in user: a workspace API key creates workspace views only, 400 ' +
          'otherwise), a workspace view MANAGE_CRM (403 `permission_denied`). ' +
          CHECK_NOTE +
          `A workspace keeps at most ${MAX_VIEWS_PER_WORKSPACE} views, personal ones included (400 \`view_limit_reached\`). ` +
          'List through it with `GET …/{object}/?view=<id>`. Written to the audit log (`view.created`). Accepts `Idempotency-Key`.',
        params: OrganizationParamsSchema,
        body: Ref(SavedViewCreateSchema),
        response: responses({ 201: Ref(SavedViewSchema) }, 401, 403, 404, 413, 415),
      },
      config: { access: 'VIEW_CRM', apiKeys: true, idempotent: true },
      validatorCompiler: bodyUnchecked,
    },
    async (request, reply) => {
      reply.code(201);
      return createView(requireTenant(request), viewerOf(request), request.body);
    },
  );

  app.get(
    `${base}/:view_id/`,
    {
      schema: {
        ...documented,
        operationId: 'getView',
        summary: 'One saved view (VIEW_CRM).',
        description: SEEN_NOTE + CONDITIONAL_GET_NOTE,
        params: ViewParamsSchema,
        ...conditionalRead(Ref(SavedViewSchema)),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => sendRecord(request, reply, await getView(requireTenant(request), viewerOf(request), viewIdOf(request))),
  );

  app.patch(
    `${base}/:view_id/`,
    {
      schema: {
        ...documented,
        operationId: 'updateView',
        summary: "Change a saved view's name, filter, search, sort, columns or visibility.",
        description:
          WRITE_NOTE +
          'Send only the parts to change; each is replaced whole (`filter: null` removes the filter). Making a personal ' +
          'view a workspace view needs MANAGE_CRM; only its creator makes a workspace view personal again (403 ' +
          'otherwise). `object` cannot change (400). ' +
          CHECK_NOTE +
          'Written to the audit log (`view.updated`). ' +
          ETAG_NOTE,
        params: ViewParamsSchema,
        body: Ref(SavedViewUpdateSchema),
        ...conditionalWrite({ 200: tagged(Ref(SavedViewSchema)) }, 413, 415),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
      validatorCompiler: bodyUnchecked,
    },
    async (request, reply) => {
      const view = await updateView(requireTenant(request), viewerOf(request), viewIdOf(request), request.body, ifMatch(request));
      return withEtag(reply, view);
    },
  );

  app.delete(
    `${base}/:view_id/`,
    {
      schema: {
        ...documented,
        operationId: 'deleteView',
        summary: 'Delete a saved view.',
        description:
          WRITE_NOTE +
          'Lists through it answer 404 from then on. Written to the audit log (`view.deleted`). With `If-Match`, only a ' +
          'view still at that version (412 `precondition_failed` otherwise).',
        params: ViewParamsSchema,
        ...conditionalWrite({ 204: NoContent }),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      await deleteView(requireTenant(request), viewerOf(request), viewIdOf(request), ifMatch(request));
      return reply.code(204).send(null);
    },
  );
};
