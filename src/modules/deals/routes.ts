// Routes of deals: list (stage, company, assignee, archived filters; keyset pages), create, read, update, delete,
// archive and restore, the kanban move and the pipeline summary. Reads need VIEW_CRM, writes MANAGE_CRM; workspace
// API keys may call them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageResponse, positionOfApiRow } from '../../lib/pagination.js';
import { paginate } from '../../http/pagination.js';
import { requireTenant } from '../../http/request.js';
import { actorOf } from '../crm/record-routes.js';
import { DealBodySchemas, DealListQuerySchema, DealMoveSchema, DealParamsSchema, DealPipelineStageSchema, DealSchema } from './schemas.js';
import { Type } from '@sinclair/typebox';

const documented = { tags: ['deals'] };
const read = { access: 'VIEW_CRM', apiKeys: true } as const;
const write = { access: 'MANAGE_CRM', apiKeys: true } as const;
const one = responses({ 200: Ref(DealSchema) }, 401, 403, 404);

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
      schema: { ...documented, operationId: 'getDeal', summary: 'One deal (VIEW_CRM).', params: DealParamsSchema, response: one },
      config: read,
    },
    async (request) => deals.get(requireTenant(request), request.params.deal_id),
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
          '`deal.stage_changed`; `lost_reason` is required while the stage is `lost`.',
        params: DealParamsSchema,
        body: Ref(DealBodySchemas.update),
        response: one,
      },
      config: write,
    },
    async (request) => deals.update(requireTenant(request), actorOf(request), request.params.deal_id, request.body),
  );

  app.delete(
    '/deals/:deal_id/',
    {
      schema: {
        ...documented,
        operationId: 'deleteDeal',
        summary: 'Delete a deal (MANAGE_CRM); the deals after it in its stage move up.',
        params: DealParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: write,
    },
    async (request, reply) => {
      await deals.remove(requireTenant(request), request.params.deal_id);
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
          '`previous_stage`). An archived deal cannot move (400).',
        params: DealParamsSchema,
        body: Ref(DealMoveSchema),
        response: one,
      },
      config: write,
    },
    async (request) => deals.move(requireTenant(request), request.params.deal_id, request.body),
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
          params: DealParamsSchema,
          response: one,
        },
        config: write,
      },
      async (request) => deals.setArchived(requireTenant(request), request.params.deal_id, archived),
    );
  }
};
