// CORS for browser front ends: preflights from the application's origins answer 204 with what the API accepts; answers,
// errors included, expose the headers a script must read; other origins and the console get no CORS at all.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { loadConfig } from '../../src/config.js';

const APP_ORIGIN = 'http://app.example.test';
const EXTRA = 'https://admin.partner.example';
const { app } = await buildTestApp(t, { CORS_ORIGINS: `${EXTRA}, http://127.0.0.1:5173` });
const { admin, organizationId } = await setupInstallation(app);
const companies = `/api/v1/organizations/${organizationId}/companies/`;
const preflight = (url: string, origin: string, method = 'POST') =>
  app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type,idempotency-key',
    },
  });

t.test('a preflight from an allowed origin answers 204 with the methods, headers and max age', async (t) => {
  for (const [origin, url] of [
    [APP_ORIGIN, '/api/v1/auth/token/'],
    [EXTRA, companies],
    ['http://127.0.0.1:5173', '/openapi.json'],
  ] as const) {
    const res = await preflight(url, origin);
    t.equal(res.statusCode, 204, `${origin} ${url}`);
    t.equal(res.headers['access-control-allow-origin'], origin);
    t.match(res.headers['access-control-allow-methods'], /GET.*POST.*PUT.*PATCH.*DELETE/);
    t.equal(
      String(res.headers['access-control-allow-headers']).replaceAll(' ', ''),
      'Authorization,Content-Type,Idempotency-Key,If-Match,If-None-Match',
    );
    t.equal(res.headers['access-control-max-age'], '600');
    t.notOk(res.headers['access-control-allow-credentials'], 'no credentials mode');
    t.match(res.headers.vary, /Origin/);
  }
});

t.test('answers and errors expose the headers a front end reads', async (t) => {
  const origin = { origin: APP_ORIGIN };
  await app.inject({ method: 'POST', url: companies, headers: { ...admin.headers, ...origin }, payload: { name: 'One' } });
  await app.inject({ method: 'POST', url: companies, headers: { ...admin.headers, ...origin }, payload: { name: 'Two' } });
  const answers = [
    ['a page with Link', await app.inject({ method: 'GET', url: `${companies}?limit=1`, headers: { ...admin.headers, ...origin } }), 200],
    ['401', await app.inject({ method: 'GET', url: companies, headers: origin }), 401],
    [
      '404',
      await app.inject({
        method: 'GET',
        url: `${companies}00000000-0000-4000-8000-000000000000/`,
        headers: { ...admin.headers, ...origin },
      }),
      404,
    ],
    ['unknown route', await app.inject({ method: 'GET', url: '/api/v1/nope/', headers: origin }), 404],
    ['validation error', await app.inject({ method: 'POST', url: companies, headers: { ...admin.headers, ...origin }, payload: {} }), 400],
  ] as const;
  for (const [name, res, status] of answers) {
    t.equal(res.statusCode, status, name);
    t.equal(res.headers['access-control-allow-origin'], APP_ORIGIN, `${name}: allowed origin`);
    const exposed = String(res.headers['access-control-expose-headers']);
    for (const header of ['Link', 'Retry-After', 'Idempotent-Replayed', 'ETag', 'Location'])
      t.ok(exposed.includes(header), `${name}: exposes ${header}`);
  }
  t.ok(answers[0][1].headers.link, 'the page has its Link header');
});

t.test('other origins and the console get no CORS headers', async (t) => {
  const res = await preflight(companies, 'https://evil.example');
  t.notOk(res.headers['access-control-allow-origin'], 'no allowed origin for another site');
  const simple = await app.inject({ method: 'GET', url: '/api/v1/setup/', headers: { origin: 'https://evil.example' } });
  t.equal(simple.statusCode, 200);
  t.notOk(simple.headers['access-control-allow-origin']);
  t.notOk(simple.headers['access-control-expose-headers']);
  const consolePage = await app.inject({ method: 'GET', url: '/admin/login/', headers: { origin: APP_ORIGIN } });
  t.notOk(consolePage.headers['access-control-allow-origin'], 'the console stays same-origin');
  const consolePreflight = await preflight('/admin/login/', APP_ORIGIN);
  t.notOk(consolePreflight.headers['access-control-allow-origin']);
});

t.test('CORS_ORIGINS is validated at boot; `*` only when written on its own', async (t) => {
  const base = { JWT_SECRET: 'x'.repeat(40) };
  for (const bad of ['http://a.example/', 'http://a.example/path', 'a.example', 'ftp://a.example', 'http://a.example, *']) {
    t.throws(() => loadConfig({ ...base, CORS_ORIGINS: bad }), /CORS_ORIGINS/, `refuses ${bad}`);
  }
  t.equal(loadConfig({ ...base, CORS_ORIGINS: '*' }).corsOrigins, '*');
  const any = await buildTestApp(t, { CORS_ORIGINS: '*' });
  const res = await any.app.inject({ method: 'GET', url: '/api/v1/setup/', headers: { origin: 'https://anyone.example' } });
  t.equal(res.headers['access-control-allow-origin'], '*');
});
