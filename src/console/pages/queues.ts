// The pages of the background work: the email outbox (with retrying a failed email) and the automation runs.
import type { FastifyInstance } from 'fastify';
import { auditOf, choice, idParam, notice, pageNumber, query, redirectDone, sendHtml, viewerOf } from '../request.js';
import { RUN_STATUSES } from '../services/automation-runs.js';
import { OUTBOX_STATUSES } from '../services/outbox.js';
import { outboxPage, runsPage } from '../views/queues.js';

export default async function queuePages(app: FastifyInstance) {
  const { console } = app.services;

  app.get('/outbox/', async (request, reply) => {
    const filter = { status: choice(query(request, 'status'), OUTBOX_STATUSES), page: pageNumber(request) };
    const page = await console.outbox.list(filter.status, filter.page);
    return sendHtml(reply, outboxPage(viewerOf(request), notice(request), filter, page));
  });

  app.post('/outbox/:id/retry/', async (request, reply) => {
    const retried = await console.outbox.retry(idParam(request), auditOf(request));
    const done = retried ? 'Email queued again; the worker sends it shortly.' : 'That email is not failed (any more); nothing was changed.';
    return redirectDone(reply, '/admin/outbox/', done);
  });

  app.get('/automation-runs/', async (request, reply) => {
    const filter = { status: choice(query(request, 'status'), RUN_STATUSES), page: pageNumber(request) };
    return sendHtml(reply, runsPage(viewerOf(request), filter, await console.runs.list(filter.status, filter.page)));
  });
}
