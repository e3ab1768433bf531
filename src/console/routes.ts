// The admin console under /admin: its own cookie session, CSRF and Origin checks, headers, error pages and routes.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type {} from '../http/contexts.js';
import { html } from './html.js';
import { CONSOLE_CSS } from './stylesheet.js';
import { SESSION_COOKIE, csrfToken, csrfTokenValid, findSession, type ConsoleSession } from './sessions.js';
import {
  consoleSignIn,
  consoleSignOut,
  dashboardCounts,
  databaseStatus,
  listAudit,
  listOutbox,
  listUsers,
  retryEmail,
  userDetail,
  OUTBOX_STATUSES,
  RUN_STATUSES,
  WORKSPACE_STATUSES,
  listInvitationsAll,
  listRuns,
  listWorkspaces,
  sendPasswordReset,
  sharedCompanyIdentities,
  workspaceDetail,
  type UserFilter,
} from './console-service.js';
import { actionButton, backupTable, dataTable, errorPage, layout, loginPage, pager, select, yesNo } from './views.js';
import { requestTransport } from '../http/request.js';
import { UserAdminError } from '../users/user-admin-service.js';
import { AUDIT_ACTIONS, type AuditContext } from '../audit/audit-log.js';
import { bindOrganization } from '../db/tenant.js';
import { assertInstallationAdmin } from '../lib/current-user.js';
import { ProblemError } from '../lib/problem.js';

const SIGN_IN_FAILED = 'Please enter a correct username and password for a staff account.';
const CSP = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FORM_BODY_LIMIT = 16 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSession | null;
  }
  interface FastifyContextConfig {
    consolePublic?: boolean;
  }
}

class ConsoleHttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/** A `next` target only when it is a path inside the console (no scheme, no host, no `//` or backslash tricks). */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/admin/') || value.startsWith('//') || /[\\\s]/.test(value)) return '/admin/';
  return value;
}

const field = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
};
const query = (request: FastifyRequest, name: string) => field(request.query, name);
const pageNumber = (request: FastifyRequest) => {
  const page = Number(query(request, 'page') || '1');
  return Number.isInteger(page) && page >= 1 && page <= 100_000 ? page : 1;
};

function sameOrigin(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.host}`;
}

function idParam(request: FastifyRequest): string {
  const id = (request.params as { id?: string }).id ?? '';
  if (!UUID.test(id)) throw new ConsoleHttpError(404, 'Not found', 'There is nothing at this address.');
  return id;
}

/** The session of a console route past the session check (the preHandler redirects every request without one). */
function sessionOf(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw new ConsoleHttpError(401, 'Signed out', 'Your console session has ended. Sign in again.');
  return request.consoleSession;
}

export default async function consoleRoutes(app: FastifyInstance) {
  const { idleSeconds, maxSeconds } = app.config.adminSession;
  const secret = app.config.jwtSecret;
  const cookieOptions = { httpOnly: true, sameSite: 'strict' as const, path: '/admin', secure: app.config.nodeEnv === 'production' };

  // The console is not an API: its routes stay out of the OpenAPI document (whose description says it exists).
  // Every route is in the `console` context (a staff session) except the sign-in pages, marked `consolePublic`.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    route.config = { ...route.config, authContext: route.config?.consolePublic ? 'public' : 'console' };
  });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: FORM_BODY_LIMIT });
  app.decorateRequest('consoleSession', null);

  const audit = (request: FastifyRequest): AuditContext => {
    const user = sessionOf(request).user;
    return { actor: { type: 'user', userId: user.id, username: user.username }, ip: request.ip };
  };
  const pageUser = (request: FastifyRequest) =>
    request.consoleSession
      ? { username: request.consoleSession.user.username, csrf: csrfToken(secret, request.consoleSession.idHash) }
      : undefined;
  /** The form token of the signed-in page's forms. */
  const csrfOf = (request: FastifyRequest) => csrfToken(secret, sessionOf(request).idHash);
  /** The message an action redirected with (`?done=`), as a status line; nothing without one. */
  const doneNotice = (request: FastifyRequest) => {
    const notice = query(request, 'done');
    return notice ? html`<p class="notice" role="status">${notice}</p>` : '';
  };
  const page = (reply: FastifyReply, body: string, status = 200) => reply.code(status).type('text/html; charset=utf-8').send(body);

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
    request.consoleSession = cookieValue ? await findSession(app.db, cookieValue, idleSeconds) : null;
    if (request.method === 'POST') {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded'))
        throw new ConsoleHttpError(415, 'Unsupported form', 'Forms must be sent as application/x-www-form-urlencoded.');
      if (!sameOrigin(request))
        throw new ConsoleHttpError(403, 'Forbidden', 'This request came from another site and was refused. Nothing was changed.');
    }
    if (request.routeOptions.config.consolePublic) return;
    if (!request.consoleSession) {
      if (cookieValue) reply.clearCookie(SESSION_COOKIE, cookieOptions);
      const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
      return reply.redirect(`/admin/login/${next}`, 303);
    }
    if (request.method === 'POST' && !csrfTokenValid(secret, request.consoleSession.idHash, field(request.body, '_csrf'))) {
      throw new ConsoleHttpError(
        403,
        'Forbidden',
        'The form was missing its security token or the token was wrong (maybe the page is old). ' +
          'Nothing was changed; reload the page and try again.',
      );
    }
  });

  app.setErrorHandler((error: FastifyError | ConsoleHttpError, request, reply) => {
    const user = pageUser(request);
    if (error instanceof ConsoleHttpError)
      return page(reply, errorPage(error.statusCode, error.title, error.message, user), error.statusCode);
    // A refusal of a reused API service (e.g. revoking an invitation that is no longer pending) keeps its status and text.
    if (error instanceof ProblemError) {
      if (error.headers) reply.headers(error.headers);
      return page(reply, errorPage(error.status, error.title, error.detail, user), error.status);
    }
    if (error instanceof UserAdminError) {
      return page(
        reply,
        errorPage(error.code === 'not_found' ? 404 : 409, error.code === 'not_found' ? 'Not found' : 'Refused', error.message, user),
        error.code === 'not_found' ? 404 : 409,
      );
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status === 429)
      return page(reply, errorPage(429, 'Too many attempts', 'Too many sign-in attempts. Wait a minute and try again.'), 429);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return page(reply, errorPage(413, 'Form too large', 'The form was too large and was refused. Nothing was changed.', user), 413);
    if (status >= 400 && status < 500)
      return page(reply, errorPage(400, 'Bad request', 'The request could not be read. Nothing was changed.', user), 400);
    request.log.error({ err: error }, 'console error');
    return page(reply, errorPage(500, 'Server error', 'Something went wrong on the server.', user), 500);
  });
  app.setNotFoundHandler((request, reply) =>
    page(reply, errorPage(404, 'Not found', 'There is nothing at this address.', pageUser(request)), 404),
  );

  app.get('/static/console.css', { config: { consolePublic: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').send(CONSOLE_CSS),
  );

  app.get('/login/', { config: { consolePublic: true } }, async (request, reply) => {
    if (request.consoleSession) return reply.redirect(safeNext(query(request, 'next')), 303);
    return page(reply, loginPage(null, safeNext(query(request, 'next')), ''));
  });

  app.post(
    '/login/',
    { config: { consolePublic: true }, preHandler: [app.rateLimitPreset('tokenPerIp'), app.rateLimitPreset('token')] },
    async (request, reply) => {
      const username = field(request.body, 'username').slice(0, 150);
      const password = field(request.body, 'password').slice(0, 4096);
      const next = safeNext(field(request.body, 'next'));
      const id = username && password ? await consoleSignIn(app.db, { username, password }, request.ip, maxSeconds) : null;
      if (!id) return page(reply, loginPage(SIGN_IN_FAILED, next, username), 200);
      // The old session, if any, ends: the new id replaces it (no fixation).
      if (request.consoleSession) await app.db.adminSession.deleteMany({ where: { idHash: request.consoleSession.idHash } });
      reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions, maxAge: maxSeconds });
      return reply.redirect(next, 303);
    },
  );

  app.post('/logout/', async (request, reply) => {
    await consoleSignOut(app.db, sessionOf(request).idHash, audit(request));
    reply.clearCookie(SESSION_COOKIE, cookieOptions);
    return reply.redirect('/admin/login/', 303);
  });

  app.get('/', async (request, reply) => {
    const [counts, database, readiness, backups] = await Promise.all([
      dashboardCounts(app.db),
      databaseStatus(app.db),
      app.services.installation.readiness(requestTransport(request, app.config.trustProxy)),
      app.services.installation.backupStatus(),
    ]);
    const rows: [string, number, string][] = [
      ['Users', counts.users, '/admin/users/'],
      ['Active workspaces', counts.activeWorkspaces, '/admin/organizations/?status=active'],
      ['Pending handoffs', counts.pendingHandoffs, '/admin/organizations/?status=pending_owner'],
      ['Pending invitations', counts.pendingInvitations, '/admin/invitations/?status=pending'],
      ['Queued emails', counts.queuedEmails, '/admin/outbox/?status=pending'],
      ['Failed emails', counts.failedEmails, '/admin/outbox/?status=failed'],
      ['Automation runs failed in the last 24 hours', counts.failedRuns, '/admin/automation-runs/?status=failed'],
    ];
    return page(
      reply,
      layout(
        { title: 'Dashboard', user: pageUser(request) },
        html`
<h2>Counts</h2>
<table><thead><tr><th scope="col">What</th><th scope="col">Count</th></tr></thead><tbody>
${rows.map(
  ([name, n, href]) =>
    html`<tr><th scope="row">${href ? html`<a href="${href}">${name}</a>` : name}</th><td data-count="${name}">${String(n)}</td></tr>`,
)}
</tbody></table>
<h2>Database</h2>
<p>${
          database.ok
            ? html`Database reachable; ${String(database.migrations)} migrations applied,
the latest <code>${database.latest ?? 'none'}</code>.`
            : html`<span class="error">Database migration status unavailable.</span>`
        }</p>
<h2>Production readiness</h2>
<p data-readiness="${readiness.ready ? 'ready' : 'not-ready'}"><a href="/admin/readiness/">${String(readiness.passed)} of ${String(readiness.total)} checks pass</a>${
          readiness.ready
            ? '.'
            : html`; failing: ${readiness.checks
                .filter((c) => c.status === 'fail')
                .map((c) => c.key)
                .join(', ')}.`
        }</p>
<h2>Backups</h2>
${backupTable(backups)}
<p><a href="/admin/readiness/">Readiness and backup details</a></p>`,
      ),
    );
  });

  app.get('/readiness/', async (request, reply) => {
    const [readiness, backups] = await Promise.all([
      app.services.installation.readiness(requestTransport(request, app.config.trustProxy)),
      app.services.installation.backupStatus(),
    ]);
    return page(
      reply,
      layout(
        { title: 'Production readiness', user: pageUser(request) },
        html`
<p>${String(readiness.passed)} of ${String(readiness.total)} checks pass. The same checks answer
<code>GET /api/v1/installation/production-readiness/</code>.</p>
${dataTable(['Check', 'Status', 'Guidance'], readiness.checks, (c) => [html`<code>${c.key}</code>`, html`<span data-check="${c.key}">${c.status}</span>`, c.guidance])}
<h2>Backups</h2>
${backupTable(backups)}
<p>Backups and restore tests are recorded by <code>make backup</code> and <code>make restore-test</code>, or by an
operator's own scripts through <code>POST /api/v1/installation/backup-status/events/</code>.</p>`,
      ),
    );
  });

  app.get('/users/', async (request, reply) => {
    const yn = (v: string) => (v === 'yes' || v === 'no' ? v : '');
    const filter: UserFilter = {
      search: query(request, 'search').slice(0, 254),
      staff: yn(query(request, 'staff')),
      active: yn(query(request, 'active')),
      page: pageNumber(request),
    };
    const { rows, hasNext } = await listUsers(app.db, filter);
    const choices: [string, string][] = [
      ['', 'any'],
      ['yes', 'yes'],
      ['no', 'no'],
    ];
    return page(
      reply,
      layout(
        { title: 'Users', user: pageUser(request) },
        html`
<form method="get" action="/admin/users/">
<label for="search">Search</label> <input id="search" name="search" type="search" value="${filter.search}">
${select('staff', 'Staff', filter.staff, choices)} ${select('active', 'Active', filter.active, choices)}
<button type="submit">Filter</button>
</form>
${dataTable(['Username', 'Email', 'Staff', 'Superuser', 'Active', 'Date joined', 'Last sign-in'], rows, (u) => [
  html`<a href="/admin/users/${u.id}/">${u.username}</a>`,
  u.email,
  yesNo(u.isStaff),
  yesNo(u.isSuperuser),
  yesNo(u.isActive),
  u.dateJoined,
  u.lastLogin ?? 'never',
])}
${rows.length === 0 ? html`<p>No users match.</p>` : ''}
${pager('/admin/users/', { search: filter.search, staff: filter.staff, active: filter.active }, filter.page, hasNext)}`,
      ),
    );
  });

  app.get('/users/:id/', async (request, reply) => {
    const user = await userDetail(app.db, idParam(request));
    if (!user) throw new ConsoleHttpError(404, 'Not found', 'No such user.');
    // The API sessions as the user sees them (none is "current" here: the operator is not that user).
    const apiSessions = await app.services.sessions.list(user.id, '');
    const csrf = csrfOf(request);
    const base = `/admin/users/${user.id}`;
    return page(
      reply,
      layout(
        { title: `User ${user.username}`, user: pageUser(request) },
        html`
${doneNotice(request)}
<h2>Profile</h2>
<dl><dt>Username</dt><dd>${user.username}</dd><dt>Email</dt><dd>${user.email}</dd><dt>Staff</dt><dd>${yesNo(user.isStaff)}</dd>
<dt>Superuser</dt><dd>${yesNo(user.isSuperuser)}</dd>
<dt>Active</dt><dd>${yesNo(user.isActive)}</dd>
<dt>Date joined</dt><dd>${user.dateJoined}</dd>
<dt>Last sign-in</dt><dd>${user.lastLogin ?? 'never'}</dd><dt>Live console sessions</dt><dd>${String(user.liveSessions)}</dd>
<dt>Two-factor sign-in</dt><dd>${user.twoFactorEnabledAt ? 'on' : 'off'}</dd></dl>
<h2>Memberships</h2>
<table><thead><tr><th scope="col">Workspace</th><th scope="col">Slug</th><th scope="col">Role</th><th scope="col">Requires two-factor</th></tr></thead><tbody>
${user.memberships.map(
  (m) =>
    html`<tr><td>${m.organization.name}</td><td>${m.organization.slug}</td><td>${m.role}</td><td>${yesNo(m.organization.requireTwoFactor)}</td></tr>`,
)}
</tbody></table>
<h2>API sessions</h2>
${dataTable(['Signed in', 'Last used', 'Client', 'Address', ''], apiSessions, (s) => [
  s.created_at,
  s.last_used_at,
  s.user_agent ?? '',
  s.client_ip ?? '',
  actionButton(`${base}/sessions/${s.id}/end/`, 'End session', csrf),
])}
<h2>Actions</h2>
${user.isActive ? actionButton(`${base}/deactivate/`, 'Deactivate', csrf) : actionButton(`${base}/reactivate/`, 'Reactivate', csrf)}
${actionButton(`${base}/sign-out-everywhere/`, 'Sign out everywhere', csrf)}
${actionButton(`${base}/send-password-reset/`, 'Send password reset', csrf)}`,
      ),
    );
  });

  const userAction = (path: string, run: (userId: string, request: FastifyRequest) => Promise<void>, done: string) =>
    app.post(`/users/:id/${path}/`, async (request, reply) => {
      const userId = idParam(request);
      await run(userId, request);
      return reply.redirect(`/admin/users/${userId}/?done=${encodeURIComponent(done)}`, 303);
    });
  userAction(
    'deactivate',
    (id, request) => app.services.users.deactivate(id, audit(request)),
    'User deactivated and signed out everywhere.',
  );
  userAction('reactivate', (id, request) => app.services.users.reactivate(id, audit(request)), 'User reactivated.');
  userAction(
    'sign-out-everywhere',
    (id, request) => app.services.users.signOutEverywhere(id, audit(request)),
    'User signed out everywhere.',
  );

  app.post('/users/:id/sessions/:session_id/end/', async (request, reply) => {
    const userId = idParam(request);
    const { session_id: sessionId } = request.params as { session_id: string };
    await app.services.sessions.end(userId, sessionId, audit(request));
    return reply.redirect(`/admin/users/${userId}/?done=${encodeURIComponent('Session ended.')}`, 303);
  });

  app.post('/users/:id/send-password-reset/', async (request, reply) => {
    const userId = idParam(request);
    if (!(await sendPasswordReset(app.db, userId, audit(request)))) throw new ConsoleHttpError(404, 'Not found', 'No such user.');
    return reply.redirect(`/admin/users/${userId}/?done=${encodeURIComponent('Password reset email queued.')}`, 303);
  });

  app.get('/organizations/', async (request, reply) => {
    const search = query(request, 'search').slice(0, 200);
    const status = (WORKSPACE_STATUSES as readonly string[]).includes(query(request, 'status')) ? query(request, 'status') : '';
    const { rows, hasNext } = await listWorkspaces(app.db, { search, status, page: pageNumber(request) });
    const statusName = (s: string) => (s === 'pending_owner' ? 'pending handoff' : s);
    return page(
      reply,
      layout(
        { title: 'Workspaces', user: pageUser(request) },
        html`
<form method="get" action="/admin/organizations/">
<label for="search">Search</label> <input id="search" name="search" type="search" value="${search}">
${select('status', 'Status', status, [
  ['', 'any'],
  ['active', 'active'],
  ['pending_owner', 'pending handoff'],
  ['cancelled', 'cancelled'],
])}
<button type="submit">Filter</button></form>
${dataTable(['Name', 'Slug', 'Status', 'Kind', 'Owner', 'Members', 'Created'], rows, (o) => [
  html`<a href="/admin/organizations/${o.id}/">${o.name}</a>`,
  o.slug,
  statusName(o.status),
  o.isPersonal ? 'personal' : 'shared',
  o.memberships.map((m) => m.user.username).join(', ') || (o.ownerEmail ?? ''),
  String(o._count.memberships),
  o.createdAt,
])}
${pager('/admin/organizations/', { search, status }, pageNumber(request), hasNext)}`,
      ),
    );
  });

  const keyState = (k: { revoked_at: string | null; expires_at: string | null }) =>
    k.revoked_at !== null
      ? `revoked ${k.revoked_at}`
      : k.expires_at !== null && Date.parse(k.expires_at) <= Date.now()
        ? 'expired'
        : 'active';

  app.get('/organizations/:id/', async (request, reply) => {
    const o = await workspaceDetail(app.db, idParam(request));
    if (!o) throw new ConsoleHttpError(404, 'Not found', 'No such workspace.');
    const shared = await sharedCompanyIdentities(app.db, o.id);
    const keys = await app.services.apiKeys.listForConsole(app.db, o.id);
    const csrf = csrfOf(request);
    return page(
      reply,
      layout(
        { title: `Workspace ${o.name}`, user: pageUser(request) },
        html`
${doneNotice(request)}
<dl>
<dt>Name</dt><dd>${o.name}</dd>
<dt>Slug</dt><dd>${o.slug}</dd>
<dt>Status</dt><dd>${o.status === 'pending_owner' ? 'pending handoff' : o.status}</dd>
<dt>Kind</dt><dd>${o.isPersonal ? 'personal' : 'shared'}</dd><dt>Created</dt><dd>${o.createdAt}</dd>
<dt>Requires two-factor sign-in</dt><dd>${yesNo(o.requireTwoFactor)}</dd></dl>
${
  o.status === 'pending_owner'
    ? html`<h2>Pending handoff</h2><dl>
<dt>Owner email</dt><dd>${o.ownerEmail ?? ''}</dd>
<dt>Creator</dt><dd>${o.createdBy?.username ?? 'deleted user'}</dd>
</dl>
${actionButton(`/admin/organizations/${o.id}/resend-owner-invitation/`, 'Resend owner invitation', csrf)}
${actionButton(`/admin/organizations/${o.id}/cancel/`, 'Cancel workspace', csrf)}`
    : ''
}
<h2>Members</h2>
<table><thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Two-factor</th></tr></thead><tbody>
${o.memberships.map(
  (m) =>
    html`<tr><td><a href="/admin/users/${m.user.id}/">${m.user.username}</a></td><td>${m.role}</td><td>${m.user.twoFactorEnabledAt ? 'on' : 'off'}</td></tr>`,
)}
</tbody></table>
<h2>Records (counts only)</h2>
<table><thead><tr><th scope="col">Kind</th><th scope="col">Count</th></tr></thead><tbody>
<tr><th scope="row">Companies</th><td>${String(o._count.companies)}</td></tr>
<tr><th scope="row">Contacts</th><td>${String(o._count.contacts)}</td></tr>
<tr><th scope="row">Deals</th><td>${String(o._count.deals)}</td></tr>
<tr><th scope="row">Tasks</th><td>${String(o._count.tasks)}</td></tr>
<tr><th scope="row">Automations</th><td>${String(o._count.automations)}</td></tr>
<tr><th scope="row">Automation runs</th><td>${String(o._count.runs)}</td></tr>
</tbody></table>
<h2>Companies that shared a tax id or email before duplicates were refused</h2>
${
  shared.length === 0
    ? html`<p>None.</p>`
    : html`<table><thead><tr><th scope="col">Shared field</th><th scope="col">Companies</th><th scope="col">Customer codes, oldest first</th></tr></thead><tbody>
${shared.map((g) => html`<tr><td>${g.field}</td><td>${String(g.companies)}</td><td>${g.codes.map((c) => c ?? '(none)').join(', ')}</td></tr>`)}
</tbody></table>`
}
<h2>API keys</h2>
${
  keys.length === 0
    ? html`<p>None.</p>`
    : dataTable(['Name', 'Prefix', 'Capabilities', 'Created by', 'Created', 'Last used', 'Expires', 'State', 'Action'], keys, (k) => [
        k.name,
        html`<code>${k.prefix}…</code>`,
        k.capabilities.join(', '),
        k.created_by_username ?? (k.created_by ? 'deleted user' : ''),
        k.created_at,
        k.last_used_at ?? 'never',
        k.expires_at ?? 'never',
        keyState(k),
        k.revoked_at === null ? actionButton(`/admin/organizations/${o.id}/api-keys/${k.id}/revoke/`, 'Revoke', csrf) : '',
      ])
}
<h2>Imports (latest 20)</h2>
<table><thead><tr><th scope="col">Started</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Rows</th><th scope="col">Processed</th><th scope="col">Created</th><th scope="col">Updated</th><th scope="col">Failed</th></tr></thead><tbody>
${o.imports.map(
  (i) =>
    html`<tr><td>${i.createdAt.toISOString()}</td><td>${i.kind}</td><td>${i.status}</td><td>${String(i.totalRows)}</td><td>${String(i.processedRows)}</td><td>${String(i.created)}</td><td>${String(i.updated)}</td><td>${String(i.failedRows)}</td></tr>`,
)}
</tbody></table>`,
      ),
    );
  });

  /** Revokes through the API's own service (audited with the staff user), acting with an owner's reach over the workspace. */
  app.post('/organizations/:id/api-keys/:key_id/revoke/', async (request, reply) => {
    const organization = await app.db.organization.findUnique({ where: { id: idParam(request) } });
    if (!organization) throw new ConsoleHttpError(404, 'Not found', 'No such workspace.');
    const { key_id: keyId } = request.params as { key_id: string };
    await app.services.apiKeys.revoke(bindOrganization(app.db, app.pg, organization, 'owner'), keyId, audit(request));
    const done = 'API key revoked: it is refused from its next request.';
    return reply.redirect(`/admin/organizations/${organization.id}/?done=${encodeURIComponent(done)}`, 303);
  });

  /** The console user as the provisioning services' actor: the API's rules (superuser or the creator) still apply. */
  const actor = (request: FastifyRequest) =>
    app.db.user.findUniqueOrThrow({
      where: { id: sessionOf(request).user.id },
      select: { id: true, username: true, email: true, isSuperuser: true, tokenVersion: true },
    });
  app.post('/organizations/:id/resend-owner-invitation/', async (request, reply) => {
    const id = idParam(request);
    await app.services.organizations.resendOwnerInvitation(await actor(request), id, audit(request));
    return reply.redirect(`/admin/organizations/${id}/?done=${encodeURIComponent('A fresh owner invitation was sent.')}`, 303);
  });
  app.post('/organizations/:id/cancel/', async (request, reply) => {
    const id = idParam(request);
    await app.services.organizations.cancelProvisioning(await actor(request), id, audit(request));
    return reply.redirect(`/admin/organizations/${id}/?done=${encodeURIComponent('Workspace cancelled.')}`, 303);
  });

  app.get('/invitations/', async (request, reply) => {
    const statuses = ['pending', 'accepted', 'expired', 'revoked'];
    const status = statuses.includes(query(request, 'status')) ? query(request, 'status') : '';
    const { rows, hasNext } = await listInvitationsAll(app.db, status, pageNumber(request));
    const csrf = csrfOf(request);
    return page(
      reply,
      layout(
        { title: 'Invitations', user: pageUser(request) },
        html`
${doneNotice(request)}
<form method="get" action="/admin/invitations/">
${select('status', 'Status', status, [['', 'any'], ...statuses.map((s): [string, string] => [s, s])])}
<button type="submit">Filter</button></form>
${dataTable(['Workspace', 'Email', 'Role', 'Status', 'Invited by', 'Expires', 'Action'], rows, (i) => [
  i.organization.name,
  i.email,
  i.role,
  i.status,
  i.invitedBy?.username ?? '',
  i.expiresAt,
  i.status === 'pending' && i.role !== 'owner' ? actionButton(`/admin/invitations/${i.id}/revoke/`, 'Revoke', csrf) : '',
])}
${pager('/admin/invitations/', { status }, pageNumber(request), hasNext)}`,
      ),
    );
  });

  app.post('/invitations/:id/revoke/', async (request, reply) => {
    const invitation = await app.db.invitation.findUnique({ where: { id: idParam(request) }, select: { id: true, organization: true } });
    if (!invitation) throw new ConsoleHttpError(404, 'Not found', 'No such invitation.');
    const { user } = sessionOf(request);
    // The API's own revocation, acting with an owner's reach over the workspace's ordinary invitations.
    const tenant = bindOrganization(app.db, app.pg, invitation.organization, 'owner');
    await app.services.invitations.revoke(tenant, user, invitation.id, audit(request));
    return reply.redirect(`/admin/invitations/?done=${encodeURIComponent('Invitation revoked: its link no longer works.')}`, 303);
  });

  app.get('/installation-admins/', async (request, reply) => {
    const { administrators, invitations } = await app.services.installationAdmins.overview();
    const csrf = csrfOf(request);
    return page(
      reply,
      layout(
        { title: 'Installation admins', user: pageUser(request) },
        html`
${doneNotice(request)}
<h2>Administrators</h2>
<table><thead><tr><th scope="col">Username</th><th scope="col">Email</th></tr></thead><tbody>
${administrators.map((a) => html`<tr><td>${a.username}</td><td>${a.email}</td></tr>`)}
</tbody></table>
<h2>Pending invitations</h2>
<table><thead><tr><th scope="col">Email</th><th scope="col">Expires</th></tr></thead><tbody>
${invitations.map((i) => html`<tr><td>${i.email}</td><td>${i.expires_at}</td></tr>`)}
</tbody></table>
<h2>Invite an administrator</h2>
<form method="post" action="/admin/installation-admins/invite/"><input type="hidden" name="_csrf" value="${csrf}">
<p><label for="email">Email</label> <input id="email" name="email" type="email" autocomplete="off" required maxlength="254">
<button type="submit">Invite</button></p>
</form>`,
      ),
    );
  });

  // The API's own invitation (installation fallback SMTP, audit row, rate limit per inviter), not a copy of it.
  app.post('/installation-admins/invite/', { preHandler: app.rateLimitPreset('adminInvitations') }, async (request, reply) => {
    const email = field(request.body, 'email').trim();
    // The same email format the API's schemas check.
    if (email.length > 254 || !(fullFormats.email as RegExp).test(email)) {
      throw new ConsoleHttpError(400, 'Invalid email', 'Enter a valid email address. Nothing was sent.');
    }
    const inviter = await actor(request);
    assertInstallationAdmin(inviter, 'invite installation administrators');
    await app.services.installationAdmins.invite(inviter, email, audit(request));
    return reply.redirect(`/admin/installation-admins/?done=${encodeURIComponent('Invitation sent.')}`, 303);
  });

  app.get('/automation-runs/', async (request, reply) => {
    const status = (RUN_STATUSES as readonly string[]).includes(query(request, 'status')) ? query(request, 'status') : '';
    const { rows, hasNext } = await listRuns(app.db, status, pageNumber(request));
    return page(
      reply,
      layout(
        { title: 'Automation runs', user: pageUser(request) },
        html`
<form method="get" action="/admin/automation-runs/">
${select('status', 'Status', status, [['', 'any'], ...RUN_STATUSES.map((s): [string, string] => [s, s])])}
<button type="submit">Filter</button></form>
${dataTable(['Workspace', 'Rule', 'Trigger', 'Status', 'Error message', 'Created', 'Finished'], rows, (r) => [
  r.organization.name,
  r.automation.name,
  r.trigger,
  r.status,
  r.errorMessage ?? '',
  r.createdAt,
  r.finishedAt ?? '',
])}
${pager('/admin/automation-runs/', { status }, pageNumber(request), hasNext)}`,
      ),
    );
  });

  app.get('/outbox/', async (request, reply) => {
    const status = query(request, 'status');
    const current = (OUTBOX_STATUSES as readonly string[]).includes(status) ? status : '';
    const { rows, hasNext } = await listOutbox(app.db, current, pageNumber(request));
    const csrf = csrfOf(request);
    return page(
      reply,
      layout(
        { title: 'Email outbox', user: pageUser(request) },
        html`
${doneNotice(request)}
<form method="get" action="/admin/outbox/">${select('status', 'Status', current, [
          ['', 'any'],
          ['pending', 'queued'],
          ['sent', 'sent'],
          ['failed', 'failed'],
        ])} <button type="submit">Filter</button></form>
${dataTable(['Kind', 'Recipient', 'Status', 'Attempts', 'Next attempt', 'Last error', 'Created', 'Action'], rows, (e) => [
  e.subject,
  e.toAddress,
  e.status === 'pending' ? 'queued' : e.status,
  String(e.attempts),
  e.status === 'pending' ? e.nextAttemptAt : '',
  e.lastError ?? '',
  e.createdAt,
  e.status === 'failed' ? actionButton(`/admin/outbox/${e.id}/retry/`, 'Retry', csrf) : '',
])}
${pager('/admin/outbox/', { status: current }, pageNumber(request), hasNext)}`,
      ),
    );
  });

  app.post('/outbox/:id/retry/', async (request, reply) => {
    const retried = await retryEmail(app.db, idParam(request), audit(request));
    const done = retried ? 'Email queued again; the worker sends it shortly.' : 'That email is not failed (any more); nothing was changed.';
    return reply.redirect(`/admin/outbox/?done=${encodeURIComponent(done)}`, 303);
  });

  /** A name beside its id (ids stay: the record of a deleted user or workspace); `gone` marks a deleted one. */
  const named = (name: string | null | undefined, id: string | null, gone: boolean) =>
    html`${name ? html`<strong>${name}</strong> ` : ''}<code>${id ?? ''}</code>${gone ? ' (deleted)' : ''}`;

  /** A user with their current name, a workspace API key by its name and prefix (never its secret), else the kind. */
  const actorCell = (r: Awaited<ReturnType<typeof listAudit>>['rows'][number]) =>
    r.actorType === 'user'
      ? named(r.actorName ?? r.actorUsername, r.actorUserId, r.actorName === null)
      : r.actorType === 'api_key'
        ? html`API key <strong>${r.actorApiKeyName ?? ''}</strong> <code>${r.actorApiKeyPrefix ?? ''}…</code>`
        : r.actorType;

  app.get('/audit/', async (request, reply) => {
    const actor = query(request, 'actor').slice(0, 150);
    const action = (AUDIT_ACTIONS as readonly string[]).includes(query(request, 'action')) ? query(request, 'action') : '';
    const { rows, hasNext } = await listAudit(app.db, sessionOf(request).user.id, { actor, action, page: pageNumber(request) });
    return page(
      reply,
      layout(
        { title: 'Audit log', user: pageUser(request) },
        html`
<form method="get" action="/admin/audit/">
<label for="actor">Actor</label> <input id="actor" name="actor" value="${actor}">
${select('action', 'Action', action, [['', 'any'], ...AUDIT_ACTIONS.map((a): [string, string] => [a, a])])}
<button type="submit">Filter</button></form>
${dataTable(['Time', 'Actor', 'Action', 'Target', 'Workspace', 'Client IP'], rows, (r) => [
  r.createdAt,
  actorCell(r),
  r.action,
  html`${r.targetType} ${r.targetId ? named(r.targetName, r.targetId, r.targetName === null) : ''}`,
  r.organizationId ? named(r.workspaceName, r.organizationId, r.workspaceName === null) : '',
  r.clientIp ?? '',
])}
${pager('/admin/audit/', { actor, action }, pageNumber(request), hasNext)}`,
      ),
    );
  });
}
