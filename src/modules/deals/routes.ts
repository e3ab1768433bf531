// Routes of deals: list (stage, company, assignee, archived filters; keyset pages), create, read, update, delete,
// archive and restore, the kanban move and the pipeline summary. Reads need VIEW_CRM, writes MANAGE_CRM; workspace
// API keys may call them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageResponse, positionOfApiRow } from '../../lib/pagination.js';
import { paginate } from '../../http/pagination.js';
import { requireTenant } from '../../http/request.js';
import {
  archiveIfMatchNote,
  CONDITIONAL_GET_NOTE,
  conditionalRead,
  conditionalWrite,
  ifMatch,
  sendRecord,
  tagged,
  withEtag,
} from '../../http/etag.js';
import { actorOf } from '../../records/record-routes.js';
import { DealBodySchemas, DealListQuerySchema, DealMoveSchema, DealParamsSchema, DealPipelineStageSchema, DealSchema } from './schemas.js';
import { Type } from '@sinclair/typebox';

const documented = { tags: ['deals'] };
const read = { access: 'VIEW_CRM', apiKeys: true } as const;
const write = { access: 'MANAGE_CRM', apiKeys: true } as const;
/** What a deal's version covers: every field, its board `position` too. */
const VERSION_NOTE =
  "The `ETag` is the deal's version: every change of the deal moves it on, a change of its board `position` by " +
  "another deal's move, insert, archive or deletion in its stage too. ";

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const deals = app.services.deals;

  app.get(
    '/deals/',
    {
      schema: {
        ...documented,
        operationId: 'listDeals',
        summary: 'Deals of a workspace, newest first (VIEW_CRM).',
        description:
          '`stage`, `company_id`, `assigned_to`: only those deals. `archived`: `active` (default), `archived` or `all`. ' +
          'Pages follow the `Link: rel="next"` header.',
        params: OrganizationParamsSchema,
        querystring: DealListQuerySchema,
        response: responses({ 200: pageResponse(Ref(DealSchema), 'Deals, newest first.') }, 401, 403, 404),
      },
      config: read,
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return paginate(request, reply, await deals.list(requireTenant(request), request.query, page), page.limit, positionOfApiRow);
    },
  );

  app.post(
    '/deals/',
    {
      schema: {
        ...documented,
        operationId: 'createDeal',
        summary: 'Create a deal (MANAGE_CRM).',
        description:
          '`stage` defaults to `lead`; the deal goes last in its stage. `currency` defaults to `EUR`, `value` and ' +
          '`tax_rate` to 0. `lost_reason` is required with stage `lost`. Accepts `Idempotency-Key`.',
        params: OrganizationParamsSchema,
        body: Ref(DealBodySchemas.create),
        response: responses({ 201: Ref(DealSchema) }, 401, 403, 404),
      },
      config: { ...write, idempotent: true },
    },
    async (request, reply) => {
      reply.code(201);
      return deals.create(requireTenant(request), actorOf(request), request.body);
    },
  );

  app.get(
    '/deals/pipeline/',
    {
      schema: {
        ...documented,
        operationId: 'getDealPipeline',
        summary: 'The pipeline: per stage, the count of active deals and their net and gross sums per currency (VIEW_CRM).',
        params: OrganizationParamsSchema,
        response: responses(
          { 200: Type.Array(Ref(DealPipelineStageSchema), { description: 'Every stage, in board order.' }) },
          401,
          403,
          404,
        ),
      },
      config: read,
    },
    async (request) => deals.pipeline(requireTenant(request)),
  );

  app.get(
    '/deals/:deal_id/',
    {
      schema: {
        ...documented,
        operationId: 'getDeal',
        summary: 'One deal (VIEW_CRM).',
        description: VERSION_NOTE + CONDITIONAL_GET_NOTE,
        params: DealParamsSchema,
        ...conditionalRead(Ref(DealSchema)),
      },
      config: read,
    },
    async (request, reply) => sendRecord(request, reply, await deals.get(requireTenant(request), request.params.deal_id)),
  );

  app.patch(
    '/deals/:deal_id/',
    {
      schema: {
        ...documented,
        operationId: 'updateDeal',
        summary: 'Change some fields of a deal (MANAGE_CRM).',
        description:
          'Partial: absent fields stay unchanged. A changed `stage` puts the deal last in its new stage and dispatches ' +
          '`deal.stage_changed`; `lost_reason` is required while the stage is `lost`. With `If-Match`, a deal that ' +
          'changed since answers 412 and nothing is written (no timeline entry, no event).',
        params: DealParamsSchema,
        body: Ref(DealBodySchemas.update),
        ...conditionalWrite({ 200: tagged(Ref(DealSchema)) }),
      },
      config: write,
    },
    async (request, reply) =>
      withEtag(reply, await deals.update(requireTenant(request), actorOf(request), request.params.deal_id, request.body, ifMatch(request))),
  );

  app.delete(
    '/deals/:deal_id/',
    {
      schema: {
        ...documented,
        operationId: 'deleteDeal',
        summary: 'Delete a deal (MANAGE_CRM); the deals after it in its stage move up.',
        description: 'With `If-Match`, a deal that changed since answers 412 and stays.',
        params: DealParamsSchema,
        ...conditionalWrite({ 204: NoContent }),
      },
      config: write,
    },
    async (request, reply) => {
      await deals.remove(requireTenant(request), request.params.deal_id, ifMatch(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/deals/:deal_id/move/',
    {
      schema: {
        ...documented,
        operationId: 'moveDeal',
        summary: 'Move a deal on the board: to `position` of `stage` (MANAGE_CRM).',
        description:
          'The deals of the stages involved are renumbered 0, 1, 2, … without gaps; concurrent moves take turns per ' +
          'stage, so the order stays consistent. A position past the end puts the deal last. Moving to `lost` needs a ' +
          '`lost_reason` (unless the deal has one). A change of stage dispatches `deal.stage_changed` (the deal, plus ' +
          '`previous_stage`). An archived deal cannot move (400). A move changes the deal (its `stage`, `position`, ' +
          '`updated_at`: a new `ETag`, answered), so it honours `If-Match` as PATCH does: a deal that changed since ' +
          '(moved by someone else, or shifted by a move of another deal in its stage) answers 412 and nothing moves.',
        params: DealParamsSchema,
        body: Ref(DealMoveSchema),
        ...conditionalWrite({ 200: tagged(Ref(DealSchema)) }),
      },
      config: write,
    },
    async (request, reply) =>
      withEtag(reply, await deals.move(requireTenant(request), request.params.deal_id, request.body, ifMatch(request))),
  );

  for (const [action, archived] of [
    ['archive', true],
    ['restore', false],
  ] as const) {
    app.post(
      `/deals/:deal_id/${action}/`,
      {
        schema: {
          ...documented,
          operationId: `${action}Deal`,
          summary: archived
            ? 'Archive a deal (MANAGE_CRM): it leaves the default list and the board; idempotent.'
            : 'Restore an archived deal (MANAGE_CRM): it goes last in its stage; idempotent.',
          description: archiveIfMatchNote('deal'),
          params: DealParamsSchema,
          ...conditionalWrite({ 200: tagged(Ref(DealSchema)) }),
        },
        config: write,
      },
      async (request, reply) =>
        withEtag(reply, await deals.setArchived(requireTenant(request), request.params.deal_id, archived, ifMatch(request))),
    );
  }
};
