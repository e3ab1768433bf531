// The admin console through HTTP: sign-in, sessions, CSRF and Origin checks, headers, user actions, outbox, audit.
import t from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, bearer } from '../helpers/app.js';
import { ADMIN, createUser, setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '1000' });
const { admin } = await setupInstallation(app);
const SIGN_IN_FAILED = 'Please enter a correct username and password for a staff account.';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

function sessionCookie(res: LightMyRequestResponse): string {
  const cookie = res.cookies.find((c) => c.name === 'crm_admin_session');
  if (!cookie) throw new Error(`no session cookie: ${res.statusCode} ${res.body}`);
  return cookie.value;
}

async function consoleSignIn(username = ADMIN.username, password = ADMIN.password, next?: string) {
  return app.inject({
    method: 'POST',
    url: '/admin/login/',
    headers: FORM,
    payload: form({ username, password, ...(next ? { next } : {}) }),
  });
}

/** Signs in and returns the cookie header and the CSRF token of the session's pages. */
async function session(username = ADMIN.username, password = ADMIN.password) {
  const id = sessionCookie(await consoleSignIn(username, password));
  const cookie = `crm_admin_session=${id}`;
  const page = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
  if (!csrf) throw new Error('no csrf token on the dashboard');
  return { id, cookie, csrf };
}

const post = (url: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { ...FORM, cookie, ...headers }, payload: form(fields) });

const auditCount = (action: string) => app.db.auditLog.count({ where: { action } });

t.test('the sign-in page has labelled inputs and a Sign in button', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/admin/login/' });
  t.equal(res.statusCode, 200);
  t.match(res.body, /<label for="username">Username<\/label>/);
  t.match(res.body, /<label for="password">Password<\/label>/);
  t.match(res.body, /<button type="submit">Sign in<\/button>/);
});

t.test('every console page has the strict CSP, no-store and no inline script or style', async (t) => {
  const { cookie } = await session();
  for (const url of ['/admin/login/', '/admin/', '/admin/users/', '/admin/outbox/', '/admin/audit/', '/admin/nope/']) {
    const res = await app.inject({ method: 'GET', url, headers: { cookie } });
    t.match(res.headers['content-security-policy'], /default-src 'self'; frame-ancestors 'none'/, url);
    t.equal(res.headers['cache-control'], 'no-store', url);
    t.notMatch(res.body, /<script|<style| style=/, url);
  }
  const css = await app.inject({ method: 'GET', url: '/admin/static/console.css' });
  t.equal(css.statusCode, 200);
  t.match(css.headers['content-type'], /^text\/css/);
});

t.test('without a session every page lands on the sign-in page', async (t) => {
  for (const url of ['/admin/', '/admin/users/', '/admin/audit/']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 303, url);
    t.equal(res.headers.location, `/admin/login/?next=${encodeURIComponent(url)}`);
  }
});

t.test('a successful sign-in sets a strict cookie, writes admin.signed_in and answers 303 to /admin/', async (t) => {
  const before = await auditCount('admin.signed_in');
  const res = await consoleSignIn();
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/');
  const cookie = res.cookies.find((c) => c.name === 'crm_admin_session')!;
  t.ok(cookie.httpOnly);
  t.equal(cookie.sameSite, 'Strict');
  t.equal(cookie.path, '/admin');
  t.notOk(cookie.secure, 'not Secure outside production');
  t.ok(Buffer.from(cookie.value, 'base64url').length >= 32, 'at least 32 random bytes');
  const stored = await app.db.adminSession.findMany({ select: { idHash: true } });
  t.notOk(
    stored.some((s) => s.idHash.includes(cookie.value)),
    'only a hash is stored',
  );
  t.equal(await auditCount('admin.signed_in'), before + 1);
  const again = sessionCookie(await consoleSignIn());
  t.not(again, cookie.value, 'a new id at every sign-in');
});

t.test('next is honoured only for paths under /admin/', async (t) => {
  t.equal((await consoleSignIn(ADMIN.username, ADMIN.password, '/admin/users/?search=a')).headers.location, '/admin/users/?search=a');
  for (const next of ['https://evil.example/', '//evil.example/admin/', '/api/v1/auth/me/', '/admin/\\\\evil.example']) {
    t.equal((await consoleSignIn(ADMIN.username, ADMIN.password, next)).headers.location, '/admin/', next);
  }
});

t.test('wrong password, unknown user, non-staff and deactivated staff all get the same page and no session', async (t) => {
  const plain = await createUser(app);
  const staff = await createUser(app);
  await app.db.user.update({ where: { id: staff.id }, data: { isStaff: true, isActive: false } });
  const before = await auditCount('admin.sign_in_failed');
  for (const [username, password] of [
    [ADMIN.username, 'wrong-password'],
    ['nobody-here', 'whatever-pass'],
    [plain.username, plain.password],
    [staff.username, staff.password],
  ] as const) {
    const res = await consoleSignIn(username, password);
    t.equal(res.statusCode, 200, username);
    t.ok(res.body.includes(SIGN_IN_FAILED), username);
    t.notOk(
      res.cookies.some((c) => c.name === 'crm_admin_session' && c.value),
      username,
    );
  }
  t.equal(await auditCount('admin.sign_in_failed'), before + 4);
});

t.test('sign out deletes the session server-side; the old cookie lands on the sign-in page', async (t) => {
  const { cookie, csrf } = await session();
  const before = await app.db.adminSession.count();
  const res = await post('/admin/logout/', cookie, { _csrf: csrf });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/login/');
  t.equal(await app.db.adminSession.count(), before - 1);
  const after = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } });
  t.equal(after.statusCode, 303);
  t.match(after.headers.location, /^\/admin\/login\//);
});

t.test('an idle or expired session lands on the sign-in page', async (t) => {
  const idle = await session();
  await app.db.adminSession.updateMany({ data: { lastSeenAt: new Date(Date.now() - 1801_000) }, where: { idHash: { not: '' } } });
  t.equal((await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: idle.cookie } })).statusCode, 303);
  const old = await session();
  await app.db.adminSession.updateMany({ data: { expiresAt: new Date(Date.now() - 1000) }, where: { idHash: { not: '' } } });
  t.equal((await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: old.cookie } })).statusCode, 303);
});

t.test('a missing or wrong CSRF token or a cross-site Origin answers 403 and changes nothing', async (t) => {
  const { cookie, csrf } = await session();
  const victim = await createUser(app);
  const url = `/admin/users/${victim.id}/deactivate/`;
  for (const [fields, headers] of [
    [{}, {}],
    [{ _csrf: 'wrong' }, {}],
    [{ _csrf: csrf }, { origin: 'https://evil.example' }],
    [{ _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
  ] as [Record<string, string>, Record<string, string>][]) {
    const res = await post(url, cookie, fields, headers);
    t.equal(res.statusCode, 403, JSON.stringify([fields, headers]));
    t.match(res.headers['content-type'], /^text\/html/);
  }
  const other = await session();
  t.equal((await post(url, cookie, { _csrf: other.csrf })).statusCode, 403, "another session's token");
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: victim.id } })).isActive, true);
  t.equal((await post(url, cookie, { _csrf: csrf }, { origin: 'http://localhost:80' })).statusCode, 303, 'same origin works');
});

t.test('a POST without a session changes nothing', async (t) => {
  const victim = await createUser(app);
  const res = await post(`/admin/users/${victim.id}/deactivate/`, 'crm_admin_session=forged', { _csrf: 'x' });
  t.equal(res.statusCode, 303);
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: victim.id } })).isActive, true);
});

t.test('Bearer tokens never open the console and the console cookie never authorizes the API', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/admin/', headers: bearer(admin.access) });
  t.equal(res.statusCode, 303);
  const { cookie } = await session();
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: { cookie } })).statusCode, 401);
});

t.test('oversized and malformed form bodies get a clear page, not a 500', async (t) => {
  const { cookie, csrf } = await session();
  const victim = await createUser(app);
  const big = await post(`/admin/users/${victim.id}/deactivate/`, cookie, { _csrf: csrf, pad: 'x'.repeat(20_000) });
  t.equal(big.statusCode, 413);
  t.match(big.body, /too large/);
  const asJson = await app.inject({
    method: 'POST',
    url: `/admin/users/${victim.id}/deactivate/`,
    headers: { cookie, 'content-type': 'application/json' },
    payload: '{"_csrf":',
  });
  t.ok(asJson.statusCode === 400 || asJson.statusCode === 415, String(asJson.statusCode));
  t.match(asJson.headers['content-type'], /^text\/html/);
  const badId = await post('/admin/users/not-a-uuid/deactivate/', cookie, { _csrf: csrf });
  t.equal(badId.statusCode, 404);
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: victim.id } })).isActive, true);
});

t.test('the dashboard shows counts and the migration status', async (t) => {
  const { cookie } = await session();
  const res = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } });
  const users = await app.db.user.count();
  t.match(res.body, new RegExp(`data-count="Users">${users}<`));
  t.match(res.body, /data-count="Active workspaces">1</);
  t.match(res.body, /migrations applied/);
  for (const name of ['Dashboard', 'Users', 'Email outbox', 'Audit log']) t.match(res.body, `>${name}</a>`);
});

t.test('the dashboard summarises readiness and backups, the readiness page details them', async (t) => {
  const { cookie } = await session();
  const dashboard = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } });
  t.match(
    dashboard.body,
    /data-readiness="not-ready"><a href="\/admin\/readiness\/">7 of 13 checks pass<\/a>; failing: node_env_production, app_url_https/,
  );
  t.match(dashboard.body, /data-backup="Backup">unknown</);
  await app.db.backupEvent.create({ data: { kind: 'backup', status: 'failure', reportedBy: 'make backup' } });
  const details = await app.inject({ method: 'GET', url: '/admin/readiness/', headers: { cookie } });
  t.equal(details.statusCode, 200);
  t.match(details.body, /data-check="jwt_secret_strong">pass</);
  t.match(details.body, /data-check="app_url_https">fail</);
  t.match(details.body, /Set SERVICE_APP_URL/);
  t.match(details.body, /data-backup="Backup">failed</);
  t.match(details.body, /data-backup="Restore test">unknown</);
  t.notOk(details.body.includes('test-jwt-secret'), 'no secret value on the page');
  t.equal((await app.inject({ method: 'GET', url: '/admin/readiness/' })).statusCode, 303, 'sign-in required');
});

t.test('users: search, filters and escaped usernames', async (t) => {
  const { cookie } = await session();
  const evil = await createUser(app, { username: '<script>alert(1)</script>', email: 'evil-user@example.test' });
  const res = await app.inject({ method: 'GET', url: '/admin/users/?search=EVIL-user', headers: { cookie } });
  t.match(res.body, /<label for="search">Search<\/label>/);
  t.ok(res.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  t.notOk(res.body.includes('<script>alert'));
  t.notOk(res.body.includes(`/admin/users/${admin.id}/`), 'search filters');
  const detail = await app.inject({ method: 'GET', url: `/admin/users/${evil.id}/`, headers: { cookie } });
  t.ok(detail.body.includes('&lt;script&gt;'));
  t.notOk(detail.body.includes('<script>alert'));
  const inactive = await app.inject({ method: 'GET', url: '/admin/users/?active=no', headers: { cookie } });
  t.notOk(inactive.body.includes('&lt;script&gt;'), 'active filter');
});

t.test('deactivate ends every session at once; reactivate restores sign-in; old tokens stay dead', async (t) => {
  const { cookie, csrf } = await session();
  const victim = await createUser(app);
  await app.db.user.update({ where: { id: victim.id }, data: { isStaff: true } });
  const victimConsole = await session(victim.username, victim.password);
  const res = await post(`/admin/users/${victim.id}/deactivate/`, cookie, { _csrf: csrf });
  t.equal(res.statusCode, 303);
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: victim.headers })).statusCode, 401, 'access token refused');
  t.equal(
    (await app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: victim.refresh } })).statusCode,
    401,
    'refresh refused',
  );
  t.equal(
    (await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: victimConsole.cookie } })).statusCode,
    303,
    'console session ended',
  );
  t.equal(await app.db.adminSession.count({ where: { userId: victim.id } }), 0);
  t.ok((await consoleSignIn(victim.username, victim.password)).body.includes(SIGN_IN_FAILED));
  const row = await app.db.auditLog.findFirstOrThrow({ where: { action: 'user.deactivated', targetId: victim.id } });
  t.equal(row.actorUsername, ADMIN.username);

  t.equal((await post(`/admin/users/${victim.id}/reactivate/`, cookie, { _csrf: csrf })).statusCode, 303);
  t.equal((await consoleSignIn(victim.username, victim.password)).statusCode, 303, 'console sign-in works again');
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: victim.headers })).statusCode, 401, 'old token stays dead');
  t.equal(await auditCount('user.reactivated'), 1);
});

t.test('the last active superuser cannot be deactivated, and the page says why', async (t) => {
  const { cookie, csrf } = await session();
  const res = await post(`/admin/users/${admin.id}/deactivate/`, cookie, { _csrf: csrf });
  t.equal(res.statusCode, 409);
  t.match(res.body, /last active superuser/);
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: admin.id } })).isActive, true);
});

t.test('sign out everywhere revokes tokens and console sessions', async (t) => {
  const { cookie, csrf } = await session();
  const victim = await createUser(app);
  await app.db.user.update({ where: { id: victim.id }, data: { isStaff: true } });
  const victimConsole = await session(victim.username, victim.password);
  const page = await app.inject({ method: 'GET', url: `/admin/users/${victim.id}/`, headers: { cookie } });
  t.match(page.body, /Live console sessions<\/dt><dd>1</);
  t.match(page.body, />Sign out everywhere</);
  t.equal((await post(`/admin/users/${victim.id}/sign-out-everywhere/`, cookie, { _csrf: csrf })).statusCode, 303);
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: victim.headers })).statusCode, 401);
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: victim.refresh } })).statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: victimConsole.cookie } })).statusCode, 303);
  t.equal(await auditCount('user.signed_out_everywhere'), 1);
});

t.test("a user's API sessions and two-factor state are shown, and a session can be ended", async (t) => {
  const { cookie, csrf } = await session();
  const user = await createUser(app);
  const other = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    payload: { username: user.username, password: user.password },
    headers: { 'user-agent': 'Lost <b>laptop</b>' },
  });
  const laptop = JSON.parse(other.body) as { access: string };
  const organization = await app.db.organization.findFirstOrThrow({ where: { slug: 'acme' } });
  await app.db.organization.update({ where: { id: organization.id }, data: { requireTwoFactor: true } });
  await app.db.membership.create({ data: { organizationId: organization.id, userId: user.id, role: 'member' } });

  const page = await app.inject({ method: 'GET', url: `/admin/users/${user.id}/`, headers: { cookie } });
  t.match(page.body, /Two-factor sign-in<\/dt><dd>off</);
  t.match(page.body, /<td>acme<\/td><td>member<\/td><td>yes<\/td>/, 'the workspace that requires it');
  t.match(page.body, /Lost &lt;b&gt;laptop&lt;\/b&gt;/, 'the client, escaped');
  t.notMatch(page.body, /<b>laptop/);
  const sessions = await app.db.refreshToken.findMany({ where: { userId: user.id }, orderBy: { createdAt: 'desc' } });
  const laptopSession = sessions[0]!.familyId;
  t.match(page.body, new RegExp(`/admin/users/${user.id}/sessions/${laptopSession}/end/`));

  const workspace = await app.inject({ method: 'GET', url: `/admin/organizations/${organization.id}/`, headers: { cookie } });
  t.match(workspace.body, /Requires two-factor sign-in<\/dt><dd>yes</);
  t.match(workspace.body, new RegExp(`${user.username}</a></td><td>member</td><td>off</td>`));

  const ended = await post(`/admin/users/${user.id}/sessions/${laptopSession}/end/`, cookie, { _csrf: csrf });
  t.equal(ended.statusCode, 303);
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(laptop.access) })).statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: user.headers })).statusCode, 200, 'the other session stays');
  t.equal(await app.db.auditLog.count({ where: { action: 'account.session_ended', targetId: laptopSession } }), 1);
  t.equal((await post(`/admin/users/${user.id}/sessions/${laptopSession}/end/`, cookie, { _csrf: csrf })).statusCode, 404);
  t.equal((await post(`/admin/users/${user.id}/sessions/${laptopSession}/end/`, cookie, {})).statusCode, 403, 'CSRF checked');
  await app.db.organization.update({ where: { id: organization.id }, data: { requireTwoFactor: false } });
});

t.test('outbox: no bodies, escaped errors, Retry puts a failed email back in the queue', async (t) => {
  const { cookie, csrf } = await session();
  const failed = await app.db.emailOutbox.create({
    data: {
      toAddress: 'x@example.test',
      subject: 'Reset your password',
      textBody: 'secret-link-body',
      status: 'failed',
      attempts: 5,
      lastError: '<img src=x onerror=alert(1)>',
    },
  });
  const res = await app.inject({ method: 'GET', url: '/admin/outbox/?status=failed', headers: { cookie } });
  t.notOk(res.body.includes('secret-link-body'));
  t.ok(res.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
  t.match(res.body, />Retry</);
  t.equal((await post(`/admin/outbox/${failed.id}/retry/`, cookie, { _csrf: csrf })).statusCode, 303);
  const row = await app.db.emailOutbox.findUniqueOrThrow({ where: { id: failed.id } });
  t.not(row.status, 'failed');
  t.equal(await auditCount('email.retried'), 1);
  // The worker may already have taken it; a sent email is not retried.
  await app.db.emailOutbox.update({ where: { id: failed.id }, data: { status: 'sent' } });
  t.equal((await post(`/admin/outbox/${failed.id}/retry/`, cookie, { _csrf: csrf })).statusCode, 303);
  t.equal(await auditCount('email.retried'), 1, 'a second retry of a non-failed email changes nothing');
});

t.test('the audit log lists rows and filters by actor and action', async (t) => {
  const { cookie } = await session();
  const res = await app.inject({ method: 'GET', url: '/admin/audit/?action=admin.signed_in&actor=admin', headers: { cookie } });
  t.match(res.body, /<td>admin\.signed_in<\/td>/);
  t.notMatch(res.body, /<td>admin\.sign_in_failed<\/td>/);
});

t.test('sign-in shares the token endpoint limit per IP and username (429 page)', async (t) => {
  const { app: limited } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '2' });
  const attempt = () =>
    limited.inject({
      method: 'POST',
      url: '/admin/login/',
      headers: FORM,
      payload: form({ username: 'someone', password: 'wrong-password' }),
    });
  t.equal(
    (await limited.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username: 'someone', password: 'wrong-password' } }))
      .statusCode,
    401,
  );
  t.equal((await attempt()).statusCode, 200);
  const res = await attempt();
  t.equal(res.statusCode, 429);
  t.match(res.headers['content-type'], /^text\/html/);
});

t.test('losing staff status ends the console session at its next request', async (t) => {
  const staff = await createUser(app);
  await app.db.user.update({ where: { id: staff.id }, data: { isStaff: true } });
  const { cookie } = await session(staff.username, staff.password);
  t.equal((await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } })).statusCode, 200);
  await app.db.user.update({ where: { id: staff.id }, data: { isStaff: false } });
  const res = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie } });
  t.equal(res.statusCode, 303);
  t.match(res.headers.location, /^\/admin\/login\//);
  t.equal(await app.db.adminSession.count({ where: { userId: staff.id } }), 0, 'the session row is gone');
});

t.test('a console sign-in counts as a sign-in; the audit log names users and workspaces beside their ids', async (t) => {
  const staff = await createUser(app, { username: 'stella', email: 'stella@example.test' });
  await app.db.user.update({ where: { id: staff.id }, data: { isStaff: true, lastLogin: null } });
  const { cookie } = await session('stella', staff.password);
  const row = await app.db.user.findUniqueOrThrow({ where: { id: staff.id }, select: { lastLogin: true } });
  t.ok(row.lastLogin && Date.now() - row.lastLogin.getTime() < 60_000, 'last sign-in set by the console sign-in');
  const detail = await app.inject({ method: 'GET', url: `/admin/users/${staff.id}/`, headers: { cookie } });
  t.notMatch(detail.body, /Last sign-in<\/dt><dd>never/, 'the Users page no longer says never');

  const org = await app.db.organization.findFirstOrThrow({ where: { slug: 'acme' } });
  const gone = await createUser(app, { username: 'ghost-user' });
  await app.db.auditLog.create({
    data: {
      actorType: 'user',
      actorUserId: staff.id,
      actorUsername: 'stella',
      action: 'user.deactivated',
      targetType: 'user',
      targetId: gone.id,
      organizationId: org.id,
    },
  });
  await app.db.user.delete({ where: { id: gone.id } });
  const audit = await app.inject({ method: 'GET', url: '/admin/audit/?action=user.deactivated', headers: { cookie } });
  t.match(audit.body, new RegExp(`<strong>stella</strong> <code>${staff.id}</code>`), 'actor name beside the id');
  t.match(audit.body, new RegExp(`<strong>Acme</strong> <code>${org.id}</code>`), 'workspace name beside the id');
  t.match(audit.body, new RegExp(`user <code>${gone.id}</code> \\(deleted\\)`), 'a deleted target keeps its id');
});

t.test('workspace page lists companies that shared a tax id or email before duplicates were refused, never the value', async (t) => {
  const { cookie } = await session();
  const organization = await app.db.organization.findFirstOrThrow({ where: { slug: 'acme' } });
  const none = await app.inject({ method: 'GET', url: `/admin/organizations/${organization.id}/`, headers: { cookie } });
  t.match(none.body, /before duplicates were refused<\/h2>\s*<p>None.<\/p>/);
  // As the migration leaves them: the oldest keeps its place in the unique index, the later ones are flagged.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, tax_id, customer_code, tax_id_shared, created_at, updated_at)
     VALUES (gen_random_uuid(), $1, 'Legacy one', 'SECRET-TAX-9', 'CUS-90001', false, now() - interval '1 day', now()),
            (gen_random_uuid(), $1, 'Legacy two', 'secret-tax-9', 'CUS-90002', true, now(), now())`,
    [organization.id],
  );
  const page = await app.inject({ method: 'GET', url: `/admin/organizations/${organization.id}/`, headers: { cookie } });
  t.match(page.body, /<tr><td>tax_id<\/td><td>2<\/td><td>CUS-90001, CUS-90002<\/td><\/tr>/);
  t.notMatch(page.body, /secret-tax-9/i, 'the shared value is not shown');
});

t.test("the audit log names a workspace's records (rules, imports) only to its members, as the API does", async (t) => {
  const { cookie } = await session();
  const own = await app.db.organization.findFirstOrThrow({ where: { slug: 'acme' } });
  const other = await app.db.organization.create({ data: { name: 'Elsewhere Ltd', slug: 'elsewhere-audit' } });
  const ownImport = '11111111-2222-4333-8444-555555555555';
  const otherImport = '66666666-7777-4888-9999-aaaaaaaaaaaa';
  for (const [organizationId, targetId] of [
    [own.id, ownImport],
    [other.id, otherImport],
  ]) {
    await app.db.auditLog.create({
      data: { actorType: 'user', actorUsername: 'admin', action: 'import.started', targetType: 'import', targetId, organizationId },
    });
  }
  const audit = await app.inject({ method: 'GET', url: '/admin/audit/?action=import.started', headers: { cookie } });
  t.equal(audit.statusCode, 200);
  t.match(audit.body, ownImport, "the import of the reader's own workspace keeps its id");
  t.notMatch(audit.body, otherImport, "another workspace's import id is not shown");
  t.match(audit.body, new RegExp(`<strong>Elsewhere Ltd</strong> <code>${other.id}</code>`), 'its workspace is named');
  const api = await app.inject({ method: 'GET', url: '/api/v1/installation/audit-log/?action=import.started', headers: admin.headers });
  t.equal(api.statusCode, 200);
  const ids = (JSON.parse(api.body) as Array<{ target_id: string | null }>).map((row) => row.target_id);
  t.ok(ids.includes(ownImport) && !ids.includes(otherImport), 'the API shows the same ids');
});
