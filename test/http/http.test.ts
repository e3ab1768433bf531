// Behaviour every endpoint shares: body limits and content types, problem+json errors, trailing slashes, security
// headers, documentation and health endpoints, and request logs that never carry a secret.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, json } from '../helpers/app.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_SETUP_PER_MINUTE: '1000' });
// A JSON endpoint that exists before any user does.
const JSON_ENDPOINT = '/api/v1/setup/';

function assertProblem(t: Test, res: LightMyRequestResponse, status: number, code: string) {
  t.equal(res.statusCode, status, res.body);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
  const body = json(res);
  t.match(body, { type: String, title: String, status, detail: String, code });
  t.ok(body.detail.length > 0, 'detail is not empty');
}

t.test('a body over 1 MiB answers 413', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: JSON_ENDPOINT,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ setup_token: 'x'.repeat(1024 * 1024 + 10) }),
  });
  assertProblem(t, res, 413, 'payload_too_large');
});

t.test('a body that is not JSON answers 415', async (t) => {
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const res = await app.inject({
      method: 'POST',
      url: JSON_ENDPOINT,
      headers: { 'content-type': contentType },
      payload: 'setup_token=x',
    });
    assertProblem(t, res, 415, 'unsupported_media_type');
  }
});

t.test('malformed JSON answers 400 malformed_json', async (t) => {
  for (const payload of ['{"setup_token": ', '{setup_token: 1}', 'null null']) {
    const res = await app.inject({ method: 'POST', url: JSON_ENDPOINT, headers: { 'content-type': 'application/json' }, payload });
    assertProblem(t, res, 400, 'malformed_json');
  }
});

t.test('a schema violation answers 400 with errors per field', async (t) => {
  const res = await app.inject({ method: 'POST', url: JSON_ENDPOINT, payload: { unexpected: true } });
  assertProblem(t, res, 400, 'validation_failed');
  t.match(json(res).errors, { unexpected: ['Unknown field.'], setup_token: ['This field is required.'] });
});

t.test('an unknown route answers 404 problem+json', async (t) => {
  for (const [method, url] of [
    ['GET', '/api/v1/nothing-here/'],
    ['POST', '/nowhere'],
    ['DELETE', '/api/v1/setup/'],
  ] as const) {
    assertProblem(t, await app.inject({ method, url }), 404, 'not_found');
  }
});

t.test('the trailing slash is optional', async (t) => {
  const withSlash = await app.inject({ method: 'GET', url: '/api/v1/setup/' });
  const withoutSlash = await app.inject({ method: 'GET', url: '/api/v1/setup' });
  t.equal(withSlash.statusCode, 200);
  t.equal(withoutSlash.statusCode, 200);
  t.same(json(withoutSlash), json(withSlash));
  const post = await app.inject({ method: 'POST', url: '/api/v1/setup', payload: {} });
  assertProblem(t, post, 400, 'validation_failed');
});

t.test('helmet security headers are set on answers and on errors', async (t) => {
  for (const res of [await app.inject({ method: 'GET', url: '/healthz' }), await app.inject({ method: 'GET', url: '/nowhere' })]) {
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN');
    t.match(res.headers['strict-transport-security'], /max-age=\d+/);
    t.match(res.headers['content-security-policy'], /default-src 'self'/);
    t.equal(res.headers['referrer-policy'], 'no-referrer');
    t.equal(res.headers['cross-origin-opener-policy'], 'same-origin');
    t.notOk(res.headers['x-powered-by']);
  }
});

t.test('Swagger UI answers at /docs and the document at /openapi.json', async (t) => {
  let res = await app.inject({ method: 'GET', url: '/docs' });
  if (res.statusCode === 302) res = await app.inject({ method: 'GET', url: String(res.headers.location) });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/html/);
  t.match(res.body, /swagger/i);

  const doc = await app.inject({ method: 'GET', url: '/openapi.json' });
  t.equal(doc.statusCode, 200);
  t.match(doc.headers['content-type'], /^application\/json/);
  t.match(json(doc), { openapi: '3.1.0', info: { title: String }, paths: { '/api/v1/setup/': {} } });
});

t.test('/healthz and /readyz answer 200 on a migrated database', async (t) => {
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200);
  t.same(json(health), { status: 'ok' });
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200, ready.body);
  t.same(json(ready), { status: 'ok' });
});

t.test('request logs never carry the Authorization header, a refresh token or a link token', async (t) => {
  const secrets = {
    access: 'eyJhbGciOiJIUzI1NiJ9.access-secret-segment.signature',
    refresh: 'eyJhbGciOiJIUzI1NiJ9.refresh-secret-segment.signature',
    invitation: 'invitation-token-secret-0123456789abcdefghijk',
    adminInvitation: 'admin-invitation-token-secret-0123456789abcde',
    reset: 'reset-token-secret-0123456789abcdefghijklmnop',
  };
  const before = logs.length;
  const requests = [
    { method: 'GET', url: '/api/v1/organizations/', headers: { authorization: `Bearer ${secrets.access}` } },
    { method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: secrets.refresh } },
    { method: 'POST', url: '/api/v1/auth/logout/', payload: { refresh: secrets.refresh } },
    { method: 'GET', url: `/api/v1/invitations/${secrets.invitation}/` },
    { method: 'POST', url: `/api/v1/invitations/${secrets.invitation}/accept/`, payload: {} },
    { method: 'GET', url: `/api/v1/installation-admin-invitations/${secrets.adminInvitation}/?x=1` },
    { method: 'POST', url: `/api/v1/installation-admin-invitations/${secrets.adminInvitation}/accept/`, payload: {} },
    { method: 'POST', url: `/api/v1/auth/password-reset/MQ/${secrets.reset}/`, payload: { new_password: 'a-new-long-password' } },
    { method: 'GET', url: `/api/v1/auth/password-reset/MQ/${secrets.reset}` },
  ] as const;
  for (const request of requests) await app.inject(request);

  const written = logs.slice(before);
  t.ok(
    written.some((line) => line.includes('[REDACTED]')),
    'token segments are replaced, not dropped',
  );
  t.ok(
    written.some((line) => line.includes('/api/v1/invitations/')),
    'the requests were logged',
  );
  for (const [name, secret] of Object.entries(secrets)) {
    t.notOk(
      written.some((line) => line.includes(secret)),
      `${name} not logged`,
    );
  }
  t.notOk(
    written.some((line) => /authorization/i.test(line) && line.includes('Bearer')),
    'no Authorization header logged',
  );
});
