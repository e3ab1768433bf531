// The workspaces pages and the actions on a workspace (provisioning and API keys, through the API's own services).
import type { FastifyInstance } from 'fastify';
import { auditOf, choice, idParam, notFound, notice, pageNumber, query, redirectDone, sendHtml, sessionOf, viewerOf } from '../request.js';
import { WORKSPACE_STATUSES } from '../services/workspaces.js';
import { workspacePage, workspacesPage } from '../views/workspaces.js';

export default async function workspacePages(app: FastifyInstance) {
  const { organizations, console } = app.services;

  app.get('/organizations/', async (request, reply) => {
    const filter = {
      search: query(request, 'search').slice(0, 200),
      status: choice(query(request, 'status'), WORKSPACE_STATUSES),
      page: pageNumber(request),
    };
    return sendHtml(reply, workspacesPage(viewerOf(request), filter, await console.workspaces.list(filter)));
  });

  app.get('/organizations/:id/', async (request, reply) => {
    const workspace = await console.workspaces.detail(idParam(request));
    if (!workspace) throw notFound('No such workspace.');
    return sendHtml(reply, workspacePage(viewerOf(request), notice(request), workspace));
  });

  app.post('/organizations/:id/api-keys/:key_id/revoke/', async (request, reply) => {
    const id = idParam(request);
    const { key_id: keyId } = request.params as { key_id: string };
    if (!(await console.workspaces.revokeApiKey(id, keyId, auditOf(request)))) throw notFound('No such workspace.');
    return redirectDone(reply, `/admin/organizations/${id}/`, 'API key revoked: it is refused from its next request.');
  });

  app.post('/organizations/:id/resend-owner-invitation/', async (request, reply) => {
    const id = idParam(request);
    const actor = await console.users.actor(sessionOf(request).user.id);
    await organizations.resendOwnerInvitation(actor, id, auditOf(request));
    return redirectDone(reply, `/admin/organizations/${id}/`, 'A fresh owner invitation was sent.');
  });

  app.post('/organizations/:id/cancel/', async (request, reply) => {
    const id = idParam(request);
    const actor = await console.users.actor(sessionOf(request).user.id);
    await organizations.cancelProvisioning(actor, id, auditOf(request));
    return redirectDone(reply, `/admin/organizations/${id}/`, 'Workspace cancelled.');
  });
}
