// Routes of workspace invitations: managing them inside an organization, and the public preview and accept of a link.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { requireUser, userAudit } from '../../plugins/auth.js';
import { requireTenant } from '../../plugins/tenancy.js';
import { NoContent, OrganizationParamsSchema, responses } from '../../lib/http-schemas.js';
import { defaultEmptyBody } from '../../lib/optional-body.js';
import { DEFAULT_LIMIT, PageQuerySchema, decodeCursor, pageResponse, paginate } from '../../lib/pagination.js';
import {
  AcceptBodySchema,
  InvitationAcceptedSchema,
  InvitationCreateSchema,
  InvitationParamsSchema,
  InvitationPreviewSchema,
  InvitationSchema,
  LinkTokenParamsSchema,
} from './schemas.js';
import {
  acceptInvitation,
  createInvitation,
  listInvitations,
  previewInvitation,
  resendInvitation,
  revokeInvitation,
  toInvitationDto,
  type InvitationManager,
} from './service.js';

const security = [{ bearerAuth: [] }];
const tags = ['invitations'];

/** The signed-in caller and the organization in the path, as resolved by the tenant preHandlers. */
function managerOf(request: FastifyRequest): InvitationManager {
  const tenant = requireTenant(request);
  return { organization: tenant.organization, role: tenant.role, user: requireUser(request) };
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const deps = { db: app.db, appUrl: app.config.appUrl, tokens: app.tokens };
  const manage = [app.resolveTenant, app.requireCapability('MANAGE_MEMBERS')];
  // Counted only for callers allowed to send, so refused attempts do not use up anyone's quota.
  const send = [...manage, app.rateLimitPreset('invitations')];

  app.get(
    '/organizations/:organization_id/invitations/',
    {
      schema: {
        tags,
        security,
        operationId: 'listInvitations',
        summary: "Invitation history of a workspace, with each invitation's status (owner and admin only).",
        description:
          'Every invitation sent through this endpoint, newest first. Owner handoffs of provisioned workspaces are not ' +
          'listed (they belong to provisioning). Members and viewers get 403; workspaces you are not a member of, 404.',
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses({ 200: pageResponse(InvitationSchema, 'Invitations, newest first.') }, 401, 403, 404),
      },
      preHandler: manage,
    },
    async (request, reply) => {
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const rows = await listInvitations(requireTenant(request).db, { after: decodeCursor(request.query.cursor), limit });
      const now = new Date();
      return paginate(request, reply, rows, limit).map((row) => toInvitationDto(row, now));
    },
  );

  app.post(
    '/organizations/:organization_id/invitations/',
    {
      schema: {
        tags,
        security,
        operationId: 'createInvitation',
        summary: 'Invite someone to a workspace by email (owner and admin only).',
        description:
          "Emails a single-use link valid for seven days through the workspace's active default email account, or the " +
          'installation fallback SMTP (400 `email_not_configured` when there is neither; nothing is created then). ' +
          '`role` `owner` is a 400 (not invitable); `admin` needs the owner (403 `admin_invite_requires_owner`). A personal ' +
          'workspace cannot invite (403 `personal_workspace`). 409 `already_member` when the address belongs to a member, ' +
          '409 `invitation_pending` when a pending invitation for it exists (resend or revoke that one). Rate-limited per user.',
        params: OrganizationParamsSchema,
        body: InvitationCreateSchema,
        response: responses({ 201: InvitationSchema }, 401, 403, 404, 409, 429),
      },
      config: { idempotent: true },
      preHandler: send,
    },
    async (request, reply) => {
      const invitation = await createInvitation(deps, managerOf(request), request.body, userAudit(request));
      reply.code(201);
      return toInvitationDto(invitation, new Date());
    },
  );

  app.delete(
    '/organizations/:organization_id/invitations/:invitation_id/',
    {
      schema: {
        tags,
        security,
        operationId: 'revokeInvitation',
        summary: 'Revoke a pending invitation; its link stops working.',
        description:
          'Only invitations of the workspace in the path (any other id is a 404). Admins cannot revoke admin invitations ' +
          '(403 `admin_invite_requires_owner`). An invitation that is not pending is a 409 `invitation_not_pending`.',
        params: InvitationParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404, 409),
      },
      preHandler: manage,
    },
    async (request, reply) => {
      await revokeInvitation(app.db, managerOf(request), request.params.invitation_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/organizations/:organization_id/invitations/:invitation_id/resend/',
    {
      schema: {
        tags,
        security,
        operationId: 'resendInvitation',
        summary: 'Email a fresh seven-day invitation and revoke the earlier links to the same address.',
        description:
          'Takes no body. Works for pending, expired and revoked invitations of the workspace in the path (any other id ' +
          'is a 404) and answers with the new invitation, same address and role. Accepted invitations are a 409 ' +
          '`invitation_accepted`, addresses that became members a 409 `already_member`. Admins cannot resend admin ' +
          'invitations (403). Without a usable email account: 400 `email_not_configured`, nothing changes. Rate-limited ' +
          'together with sending.',
        params: InvitationParamsSchema,
        response: responses({ 201: InvitationSchema }, 401, 403, 404, 409, 429),
      },
      preHandler: send,
    },
    async (request, reply) => {
      const invitation = await resendInvitation(deps, managerOf(request), request.params.invitation_id, userAudit(request));
      reply.code(201);
      return toInvitationDto(invitation, new Date());
    },
  );

  app.get(
    '/invitations/:token/',
    {
      schema: {
        tags,
        operationId: 'previewInvitation',
        summary: 'What an invitation link offers: workspace, role, invited address.',
        description: 'Public: the token is the credential. Unknown, accepted, expired and revoked links are all 404 `invitation_invalid`.',
        params: LinkTokenParamsSchema,
        response: responses({ 200: InvitationPreviewSchema }, 404),
      },
    },
    async (request) => previewInvitation(app.db, request.params.token),
  );

  app.post(
    '/invitations/:token/accept/',
    {
      schema: {
        tags,
        security: [{}, { bearerAuth: [] }],
        operationId: 'acceptInvitation',
        summary: 'Accept an invitation link once and join the workspace.',
        description:
          'New users: no Authorization header, a registration body; the account gets the invited address (409 ' +
          '`account_exists` when it already has an account: sign in instead; 409 `username_taken`). Existing users: ' +
          'Bearer token and no body or `{}`; the account email must equal the invited address (403 ' +
          '`invitation_email_mismatch`, the link stays usable). Creates a membership in that workspace only; a user who ' +
          'already is a member keeps their membership (`membership_created: false`). Accepting an Owner handoff ' +
          'activates the workspace with you as owner. Replayed, expired and revoked links are 404 `invitation_invalid`.',
        params: LinkTokenParamsSchema,
        body: AcceptBodySchema,
        response: responses({ 201: InvitationAcceptedSchema }, 401, 403, 404, 409),
      },
      preValidation: defaultEmptyBody,
      preHandler: app.authenticateOptional,
    },
    async (request, reply) => {
      const accepted = await acceptInvitation(deps, request.params.token, request.currentUser, request.body, { ip: request.ip });
      reply.code(201);
      return accepted;
    },
  );
};
export default routes;
