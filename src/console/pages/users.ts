// The users pages and the actions an operator takes on a user (each through the API's own services).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { auditOf, choice, idParam, notFound, notice, pageNumber, query, redirectDone, sendHtml, viewerOf } from '../request.js';
import type { UserFilter } from '../services/users.js';
import { userPage, usersPage } from '../views/users.js';

const YES_NO = ['yes', 'no'] as const;

export default async function userPages(app: FastifyInstance) {
  const { users, sessions, console } = app.services;

  app.get('/users/', async (request, reply) => {
    const filter: UserFilter = {
      search: query(request, 'search').slice(0, 254),
      staff: choice(query(request, 'staff'), YES_NO) as UserFilter['staff'],
      active: choice(query(request, 'active'), YES_NO) as UserFilter['active'],
      page: pageNumber(request),
    };
    return sendHtml(reply, usersPage(viewerOf(request), filter, await console.users.list(filter)));
  });

  app.get('/users/:id/', async (request, reply) => {
    const user = await console.users.detail(idParam(request));
    if (!user) throw notFound('No such user.');
    // The API sessions as the user sees them (none is "current" here: the operator is not that user).
    const apiSessions = await sessions.list(user.id, '');
    return sendHtml(reply, userPage(viewerOf(request), notice(request), user, apiSessions));
  });

  const userAction = (path: string, run: (userId: string, request: FastifyRequest) => Promise<unknown>, done: string) =>
    app.post(`/users/:id/${path}/`, async (request, reply) => {
      const userId = idParam(request);
      await run(userId, request);
      return redirectDone(reply, `/admin/users/${userId}/`, done);
    });
  userAction('deactivate', (id, request) => users.deactivate(id, auditOf(request)), 'User deactivated and signed out everywhere.');
  userAction('reactivate', (id, request) => users.reactivate(id, auditOf(request)), 'User reactivated.');
  userAction('sign-out-everywhere', (id, request) => users.signOutEverywhere(id, auditOf(request)), 'User signed out everywhere.');
  userAction(
    'send-password-reset',
    async (id, request) => {
      if (!(await console.users.sendPasswordReset(id, auditOf(request)))) throw notFound('No such user.');
    },
    'Password reset email queued.',
  );

  app.post('/users/:id/sessions/:session_id/end/', async (request, reply) => {
    const userId = idParam(request);
    const { session_id: sessionId } = request.params as { session_id: string };
    await sessions.end(userId, sessionId, auditOf(request));
    return redirectDone(reply, `/admin/users/${userId}/`, 'Session ended.');
  });
}
