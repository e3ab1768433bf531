// The deletions feed (`GET …/deletions/`): how a client that keeps a copy of CRM records learns which were deleted,
// alongside the lists' incremental sync (`updated_since`).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { DEFAULT_LIMIT, decodeSyncCursor, encodeSyncCursor, pageResponse } from '../../lib/pagination.js';
import { linkNext } from '../../http/pagination.js';
import { requireTenant } from '../../http/request.js';
import { DeletionListQuerySchema, DeletionSchema } from './schemas.js';

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/deletions/',
    {
      schema: {
        tags: ['sync'],
        operationId: 'listDeletions',
        summary: 'Companies, contacts, deals, tasks and notes deleted since an instant, for clients that keep a copy (VIEW_CRM).',
        description:
          "The feed that completes a list's incremental sync (`updated_since`): every company, contact, deal, task or note " +
          "deleted after `since` (a company's contacts, deals and tasks included, when the company took them with it, and notes left without targets), in the order the deletions " +
          'committed, each once. Like the sync, it never ends: every page links on, a page shorter than `limit` means ' +
          '"caught up for now". Tombstones are kept 30 days; a deleted workspace leaves none.',
        params: OrganizationParamsSchema,
        querystring: DeletionListQuerySchema,
        response: responses({ 200: pageResponse(Ref(DeletionSchema), 'Deletions, oldest first.') }, 401, 403, 404, 410),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const { items, next } = await app.services.deletions.list(requireTenant(request).pages, {
        since: new Date(request.query.since),
        after: decodeSyncCursor(request.query.cursor),
        limit,
        recordType: request.query.record_type,
      });
      linkNext(request, reply, next && encodeSyncCursor(next), limit);
      return items;
    },
  );
};
