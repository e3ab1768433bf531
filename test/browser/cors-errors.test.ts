// CORS beyond cors.test.ts: a 429 and a 503 carry the CORS headers, preflights need no token on protected routes,
// look-alike origins are refused, health checks and /docs stay same-origin, and the odd CORS_ORIGINS values a boot refuses.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { bearer, buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { freePort } from '../helpers/net.js';

const APP_ORIGIN = 'http://app.example.test';
const OTHER_APP = 'https://admin.example.test:8443';
const STRANGER = 'https://evil.example.test';

const { app } = await buildTestApp(t, { CORS_ORIGINS: ` ${OTHER_APP} ,http://localhost:5173`, RATE_LIMIT_TOKEN_PER_MINUTE: '2' });
const { admin, organizationId } = await setupInstallation(app);
const companies = `/api/v1/organizations/${organizationId}/companies/`;

const preflight = (url: string, origin: string, method = 'POST', headers = 'authorization,content-type,idempotency-key') =>
  app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

/** The headers every cross-origin answer to an allowed origin carries. */
function assertCrossOrigin(t: Test, res: LightMyRequestResponse, origin: string, what: string) {
  t.equal(res.headers['access-control-allow-origin'], origin, `${what}: the origin is allowed`);
  const exposed = String(res.headers['access-control-expose-headers']).split(/,\s*/);
  for (const header of ['Link', 'Retry-After', 'Idempotent-Replayed', 'ETag', 'Location', 'X-RateLimit-Limit'])
    t.ok(exposed.includes(header), `${what}: ${header} exposed`);
  t.match(String(res.headers.vary), /Origin/i, `${what}: Vary: Origin`);
  t.notOk(res.headers['access-control-allow-credentials'], `${what}: no credentials mode`);
}

t.test('preflights of protected routes answer 204 without a token (before authentication)', async (t) => {
  for (const url of [companies, `${companies}00000000-0000-4000-8000-000000000000/`, '/api/v1/auth/me/']) {
    const res = await preflight(url, APP_ORIGIN, 'PATCH', 'authorization,content-type,if-match');
    t.equal(res.statusCode, 204, `${url}: 204 without a token`);
    t.equal(res.headers['access-control-allow-origin'], APP_ORIGIN);
    t.equal(res.body, '');
  }
});

t.test('CORS_ORIGINS adds exact origins; others, and look-alikes, get no Access-Control-Allow-Origin', async (t) => {
  t.equal((await preflight(companies, OTHER_APP)).headers['access-control-allow-origin'], OTHER_APP);
  t.equal((await preflight(companies, 'http://localhost:5173')).headers['access-control-allow-origin'], 'http://localhost:5173');
  for (const origin of [STRANGER, 'http://app.example.test.evil.test', 'https://app.example.test', 'http://localhost:5174', 'null']) {
    const res = await preflight(companies, origin);
    t.notOk(res.headers['access-control-allow-origin'], `${origin}: refused`);
    const read = await app.inject({ method: 'GET', url: companies, headers: { origin, ...bearer(admin.access) } });
    t.equal(read.statusCode, 200, `${origin}: the server answers (only the browser withholds it)`);
    t.notOk(read.headers['access-control-allow-origin'], `${origin}: its script cannot read the answer`);
  }
});

t.test('creates, their replays and a 429 carry the CORS headers', async (t) => {
  const headers = { origin: APP_ORIGIN, ...bearer(admin.access) };
  const list = await app.inject({ method: 'GET', url: `${companies}?limit=1`, headers });
  t.equal(list.statusCode, 200);
  assertCrossOrigin(t, list, APP_ORIGIN, '200');
  const created = await app.inject({
    method: 'POST',
    url: companies,
    headers: { ...headers, 'idempotency-key': 'cors-create-1' },
    payload: { name: 'Initech' },
  });
  t.equal(created.statusCode, 201);
  assertCrossOrigin(t, created, APP_ORIGIN, '201');
  const replayed = await app.inject({
    method: 'POST',
    url: companies,
    headers: { ...headers, 'idempotency-key': 'cors-create-1' },
    payload: { name: 'Initech' },
  });
  t.equal(replayed.headers['idempotent-replayed'], 'true');
  assertCrossOrigin(t, replayed, APP_ORIGIN, 'a replay');
  let limited: LightMyRequestResponse | undefined;
  for (let attempt = 0; attempt < 4 && limited?.statusCode !== 429; attempt += 1) {
    limited = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/token/',
      headers: { origin: APP_ORIGIN },
      payload: { username: 'cors-limited', password: 'wrong-password-0000' },
    });
  }
  t.equal(limited?.statusCode, 429);
  t.match(limited?.headers['retry-after'], /^\d+$/);
  assertCrossOrigin(t, limited!, APP_ORIGIN, '429');
});

t.test('/openapi.json is readable cross-origin; the console and health checks stay same-origin', async (t) => {
  const document = await app.inject({ method: 'GET', url: '/openapi.json', headers: { origin: OTHER_APP } });
  t.equal(document.statusCode, 200);
  t.equal(document.headers['access-control-allow-origin'], OTHER_APP);
  for (const url of ['/admin/login/', '/admin/', '/healthz', '/docs/']) {
    const res = await app.inject({ method: 'GET', url, headers: { origin: APP_ORIGIN } });
    t.notOk(res.headers['access-control-allow-origin'], `GET ${url}: no CORS`);
    t.notOk(res.headers['access-control-expose-headers'], `GET ${url}: nothing exposed`);
    const options = await preflight(url, APP_ORIGIN);
    t.not(options.statusCode, 204, `OPTIONS ${url}: no preflight answer`);
    t.notOk(options.headers['access-control-allow-origin'], `OPTIONS ${url}: no CORS`);
  }
});

t.test('a 503 carries the CORS headers too (the rate limiter store unreachable fails sign-in closed)', async (t) => {
  const { app: unreachable } = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
  const res = await unreachable.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    headers: { origin: APP_ORIGIN },
    payload: { username: 'anyone', password: 'any-password-00' },
  });
  t.equal(res.statusCode, 503);
  t.equal(res.headers['retry-after'], '5');
  assertCrossOrigin(t, res, APP_ORIGIN, '503');
});

t.test(
  'CORS_ORIGINS: wildcards inside an origin, upper case and default ports are refused at boot; so is a broken SERVICE_APP_URL',
  async (t) => {
    const base = { JWT_SECRET: 'cors-test-jwt-secret-0123456789-abcdef', DATA_DIR: '/nonexistent-cors-test-dir' };
    t.same(loadConfig({ ...base, CORS_ORIGINS: ' https://a.example , http://127.0.0.1:5173 ' }).corsOrigins, [
      'https://a.example',
      'http://127.0.0.1:5173',
    ]);
    for (const value of ['https://*.example', 'https://A.example', 'https://a.example:443', '*, https://a.example']) {
      t.throws(() => loadConfig({ ...base, CORS_ORIGINS: value }), { name: 'ConfigError', message: /CORS_ORIGINS/ }, value);
    }
    t.throws(() => loadConfig({ ...base, SERVICE_APP_URL: 'http://[broken' }), { name: 'ConfigError', message: /SERVICE_APP_URL/ });
  },
);
