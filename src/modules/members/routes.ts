// Routes of workspace memberships: list, change a role (ownership transfer included), remove or leave.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { userAudit } from '../../plugins/auth.js';
import { requireTenant } from '../../plugins/tenancy.js';
import { NoContent, OrganizationParamsSchema, responses } from '../../lib/http-schemas.js';
import { PageQuerySchema, pageOf, pageResponse, paginate } from '../../lib/pagination.js';
import { MemberParamsSchema, MemberSchema, MemberUpdateSchema } from './schemas.js';
import { listMembers, removeMember, toMemberDto, updateMemberRole, type MemberContext } from './service.js';

const security = [{ bearerAuth: [] }];
const tags = ['members'];

function memberContext(request: FastifyRequest): MemberContext {
  const tenant = requireTenant(request);
  return { db: tenant.db, organization: tenant.organization, actorMembershipId: tenant.membershipId };
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/organizations/:organization_id/members/',
    {
      schema: {
        tags,
        security,
        operationId: 'listMembers',
        summary: 'Members of a workspace (owner or admin).',
        description: 'Memberships are created only by accepting an invitation; there is no endpoint to add a member directly.',
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses({ 200: pageResponse(MemberSchema, 'Members, newest first.') }, 401, 403, 404),
      },
      preHandler: [app.resolveTenant, app.requireCapability('MANAGE_MEMBERS')],
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return paginate(request, reply, await listMembers(requireTenant(request).db, page), page.limit).map(toMemberDto);
    },
  );

  app.patch(
    '/organizations/:organization_id/members/:membership_id/',
    {
      schema: {
        tags,
        security,
        operationId: 'updateMember',
        summary: "Change a member's role, or transfer ownership (owner or admin).",
        description:
          '`{"role": "owner"}` by the owner transfers ownership: the target becomes the owner and the previous owner an ' +
          'admin (403 `owner_required` for anyone else). Only the owner grants or changes `admin` (403 `owner_required`); ' +
          "admins move other members between `member` and `viewer`. The owner's own role changes only through a transfer " +
          '(403 `owner_role_locked`). Personal workspaces: 403 `personal_workspace`. Answers the changed member.',
        params: MemberParamsSchema,
        body: MemberUpdateSchema,
        response: responses({ 200: MemberSchema }, 401, 403, 404),
      },
      preHandler: [app.resolveTenant, app.requireCapability('MANAGE_MEMBERS')],
    },
    async (request) => updateMemberRole(memberContext(request), request.params.membership_id, request.body.role, userAudit(request)),
  );

  app.delete(
    '/organizations/:organization_id/members/:membership_id/',
    {
      schema: {
        tags,
        security,
        operationId: 'removeMember',
        summary: 'Remove a member, or leave the workspace with your own membership id.',
        description:
          'Any member may leave. The owner may remove anyone else; an admin may remove members and viewers (403 ' +
          '`owner_required` for an admin); other roles get 403. The owner can never be removed (403 ' +
          '`owner_cannot_be_removed`): transfer ownership first.',
        params: MemberParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      preHandler: [app.resolveTenant],
    },
    async (request, reply) => {
      await removeMember(memberContext(request), request.params.membership_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );
};
export default routes;
