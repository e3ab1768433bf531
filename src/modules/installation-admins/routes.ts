// Routes of installation-administrator invitations: the list and sending (installation admins), preview and accept.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { assertInstallationAdmin } from '../../lib/current-user.js';
import { requireUser, userAudit } from '../../http/request.js';
import { Ref, responses } from '../../lib/http-schemas.js';
import { defaultEmptyBody } from '../../http/optional-body.js';
import { AcceptBodySchema, LinkTokenParamsSchema } from '../invitations/schemas.js';
import {
  AdminInvitationAcceptedSchema,
  AdminInvitationCreateSchema,
  AdminInvitationPreviewSchema,
  AdminInvitationSchema,
  AdminOverviewSchema,
} from './schemas.js';

const tags = ['installation-admins'];

const requireInstallationAdmin = async (request: FastifyRequest) =>
  assertInstallationAdmin(requireUser(request), 'manage installation administrators');

/** The overview and sending invitations: installation administrators only. */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const admins = app.services.installationAdmins;

  app.get(
    '/organizations/installation-admin-invitations/',
    {
      schema: {
        tags,
        operationId: 'listInstallationAdmins',
        summary: 'Installation administrators and their pending invitations (installation administrators only).',
        response: responses({ 200: Ref(AdminOverviewSchema) }, 401, 403),
      },
      preHandler: requireInstallationAdmin,
    },
    async () => admins.overview(),
  );

  app.post(
    '/organizations/installation-admin-invitations/',
    {
      schema: {
        tags,
        operationId: 'inviteInstallationAdmin',
        summary: 'Invite another installation administrator by email (installation administrators only).',
        description:
          'Always sent through the installation fallback SMTP: 400 `email_not_configured` without it, even when ' +
          'workspaces have their own accounts (nothing is created then). The link is ' +
          '`<SERVICE_APP_URL>/installation-admin-invite/<token>`, single use, seven days. Inviting an address again ' +
          "revokes its earlier links. 409 `already_administrator` for an administrator's address. Rate-limited per user.",
        body: Ref(AdminInvitationCreateSchema),
        response: responses({ 201: Ref(AdminInvitationSchema) }, 401, 403, 409, 429),
      },
      preHandler: [requireInstallationAdmin, app.rateLimitPreset('adminInvitations')],
    },
    async (request, reply) => {
      const invitation = await admins.invite(requireUser(request), request.body.email, userAudit(request));
      reply.code(201);
      return invitation;
    },
  );
};

/** The invitation link: its token is the credential (accepting also takes a Bearer token, for existing users). */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const admins = app.services.installationAdmins;

  app.get(
    '/installation-admin-invitations/:token/',
    {
      schema: {
        tags,
        operationId: 'previewInstallationAdminInvitation',
        summary: 'The invited address and expiry of an installation-administrator link.',
        description: 'Public: the token is the credential. Unknown, accepted, expired and revoked links are all 404 `invitation_invalid`.',
        params: LinkTokenParamsSchema,
        response: responses({ 200: Ref(AdminInvitationPreviewSchema) }, 404),
      },
    },
    async (request) => admins.preview(request.params.token),
  );

  app.post(
    '/installation-admin-invitations/:token/accept/',
    {
      schema: {
        tags,
        operationId: 'acceptInstallationAdminInvitation',
        summary: 'Accept an installation-administrator link once and become an installation administrator.',
        description:
          'Grants superuser and staff status and no workspace membership. New users: no Authorization header and a ' +
          'registration body (409 `account_exists` when the invited address has an account: sign in instead). Existing ' +
          'users: Bearer token, no body or `{}`, and the invited address (403 `invitation_email_mismatch`). Replayed, ' +
          'expired and revoked links are 404 `invitation_invalid`.',
        params: LinkTokenParamsSchema,
        body: Ref(AcceptBodySchema),
        response: responses({ 201: Ref(AdminInvitationAcceptedSchema) }, 401, 403, 404, 409),
      },
      preValidation: defaultEmptyBody,
      config: { identifyUser: true },
    },
    async (request, reply) => {
      const accepted = await admins.accept(request.params.token, request.currentUser, request.body, { ip: request.ip });
      reply.code(201);
      return accepted;
    },
  );
};
