// Registers the five endpoints every CRM record collection has (list, create, read, update, delete) in the tenant
// context, reads needing VIEW_CRM and writes MANAGE_CRM.
import type { Readable } from 'node:stream';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TenantDb } from '../db/tenant-scope.js';
import { positionIn } from '../db/page-query.js';
import type { PageTable } from '../db/page-table.js';
import type { TenantPages } from '../db/tenant-pages.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../lib/http-schemas.js';
import {
  DEFAULT_LIMIT,
  decodeListCursor,
  decodeSyncCursor,
  encodeListCursor,
  encodeSyncCursor,
  listOrderOf,
  NEWEST_FIRST,
  pageOf,
  pageResponse,
  type ListOrder,
  type ListPageRequest,
} from '../lib/pagination.js';
import { linkNext, sendPage } from '../http/pagination.js';
import { validationFailed } from '../lib/problem.js';
import { ActivityQuerySchema, ActivitySchema } from './activity-schemas.js';
import { activityPage } from './activity-service.js';
import { requestAudit, requireTenant } from '../http/request.js';
import { recordAudit } from '../modules/audit/audit-log.js';
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
import type { CrmScope } from './record-service.js';

export interface RecordSchemas {
  record: TObject;
  create: TObject;
  update: TObject;
  /** The page parameters (limit, cursor) plus the collection's own filters. */
  listQuery: TObject;
  /** The organization and the record id (`idParam`). */
  params: TObject;
}

/** What the routes call (a `recordService`); the service owns the behaviour. */
export interface RecordService<S extends RecordSchemas, Filters> {
  list(pages: TenantPages, filters: Filters, page: ListPageRequest): Promise<ApiRecord<S>[]>;
  csv(pages: TenantPages, filters: Filters, order: ListOrder, fields: readonly string[]): Promise<Readable>;
  get(db: TenantDb, id: string): Promise<Static<S['record']>>;
  create(scope: CrmScope, body: Static<S['create']>): Promise<Static<S['record']>>;
  update(scope: CrmScope, id: string, body: Static<S['update']>, expected?: '*' | Date[]): Promise<Static<S['record']>>;
  remove(scope: CrmScope, id: string, expected?: '*' | Date[]): Promise<void>;
  archive(scope: CrmScope, id: string, expected?: '*' | Date[]): Promise<Static<S['record']>>;
  restore(scope: CrmScope, id: string, expected?: '*' | Date[]): Promise<Static<S['record']>>;
}

export interface RecordCollection<S extends RecordSchemas, Filters> {
  tag: string;
  /** Names in operationIds and summaries: `{one: 'Company', many: 'Companies'}`. */
  names: { one: string; many: string };
  /** The collection path under the tenant prefix, e.g. `/companies/`. */
  path: string;
  idParam: string;
  schemas: S;
  /** The service filters of a list request (everything but the page parameters). */
  filters(query: Static<S['listQuery']>): Filters;
  /** Extra documentation per endpoint, where the collection differs from the common behaviour. */
  notes: { list: string; create: string; update: string; delete: string };
  /** The record's key on its activity entries. */
  timeline: 'companyId' | 'contactId';
  /** The CSV export's columns, in order: the collection's API fields (its page table's columns and timestamps). */
  exportFields: readonly string[];
  /** The list's table: its sorts tell a page's position. */
  table: PageTable<unknown, string>;
  /** The equality filters of a list request as columns, which a sync applies too (`search` and `sort` it refuses). */
  syncFilters(query: Static<S['listQuery']>): Record<string, string | undefined>;
  service: RecordService<S, Filters>;
}

/** A record in API shape: every collection's has an `id` and an ISO `created_at` (the keyset position). */
type ApiRecord<S extends RecordSchemas> = Static<S['record']> & { id: string; created_at: string };

/** Who makes a CRM change, as its timeline entries keep it: the signed-in user, else the workspace API key. */
export function actorOf(request: FastifyRequest): CrmScope['actor'] {
  const { currentUser, apiKey } = request;
  return currentUser
    ? { type: 'user', id: currentUser.id, name: currentUser.username }
    : { type: 'api_key', id: apiKey?.id ?? null, name: apiKey?.name ?? null };
}

/** The CRM scope (tenant-bound client, writer and organization id) of a route in the tenant context. */
export function scopeOf(request: FastifyRequest): CrmScope {
  const tenant = requireTenant(request);
  return { db: tenant.db, organizationId: tenant.organization.id, writes: tenant.writes, actor: actorOf(request) };
}

export function registerRecordRoutes<S extends RecordSchemas, Filters>(
  app: FastifyInstance,
  collection: RecordCollection<S, Filters>,
): void {
  const { tag, names, path, idParam, schemas, service, notes } = collection;
  const item = `${path}:${idParam}/`;
  const one = names.one.toLowerCase();
  const read = { access: 'VIEW_CRM', apiKeys: true } as const;
  const write = { access: 'MANAGE_CRM', apiKeys: true } as const;
  const common = { tags: [tag] };
  const idOf = (request: FastifyRequest) => (request.params as Record<string, string>)[idParam] ?? '';

  app.get(
    path,
    {
      schema: {
        ...common,
        operationId: `list${names.many}`,
        summary: `${names.many} of a workspace, newest first unless sorted (VIEW_CRM).`,
        description: notes.list,
        params: OrganizationParamsSchema,
        querystring: schemas.listQuery,
        response: responses({ 200: pageResponse(Ref(schemas.record), `${names.many}, in the order of \`sort\`.`) }, 401, 403, 404),
      },
      config: read,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as Static<S['listQuery']> & { limit?: number; cursor?: string; sort?: string; updated_since?: string };
      const limit = query.limit ?? DEFAULT_LIMIT;
      if (query.updated_since !== undefined) return syncPage(request, reply, query, limit);
      const order = query.sort ? listOrderOf(query.sort) : NEWEST_FIRST;
      const types = (collection.table.sorts[order.sort] ?? []).map((key) => key.type);
      const rows = await service.list(requireTenant(request).pages, collection.filters(query), {
        order,
        after: decodeListCursor(query.cursor, order, types),
        limit,
      });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      if (rows.length > limit && last) linkNext(request, reply, encodeListCursor(order, positionIn(collection.table, order, last)), limit);
      return items;
    },
  );

  /**
   * An incremental sync: the changes after `updated_since` in the order their transactions wrote them, as a feed that
   * never ends: every page links on (a short page means "caught up for now": poll its link later).
   */
  async function syncPage(
    request: FastifyRequest,
    reply: FastifyReply,
    query: { cursor?: string; sort?: string; search?: string; updated_since?: string },
    limit: number,
  ) {
    if (query.sort !== undefined || query.search) {
      throw validationFailed(
        { updated_since: ['A sync takes neither `sort` nor `search`: it is in the order of the changes.'] },
        'Query parameters are invalid.',
      );
    }
    const after = decodeSyncCursor(query.cursor);
    const rows = await requireTenant(request).pages.changes(collection.table as PageTable<Record<string, unknown>, string>, {
      since: new Date(String(query.updated_since)),
      after,
      limit,
      equals: collection.syncFilters(query as Static<S['listQuery']>),
    });
    const last = rows.at(-1);
    // Nothing handed out yet: the same request again (it starts from `updated_since` as this one did).
    const next = last ? { xid: last.sync_xid, id: String(last.id) } : after;
    linkNext(request, reply, next && encodeSyncCursor(next), limit);
    return rows.map(({ sync_xid: _position, ...row }) => row);
  }

  app.get(
    `${path}export/`,
    {
      schema: {
        ...common,
        operationId: `export${names.many}`,
        summary: `Every ${one} matching the list's search and filters as a CSV file, in the list's order (VIEW_CRM).`,
        description:
          `Streams \`text/csv\` (RFC 4180, CRLF, UTF-8, a header row of the API field names: ${collection.exportFields.map((f) => `\`${f}\``).join(', ')}), ` +
          "as an attachment. Accepts the list's `search` and filters, not its page parameters. A cell starting with `=`, `+`, " +
          "`-` or `@` is prefixed with `'` so that a spreadsheet does not run it as a formula (an import strips it again). " +
          'Empty cells are null fields. Each export is written to the audit log (`crm.exported`) with its caller, a user or a ' +
          'workspace API key. Sent compressed (`Content-Encoding: br` or `gzip`) when `Accept-Encoding` asks for it: a ' +
          'million companies are about 220 MB as CSV and 45 MB in gzip.',
        params: OrganizationParamsSchema,
        querystring: Type.Omit(schemas.listQuery, ['limit', 'cursor']),
        response: responses(
          {
            200: {
              description: `${names.many} as CSV.`,
              headers: { 'Content-Disposition': Type.String({ description: 'attachment; filename="….csv"' }) },
              content: { 'text/csv': { schema: Type.String({ description: 'RFC 4180 CSV with a header row.' }) } },
            },
          },
          401,
          403,
          404,
        ),
      },
      config: read,
      // A bulk download: compressed when the client accepts it (plugins/compression.ts).
      compress: {},
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as Static<S['listQuery']> & { sort?: string };
      const filters = collection.filters(query);
      const tenant = requireTenant(request);
      // A whole collection leaving the service is recorded, with who took it (a user or a key). On the primary: a GET's
      // tenant handles may read a replica, which takes no writes.
      await recordAudit(app.db, {
        ...requestAudit(request),
        action: 'crm.exported',
        target: { type: tag, id: null },
        organizationId: tenant.organization.id,
      });
      const order = query.sort ? listOrderOf(query.sort) : NEWEST_FIRST;
      const stream = await service.csv(tenant.pages, filters, order, collection.exportFields);
      return reply.type('text/csv; charset=utf-8').header('Content-Disposition', `attachment; filename="${tag}.csv"`).send(stream);
    },
  );

  app.post(
    path,
    {
      schema: {
        ...common,
        operationId: `create${names.one}`,
        summary: `Create a ${one} (MANAGE_CRM).`,
        description: notes.create,
        params: OrganizationParamsSchema,
        body: Ref(schemas.create),
        response: responses({ 201: Ref(schemas.record) }, 401, 403, 404),
      },
      config: { ...write, idempotent: true },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.code(201);
      return service.create(scopeOf(request), request.body as Static<S['create']>);
    },
  );

  app.get(
    item,
    {
      schema: {
        ...common,
        operationId: `get${names.one}`,
        summary: `One ${one} (VIEW_CRM).`,
        description: CONDITIONAL_GET_NOTE,
        params: schemas.params,
        ...conditionalRead(Ref(schemas.record)),
      },
      config: read,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const record = await service.get(requireTenant(request).db, idOf(request));
      return sendRecord(request, reply, record as Static<S['record']> & { updated_at: string });
    },
  );

  app.patch(
    item,
    {
      schema: {
        ...common,
        operationId: `update${names.one}`,
        summary: `Change some fields of a ${one} (MANAGE_CRM).`,
        description: notes.update,
        params: schemas.params,
        body: Ref(schemas.update),
        ...conditionalWrite({ 200: tagged(Ref(schemas.record)) }),
      },
      config: write,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const record = await service.update(scopeOf(request), idOf(request), request.body as Static<S['update']>, ifMatch(request));
      return withEtag(reply, record as Static<S['record']> & { updated_at: string });
    },
  );

  for (const [action, change] of [
    ['archive', 'Archive'],
    ['restore', 'Restore'],
  ] as const) {
    app.post(
      `${item}${action}/`,
      {
        schema: {
          ...common,
          operationId: `${action}${names.one}`,
          summary: `${change} a ${one} (MANAGE_CRM).`,
          description:
            (action === 'archive'
              ? `Sets \`archived_at\`: the ${one} leaves the default list (\`archived=active\`) and shows under \`archived=archived\` ` +
                'and `archived=all`. Adds an `archived` timeline entry and dispatches the `updated` event. Archiving an archived ' +
                `${one} changes nothing.`
              : `Clears \`archived_at\`. Adds a \`restored\` timeline entry and dispatches the \`updated\` event. Restoring an active ${one} changes nothing.`) +
            ` ${archiveIfMatchNote(one)}`,
          params: schemas.params,
          ...conditionalWrite({ 200: tagged(Ref(schemas.record)) }),
        },
        config: write,
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const record = await service[action](scopeOf(request), idOf(request), ifMatch(request));
        return withEtag(reply, record as Static<S['record']> & { updated_at: string });
      },
    );
  }

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
          '`deal_detached`, `task_attached`, `task_detached`), each with its actor and time, written in the same ' +
          'transaction as the change. Pages follow the `Link: rel="next"` header.',
        params: schemas.params,
        querystring: ActivityQuerySchema,
        response: responses({ 200: pageResponse(Ref(ActivitySchema), 'Timeline entries, newest first.') }, 401, 403, 404),
      },
      config: read,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as Static<typeof ActivityQuerySchema>;
      const { db } = requireTenant(request);
      const id = idOf(request);
      await service.get(db, id);
      const page = pageOf(query);
      const record = collection.timeline === 'companyId' ? { companyId: id } : { contactId: id };
      return sendPage(request, reply, await activityPage(db, record, page), page.limit);
    },
  );

  app.delete(
    item,
    {
      schema: {
        ...common,
        operationId: `delete${names.one}`,
        summary: `Delete a ${one} (MANAGE_CRM).`,
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
