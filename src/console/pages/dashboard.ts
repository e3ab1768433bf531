// The dashboard and the production readiness page.
import type { FastifyInstance } from 'fastify';
import { requestTransport } from '../../http/request.js';
import { sendHtml, viewerOf } from '../request.js';
import { dashboardPage, readinessPage } from '../views/dashboard.js';

export default async function dashboardPages(app: FastifyInstance) {
  const { installation, console } = app.services;

  app.get('/', async (request, reply) => {
    const [counts, database, readiness, backups] = await Promise.all([
      console.dashboard.counts(),
      console.dashboard.databaseStatus(),
      installation.readiness(requestTransport(request, app.config.trustProxy)),
      installation.backupStatus(),
    ]);
    return sendHtml(reply, dashboardPage(viewerOf(request), { counts, database, readiness, backups }));
  });

  app.get('/readiness/', async (request, reply) => {
    const [readiness, backups] = await Promise.all([
      installation.readiness(requestTransport(request, app.config.trustProxy)),
      installation.backupStatus(),
    ]);
    return sendHtml(reply, readinessPage(viewerOf(request), readiness, backups));
  });
}
