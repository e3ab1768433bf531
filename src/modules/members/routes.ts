// Routes of workspace memberships: list, change a role (ownership transfer included), remove or leave.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireTenant, userAudit } from '../../http/request.js';
import { sendPage } from '../../http/pagination.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { PageQuerySchema, pageOf, pageResponse } from '../../lib/pagination.js';
import { MemberParamsSchema, MemberSchema, MemberUpdateSchema } from './schemas.js';

const tags = ['members'];

/** Memberships of the workspace in the path. */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const members = app.services.members;
  app.get(
    '/members/',
    {
      schema: {
        tags,
        operationId: 'listMembers',
        summary: 'Members of a workspace (owner or admin).',
        description: 'Memberships are created only by accepting an invitation; there is no endpoint to add a member directly.',
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses({ 200: pageResponse(Ref(MemberSchema), 'Members, newest first.') }, 401, 403, 404),
      },
      config: { access: 'MANAGE_MEMBERS' },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await members.list(requireTenant(request), page), page.limit);
    },
  );

  app.patch(
    '/members/:membership_id/',
    {
      schema: {
        tags,
        operationId: 'updateMember',
        summary: "Change a member's role, or transfer ownership (owner or admin).",
        description:
          '`{"role": "owner"}` by the owner transfers ownership: the target becomes the owner and the previous owner an ' +
          'admin (403 `owner_required` for anyone else). Only the owner grants or changes `admin` (403 `owner_required`); ' +
          "admins move other members between `member` and `viewer`. The owner's own role changes only through a transfer " +
          '(403 `owner_role_locked`). Personal workspaces: 403 `personal_workspace`. Answers the changed member.',
        params: MemberParamsSchema,
        body: Ref(MemberUpdateSchema),
        response: responses({ 200: Ref(MemberSchema) }, 401, 403, 404),
      },
      config: { access: 'MANAGE_MEMBERS' },
    },
    async (request) => members.updateRole(requireTenant(request), request.params.membership_id, request.body.role, userAudit(request)),
  );

  app.delete(
    '/members/:membership_id/',
    {
      schema: {
        tags,
        operationId: 'removeMember',
        summary: 'Remove a member, or leave the workspace with your own membership id.',
        description:
          'Any member may leave. The owner may remove anyone else; an admin may remove members and viewers (403 ' +
          '`owner_required` for an admin); other roles get 403. The owner can never be removed (403 ' +
          '`owner_cannot_be_removed`): transfer ownership first.',
        params: MemberParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404),
      },
      config: { access: 'member' },
    },
    async (request, reply) => {
      await members.remove(requireTenant(request), request.params.membership_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );
};
