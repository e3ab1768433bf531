// Routes of workspace invitations: managing them inside an organization, and the public preview and accept of a link.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireTenant, requireUser, userAudit } from '../../http/request.js';
import { sendPage } from '../../http/pagination.js';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { defaultEmptyBody } from '../../http/optional-body.js';
import { PageQuerySchema, pageOf, pageResponse } from '../../lib/pagination.js';
import {
  AcceptBodySchema,
  InvitationAcceptedSchema,
  InvitationCreateSchema,
  InvitationParamsSchema,
  InvitationPreviewSchema,
  InvitationSchema,
  LinkTokenParamsSchema,
} from './schemas.js';

const tags = ['invitations'];

/** Managing the invitations of the workspace in the path (MANAGE_MEMBERS). */
export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const invitations = app.services.invitations;
  // A preHandler, after the context's capability check: refused attempts do not use up anyone's quota.
  const sendLimit = app.rateLimitPreset('invitations');

  app.get(
    '/invitations/',
    {
      schema: {
        tags,
        operationId: 'listInvitations',
        summary: "Invitation history of a workspace, with each invitation's status (owner and admin only).",
        description:
          'Every invitation sent through this endpoint, newest first. Owner handoffs of provisioned workspaces are not ' +
          'listed (they belong to provisioning). Members and viewers get 403; workspaces you are not a member of, 404.',
        params: OrganizationParamsSchema,
        querystring: PageQuerySchema,
        response: responses({ 200: pageResponse(Ref(InvitationSchema), 'Invitations, newest first.') }, 401, 403, 404),
      },
      config: { access: 'MANAGE_MEMBERS' },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      return sendPage(request, reply, await invitations.list(requireTenant(request), page), page.limit);
    },
  );

  app.post(
    '/invitations/',
    {
      schema: {
        tags,
        operationId: 'createInvitation',
        summary: 'Invite someone to a workspace by email (owner and admin only).',
        description:
          "Emails a single-use link valid for seven days through the workspace's active default email account, or the " +
          'installation fallback SMTP (400 `email_not_configured` when there is neither; nothing is created then). ' +
          '`role` `owner` is a 400 (not invitable); `admin` needs the owner (403 `admin_invite_requires_owner`). A personal ' +
          'workspace cannot invite (403 `personal_workspace`). 409 `already_member` when the address belongs to a member, ' +
          '409 `invitation_pending` when a pending invitation for it exists (resend or revoke that one). Rate-limited per user.',
        params: OrganizationParamsSchema,
        body: Ref(InvitationCreateSchema),
        response: responses({ 201: Ref(InvitationSchema) }, 401, 403, 404, 409, 429),
      },
      config: { access: 'MANAGE_MEMBERS', idempotent: true },
      preHandler: sendLimit,
    },
    async (request, reply) => {
      reply.code(201);
      return invitations.create(requireTenant(request), requireUser(request), request.body, userAudit(request));
    },
  );

  app.delete(
    '/invitations/:invitation_id/',
    {
      schema: {
        tags,
        operationId: 'revokeInvitation',
        summary: 'Revoke a pending invitation; its link stops working.',
        description:
          'Only invitations of the workspace in the path (any other id is a 404). Admins cannot revoke admin invitations ' +
          '(403 `admin_invite_requires_owner`). An invitation that is not pending is a 409 `invitation_not_pending`.',
        params: InvitationParamsSchema,
        response: responses({ 204: NoContent }, 401, 403, 404, 409),
      },
      config: { access: 'MANAGE_MEMBERS' },
    },
    async (request, reply) => {
      await invitations.revoke(requireTenant(request), requireUser(request), request.params.invitation_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/invitations/:invitation_id/resend/',
    {
      schema: {
        tags,
        operationId: 'resendInvitation',
        summary: 'Email a fresh seven-day invitation and revoke the earlier links to the same address.',
        description:
          'Takes no body. Works for pending, expired and revoked invitations of the workspace in the path (any other id ' +
          'is a 404) and answers with the new invitation, same address and role. Accepted invitations are a 409 ' +
          '`invitation_accepted`, addresses that became members a 409 `already_member`. Admins cannot resend admin ' +
          'invitations (403). Without a usable email account: 400 `email_not_configured`, nothing changes. Rate-limited ' +
          'together with sending.',
        params: InvitationParamsSchema,
        response: responses({ 201: Ref(InvitationSchema) }, 401, 403, 404, 409, 429),
      },
      config: { access: 'MANAGE_MEMBERS' },
      preHandler: sendLimit,
    },
    async (request, reply) => {
      reply.code(201);
      return invitations.resend(requireTenant(request), requireUser(request), request.params.invitation_id, userAudit(request));
    },
  );
};

/** The invitation link: its token is the credential (accepting also takes a Bearer token, for existing users). */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const links = app.services.invitationLinks;

  app.get(
    '/invitations/:token/',
    {
      schema: {
        tags,
        operationId: 'previewInvitation',
        summary: 'What an invitation link offers: workspace, role, invited address.',
        description: 'Public: the token is the credential. Unknown, accepted, expired and revoked links are all 404 `invitation_invalid`.',
        params: LinkTokenParamsSchema,
        response: responses({ 200: Ref(InvitationPreviewSchema) }, 404),
      },
    },
    async (request) => links.preview(request.params.token),
  );

  app.post(
    '/invitations/:token/accept/',
    {
      schema: {
        tags,
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
        body: Ref(AcceptBodySchema),
        response: responses({ 201: Ref(InvitationAcceptedSchema) }, 401, 403, 404, 409),
      },
      preValidation: defaultEmptyBody,
      config: { identifyUser: true },
    },
    async (request, reply) => {
      const accepted = await links.accept(request.params.token, request.currentUser, request.body, { ip: request.ip });
      reply.code(201);
      return accepted;
    },
  );
};
