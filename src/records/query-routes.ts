// Registers a record type's query (POST …/{object}/query/) in the tenant context (VIEW_CRM, API keys too). Its body is
// checked by the query service, which reports each problem at its path; the schema documents the typed tree.
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireTenant } from '../http/request.js';
import { OrganizationParamsSchema, Ref, responses } from '../lib/http-schemas.js';
import { routesOf, type RecordType } from './definition.js';
import { RecordQuerySchema } from './filter/schema.js';
import type { TenantPages } from '../db/tenant-pages.js';
import type { QueryDefinition } from './filter/resolve.js';
import type { QueryPage } from './query-service.js';

/** Passes a part through as it came: the service checks the body, the tenant context the organization id. */
const unchecked = () => (data: unknown) => ({ value: data });

export function registerQueryRoute<Row, Dto extends Record<string, unknown>, Query>(
  app: FastifyInstance,
  type: RecordType<Row, Dto, Query>,
  query: QueryDefinition,
  run: (pages: TenantPages, body: unknown) => Promise<QueryPage<Dto>>,
  page: TSchema,
): void {
  const { names } = type;
  const { tag, path } = routesOf(type);
  const fields = Object.keys(query.fields)
    .map((field) => `\`${field}\``)
    .join(', ');
  app.post(
    `${path}query/`,
    {
      schema: {
        tags: [tag],
        operationId: `query${names.many}`,
        summary: `${names.many} matching a filter tree, sorted and paged (VIEW_CRM).`,
        description:
          `Fields: ${fields}` +
          (query.company ? '; and `company.<field>`, a field of the linked company (empty when there is none)' : '') +
          '. ' +
          (query.search ? "`search` is the list's search, combined with the filter. " : '`search` answers 400: this type has no search. ') +
          'Pages are complete (`limit` records unless it is the last, `next_cursor` null) and exact under concurrent ' +
          'writes for records whose sort keys do not change. A malformed filter, sort or cursor answers 400 with the path ' +
          'of each offending node in `errors` (`filter.and.1.field`, `sort.0.field`). See docs/queries.md.',
        params: OrganizationParamsSchema,
        body: Ref(RecordQuerySchema as never),
        response: responses({ 200: Ref(page) }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
      validatorCompiler: unchecked,
    },
    async (request: FastifyRequest, _reply: FastifyReply) => run(requireTenant(request).pages, request.body),
  );
}
