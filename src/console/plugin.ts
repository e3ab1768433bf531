// The admin console under /admin: its own cookie session, CSRF and Origin checks, headers and error pages; the pages
// of each area live in pages/, their markup in views/.
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type {} from '../http/contexts.js';
import { ProblemError } from '../lib/problem.js';
import { UserAdminError } from '../users/user-admin-service.js';
import auditPages from './pages/audit.js';
import dashboardPages from './pages/dashboard.js';
import invitationPages from './pages/invitations.js';
import queuePages from './pages/queues.js';
import signInPages, { sessionCookieOptions } from './pages/sign-in.js';
import userPages from './pages/users.js';
import workspacePages from './pages/workspaces.js';
import automationPages from './pages/automations.js';
import { ConsoleHttpError, field, sendHtml } from './request.js';
import { SESSION_COOKIE, csrfToken, csrfTokenValid } from './sessions.js';
import { CONSOLE_CSS } from './stylesheet.js';
import { errorPage } from './views/layout.js';

const CSP = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'";
const FORM_BODY_LIMIT = 16 * 1024;

function sameOrigin(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.host}`;
}

export default async function consolePlugin(app: FastifyInstance) {
  const secret = app.config.jwtSecret;
  const cookieOptions = sessionCookieOptions(app);
  const { signIn } = app.services.console;

  // The console is not an API: its routes stay out of the OpenAPI document (whose description says it exists).
  // Every route is in the `console` context (a staff session) except the sign-in pages, marked `consolePublic`.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    route.config = { ...route.config, authContext: route.config?.consolePublic ? 'public' : 'console' };
  });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: FORM_BODY_LIMIT });
  app.decorateRequest('consoleSession', null);
  app.decorateRequest('consoleViewer', null);

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CSP);
    reply.header('cache-control', 'no-store');
    reply.header('x-frame-options', 'DENY');
    // Helmet's no-referrer makes browsers send `Origin: null` on form posts; same-origin keeps the Origin check usable.
    reply.header('referrer-policy', 'same-origin');
    return payload;
  });

  // Runs after the body is parsed: the session decides first, then a state change must be same-origin and carry the token.
  app.addHook('preHandler', async (request, reply) => {
    const cookieValue = request.cookies[SESSION_COOKIE];
    const session = cookieValue ? await signIn.session(cookieValue) : null;
    request.consoleSession = session;
    request.consoleViewer = session ? { username: session.user.username, csrf: csrfToken(secret, session.idHash) } : null;
    if (request.method === 'POST') {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded'))
        throw new ConsoleHttpError(415, 'Unsupported form', 'Forms must be sent as application/x-www-form-urlencoded.');
      if (!sameOrigin(request))
        throw new ConsoleHttpError(403, 'Forbidden', 'This request came from another site and was refused. Nothing was changed.');
    }
    if (request.routeOptions.config.consolePublic) return;
    if (!session) {
      if (cookieValue) reply.clearCookie(SESSION_COOKIE, cookieOptions);
      const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
      return reply.redirect(`/admin/login/${next}`, 303);
    }
    if (request.method === 'POST' && !csrfTokenValid(secret, session.idHash, field(request.body, '_csrf'))) {
      throw new ConsoleHttpError(
        403,
        'Forbidden',
        'The form was missing its security token or the token was wrong (maybe the page is old). ' +
          'Nothing was changed; reload the page and try again.',
      );
    }
  });

  app.setErrorHandler((error: FastifyError | ConsoleHttpError, request, reply) => {
    const user = request.consoleViewer ?? undefined;
    const show = (status: number, title: string, message: string) => sendHtml(reply, errorPage(status, title, message, user), status);
    if (error instanceof ConsoleHttpError) return show(error.statusCode, error.title, error.message);
    // A refusal of a reused API service (e.g. revoking an invitation that is no longer pending) keeps its status and text.
    if (error instanceof ProblemError) {
      if (error.headers) reply.headers(error.headers);
      return show(error.status, error.title, error.detail);
    }
    if (error instanceof UserAdminError) {
      return error.code === 'not_found' ? show(404, 'Not found', error.message) : show(409, 'Refused', error.message);
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status === 429)
      return sendHtml(reply, errorPage(429, 'Too many attempts', 'Too many sign-in attempts. Wait a minute and try again.'), 429);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return show(413, 'Form too large', 'The form was too large and was refused. Nothing was changed.');
    if (status >= 400 && status < 500) return show(400, 'Bad request', 'The request could not be read. Nothing was changed.');
    request.log.error({ err: error }, 'console error');
    return show(500, 'Server error', 'Something went wrong on the server.');
  });
  app.setNotFoundHandler((request, reply) =>
    sendHtml(reply, errorPage(404, 'Not found', 'There is nothing at this address.', request.consoleViewer ?? undefined), 404),
  );

  app.get('/static/console.css', { config: { consolePublic: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').send(CONSOLE_CSS),
  );

  for (const pages of [signInPages, dashboardPages, userPages, workspacePages, automationPages, invitationPages, queuePages, auditPages]) {
    await app.register(pages);
  }
}
