// Registers a record type's list (keyset pages in its sorts, through a saved view with `view`, or an incremental sync
// with `updated_since`) and, when its definition names export fields, its CSV export.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { positionIn } from '../db/page-query.js';
import type { PageTable } from '../db/page-table.js';
import { linkNext } from '../http/pagination.js';
import { requestAudit, requireTenant } from '../http/request.js';
import { OrganizationParamsSchema, Ref, responses } from '../lib/http-schemas.js';
import {
  DEFAULT_LIMIT,
  decodeListCursor,
  decodeSyncCursor,
  encodeListCursor,
  encodeSyncCursor,
  listOrderOf,
  NEWEST_FIRST,
  pageResponse,
  type ListOrder,
} from '../lib/pagination.js';
import { validationFailed } from '../lib/problem.js';
import { recordAudit } from '../audit/audit-log.js';
import { routesOf, type RecordType } from './definition.js';
import type { RecordService } from './record-service.js';
import { actorOf } from './scope.js';
import { viewListPage } from './view-list.js';
import { MAX_VIEW_COLUMNS } from './views.js';

/** The page and sync parameters every list takes besides the type's own filters. */
type ListQuery = { limit?: number; cursor?: string; sort?: string; search?: string; updated_since?: string; view?: string };

/** The list's query parameters, with `view` for a type with queries (whose cursors may be as long as a query's). */
function listQueryOf(type: Pick<RecordType<unknown>, 'schemas' | 'query'>) {
  const { listQuery } = type.schemas;
  if (!type.query) return listQuery;
  return Type.Object({
    ...listQuery.properties,
    cursor: Type.Optional(
      Type.String({ maxLength: 4000, description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.' }),
    ),
    view: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          "A saved view's id (`GET …/views/`): lists through it, its filter ANDed with this list's own filters, in its " +
          "sort (ties by `id`), with its `search`; `search` and `sort` given here replace the view's. Pages and `Link` " +
          'as without a view; the cursor belongs to the sort in force (with another, 400). 404 `view_not_found` for a ' +
          "view the caller cannot see (another member's personal view, another workspace's, an unknown or malformed id) " +
          'and for a view of another record type. 400 `view_field_archived` when the view names a field this record ' +
          `type no longer has (an archived custom field), with its path in the view in \`errors\`. Not with \`updated_since\`. ` +
          `(Columns, at most ${MAX_VIEW_COLUMNS}, are for the client to show: the records carry all their fields.)`,
      }),
    ),
  });
}

export function registerListRoutes<Row, Dto extends Record<string, unknown>, Query, Create, Update>(
  app: FastifyInstance,
  type: RecordType<Row, Dto, Query>,
  service: RecordService<Dto, Create, Update>,
  summary: string,
): void {
  const { names, schemas, notes, table } = type;
  const { tag, path } = routesOf(type);
  const one = names.one.toLowerCase();
  const read = { access: 'VIEW_CRM', apiKeys: true } as const;
  const common = { tags: [tag] };
  const orderOf = (query: ListQuery): ListOrder => (query.sort ? (type.orderOf ?? listOrderOf)(query.sort) : NEWEST_FIRST);

  app.get(
    path,
    {
      schema: {
        ...common,
        operationId: `list${names.many}`,
        summary,
        description: notes.list,
        params: OrganizationParamsSchema,
        querystring: listQueryOf(type),
        response: responses(
          { 200: pageResponse(Ref(schemas.record), notes.page ?? `${names.many}, in the order of \`sort\`.`) },
          401,
          403,
          404,
        ),
      },
      config: read,
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as ListQuery;
      const limit = query.limit ?? DEFAULT_LIMIT;
      if (query.view !== undefined && type.query) return viewPage(request, reply, query, limit);
      if (type.sync && query.updated_since !== undefined) return syncPage(request, reply, query, limit);
      const order = orderOf(query);
      const types = (table.sorts[order.sort] ?? []).map((key) => key.type);
      const rows = await service.list(requireTenant(request).pages, type.filters(query as Query, actorOf(request)), {
        order,
        after: decodeListCursor(query.cursor, order, types),
        limit,
      });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      if (rows.length > limit && last) linkNext(request, reply, encodeListCursor(order, positionIn(table, order, last)), limit);
      return items;
    },
  );

  /** A page through a saved view: the query machinery's order and cursors, the list's answer (an array and `Link`). */
  async function viewPage(request: FastifyRequest, reply: FastifyReply, query: ListQuery, limit: number) {
    if (query.updated_since !== undefined) {
      throw validationFailed({ view: ['A view lists pages: it takes no `updated_since`.'] }, 'Query parameters are invalid.');
    }
    const page = await viewListPage<Dto>(requireTenant(request), type, request.currentUser?.id ?? null, query.view ?? '', {
      filter: type.filters(query as Query, actorOf(request)),
      order: query.sort ? orderOf(query) : undefined,
      limit,
      cursor: query.cursor,
    });
    if (page.next_cursor) linkNext(request, reply, page.next_cursor, limit);
    return page.results;
  }

  /**
   * An incremental sync: the changes after `updated_since` in the order their transactions wrote them, as a feed that
   * never ends: every page links on (a short page means "caught up for now": poll its link later). It selects by the
   * list's filters but not by archive state (an archive is a change the client must see).
   */
  async function syncPage(request: FastifyRequest, reply: FastifyReply, query: ListQuery, limit: number) {
    if (query.sort !== undefined || query.search) {
      throw validationFailed(
        { updated_since: ['A sync takes neither `sort` nor `search`: it is in the order of the changes.'] },
        'Query parameters are invalid.',
      );
    }
    const after = decodeSyncCursor(query.cursor);
    const { equals, conditions } = type.filters(query as Query, actorOf(request));
    const rows = await requireTenant(request).pages.changes(table as PageTable<Record<string, unknown>, string>, {
      since: new Date(String(query.updated_since)),
      after,
      limit,
      equals,
      conditions,
    });
    const last = rows.at(-1);
    // Nothing handed out yet: the same request again (it starts from `updated_since` as this one did).
    const next = last ? { xid: last.sync_xid, id: String(last.id) } : after;
    linkNext(request, reply, next && encodeSyncCursor(next), limit);
    return rows.map(({ sync_xid: _position, ...row }) => row);
  }

  const { exportFields } = type;
  if (!exportFields) return;
  app.get(
    `${path}export/`,
    {
      schema: {
        ...common,
        operationId: `export${names.many}`,
        summary: `Every ${one} matching the list's search and filters as a CSV file, in the list's order (VIEW_CRM).`,
        description:
          `Streams \`text/csv\` (RFC 4180, CRLF, UTF-8, a header row of the API field names: ${exportFields.map((f) => `\`${f}\``).join(', ')}${
            type.customFields ? ", then a `custom.<key>` column per active custom field (a multi_select's values joined by `;`)" : ''
          }), ` +
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
      const query = request.query as ListQuery;
      const filter = type.filters(query as Query, actorOf(request));
      const tenant = requireTenant(request);
      // A whole collection leaving the service is recorded, with who took it (a user or a key). On the primary: a GET's
      // tenant handles may read a replica, which takes no writes.
      await recordAudit(app.db, {
        ...requestAudit(request),
        action: 'crm.exported',
        target: { type: tag, id: null },
        organizationId: tenant.organization.id,
      });
      const stream = await service.csv(tenant.pages, filter, orderOf(query), exportFields);
      return reply.type('text/csv; charset=utf-8').header('Content-Disposition', `attachment; filename="${tag}.csv"`).send(stream);
    },
  );
}
