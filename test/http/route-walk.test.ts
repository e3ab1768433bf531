// Walks every registered route: each sits in an authentication context, and none outside `public` answers without credentials.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { RouteOptions } from 'fastify';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin } = await setupInstallation(app);
/** A signed-in user with no membership anywhere. */
const outsider = await createUser(app);

/** The routes the reviewer has agreed are open to anyone: adding one to `public` means adding it here too. */
const PUBLIC = new Set([
  'GET /healthz',
  'GET /readyz',
  'POST /api/v1/auth/token/',
  'POST /api/v1/auth/token/refresh/',
  'POST /api/v1/auth/token/two-factor/',
  'POST /api/v1/auth/password-reset/',
  'POST /api/v1/auth/password-reset/:uidb64/:token/',
  'POST /api/v1/auth/email-change/:token/',
  'GET /api/v1/setup/',
  'POST /api/v1/setup/',
  'POST /api/v1/setup/smtp-test/',
  'GET /api/v1/invitations/:token/',
  'POST /api/v1/invitations/:token/accept/',
  'GET /api/v1/installation-admin-invitations/:token/',
  'POST /api/v1/installation-admin-invitations/:token/accept/',
  'GET /admin/login/',
  'POST /admin/login/',
  'GET /admin/static/console.css',
]);

const methods = (route: RouteOptions) => [route.method].flat().filter((method) => method !== 'HEAD' && method !== 'OPTIONS');
const routes = app.routeCatalog.flatMap((route) => methods(route).map((method) => ({ method, route, key: `${method} ${route.url}` })));
/** A URL for the route: every path parameter a fresh UUID (an organization nobody belongs to, an unknown record). */
const urlOf = (url: string) => url.replace(/:(\w+)/g, () => randomUUID());
const inject = (method: string, url: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: method as 'GET',
    url: urlOf(url),
    headers: { 'content-type': 'application/json', ...headers },
    payload: method === 'GET' || method === 'DELETE' ? undefined : '{}',
  });

t.test('every route is registered in a context; only the agreed ones are public', async (t) => {
  t.ok(routes.length > 60, `walked ${routes.length} routes`);
  for (const { route, key } of routes) {
    const context = route.config?.authContext;
    // Swagger UI and its document are the public face of the API, served by the OpenAPI plugin itself.
    if (route.url.startsWith('/docs') || route.url === '/openapi.json') continue;
    t.ok(context, `${key} has a context`);
    t.equal(context === 'public', PUBLIC.has(key), `${key}: ${context}`);
  }
  const walked = new Set(routes.map(({ key }) => key));
  for (const key of PUBLIC) t.ok(walked.has(key), `${key} exists`);
});

t.test('no user or tenant route answers without a valid access token', async (t) => {
  const protectedRoutes = routes.filter(({ route }) => ['user', 'installation', 'tenant'].includes(route.config?.authContext ?? ''));
  t.ok(protectedRoutes.length > 40);
  for (const { method, route, key } of protectedRoutes) {
    const anonymous = await inject(method, route.url);
    t.equal(anonymous.statusCode, 401, `${key} without a token`);
    t.equal(json(anonymous).code, 'not_authenticated', `${key} says why`);
    t.equal(anonymous.headers['www-authenticate'], 'Bearer');
    const forged = await inject(method, route.url, bearer(`${admin.access.slice(0, -4)}AAAA`));
    t.equal(forged.statusCode, 401, `${key} with a forged token`);
  }
});

t.test('no tenant route answers a signed-in user who is not a member of the workspace in the path', async (t) => {
  const tenantRoutes = routes.filter(({ route }) => route.config?.authContext === 'tenant');
  t.ok(tenantRoutes.length > 25);
  for (const { method, route, key } of tenantRoutes) {
    const res = await inject(method, route.url, bearer(outsider.access));
    t.equal(res.statusCode, 404, `${key} for a non-member`);
    t.equal(json(res).code, 'organization_not_found', `${key} does not reveal the workspace`);
  }
});

t.test('no installation route answers a signed-in user who is not an installation administrator', async (t) => {
  const installationRoutes = routes.filter(({ route }) => route.config?.authContext === 'installation');
  t.ok(installationRoutes.length >= 6);
  for (const { method, route, key } of installationRoutes) {
    const res = await inject(method, route.url, bearer(outsider.access));
    t.equal(res.statusCode, 403, `${key} for a regular user`);
    t.equal(json(res).code, 'installation_admin_required', `${key} says why`);
  }
});

t.test('no console route answers without a staff session', async (t) => {
  const consoleRoutes = routes.filter(({ route }) => route.config?.authContext === 'console');
  t.ok(consoleRoutes.length > 10);
  for (const { method, route, key } of consoleRoutes) {
    const res = await app.inject({
      method: method as 'GET',
      url: urlOf(route.url),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: method === 'POST' ? '_csrf=x' : undefined,
    });
    t.equal(res.statusCode, 303, `${key} without a session`);
    t.match(res.headers.location, /^\/admin\/login\//, `${key} sends to the sign-in page`);
  }
});

t.test('the OpenAPI document says what the contexts enforce', async (t) => {
  const document = json(await app.inject({ method: 'GET', url: '/docs/json' }));
  for (const { method, route, key } of routes) {
    const context = route.config?.authContext;
    if (context !== 'user' && context !== 'tenant' && context !== 'installation') continue;
    const operation = document.paths[route.url.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
    t.ok(operation, `${key} is documented`);
    // Routes open to workspace API keys name the key scheme beside the bearer one, and a stream that takes a ticket
    // (the change feed, for EventSource) the ticket scheme.
    const schemes = [
      { bearerAuth: [] },
      ...(route.config?.apiKeys ? [{ apiKeyAuth: [] }] : []),
      ...(route.config?.streamTickets ? [{ streamTicket: [] }] : []),
    ];
    t.same(operation.security, schemes, `${key} names the bearer scheme`);
    t.ok(operation.responses['401'], `${key} documents 401`);
    if (context === 'tenant') t.ok(operation.responses['404'], `${key} documents 404`);
    if (context === 'installation') t.ok(operation.responses['403'], `${key} documents 403`);
    if (context === 'tenant' && route.config?.access !== 'member') t.ok(operation.responses['403'], `${key} documents 403`);
  }
});
