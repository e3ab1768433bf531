// The workspace invitations page and the installation administrators page, with their actions.
import type { FastifyInstance } from 'fastify';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { assertInstallationAdmin } from '../../lib/current-user.js';
import {
  auditOf,
  ConsoleHttpError,
  choice,
  field,
  idParam,
  notFound,
  notice,
  pageNumber,
  query,
  redirectDone,
  sendHtml,
  sessionOf,
  viewerOf,
} from '../request.js';
import { INVITATION_STATUSES } from '../services/invitations.js';
import { installationAdminsPage, invitationsPage } from '../views/invitations.js';

export default async function invitationPages(app: FastifyInstance) {
  const { installationAdmins, console } = app.services;

  app.get('/invitations/', async (request, reply) => {
    const filter = { status: choice(query(request, 'status'), INVITATION_STATUSES), page: pageNumber(request) };
    const page = await console.invitations.list(filter.status, filter.page);
    return sendHtml(reply, invitationsPage(viewerOf(request), notice(request), filter, page));
  });

  app.post('/invitations/:id/revoke/', async (request, reply) => {
    if (!(await console.invitations.revoke(idParam(request), sessionOf(request).user, auditOf(request)))) {
      throw notFound('No such invitation.');
    }
    return redirectDone(reply, '/admin/invitations/', 'Invitation revoked: its link no longer works.');
  });

  app.get('/installation-admins/', async (request, reply) =>
    sendHtml(reply, installationAdminsPage(viewerOf(request), notice(request), await installationAdmins.overview())),
  );

  // The API's own invitation (installation fallback SMTP, audit row, rate limit per inviter), not a copy of it.
  app.post('/installation-admins/invite/', { preHandler: app.rateLimitPreset('adminInvitations') }, async (request, reply) => {
    const email = field(request.body, 'email').trim();
    // The same email format the API's schemas check.
    if (email.length > 254 || !(fullFormats.email as RegExp).test(email)) {
      throw new ConsoleHttpError(400, 'Invalid email', 'Enter a valid email address. Nothing was sent.');
    }
    const inviter = await console.users.actor(sessionOf(request).user.id);
    assertInstallationAdmin(inviter, 'invite installation administrators');
    await installationAdmins.invite(inviter, email, auditOf(request));
    return redirectDone(reply, '/admin/installation-admins/', 'Invitation sent.');
  });
}
