// Routes of deals: those of the record kernel (list with stage, company, assignee and archived filters, sync, export,
// create, read, update, delete, archive and restore) for the deal record type, and the deal's own: the kanban move and
// the pipeline summary. Reads need VIEW_CRM, writes MANAGE_CRM; workspace API keys may call them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { conditionalWrite, ifMatch, tagged, withEtag } from '../../http/etag.js';
import { requireTenant } from '../../http/request.js';
import { OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { registerRecordRoutes } from '../../records/record-routes.js';
import { scopeOf } from '../../records/scope.js';
import { dealRecord } from './record.js';
import { DealMoveSchema, DealParamsSchema, DealPipelineStageSchema, DealSchema } from './schemas.js';

const documented = { tags: ['deals'] };
const read = { access: 'VIEW_CRM', apiKeys: true } as const;
const write = { access: 'MANAGE_CRM', apiKeys: true } as const;

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const deals = app.services.deals;
  registerRecordRoutes(app, dealRecord, deals);

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
    async (request) => {
      const tenant = requireTenant(request);
      return deals.pipeline(tenant.db, tenant.organization.id);
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
    async (request, reply) => withEtag(reply, await deals.move(scopeOf(request), request.params.deal_id, request.body, ifMatch(request))),
  );
};
