// The audit log page.
import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../audit/audit-log.js';
import { choice, pageNumber, query, sendHtml, sessionOf, viewerOf } from '../request.js';
import { auditPage } from '../views/audit.js';

export default async function auditPages(app: FastifyInstance) {
  const { console } = app.services;

  app.get('/audit/', async (request, reply) => {
    const filter = {
      actor: query(request, 'actor').slice(0, 150),
      action: choice(query(request, 'action'), AUDIT_ACTIONS),
      page: pageNumber(request),
    };
    return sendHtml(reply, auditPage(viewerOf(request), filter, await console.audit.list(sessionOf(request).user.id, filter)));
  });
}
