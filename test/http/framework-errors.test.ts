// Every error Fastify or a plugin raises around a handler leaves as problem+json with its status; the list is Fastify's own.
import t from 'tap';
import { errorCodes, type InjectOptions } from 'fastify';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '1' });
const { admin, organizationId } = await setupInstallation(app);
const companies = `/api/v1/organizations/${organizationId}/companies/`;
const jsonType = { 'content-type': 'application/json' };

/** Fastify's request-time error codes, each with a request that raises it here and the status it must answer. */
const reachable: Record<string, { request: InjectOptions; status: number; code: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    request: {
      method: 'POST',
      url: companies,
      headers: { ...admin.headers, ...jsonType },
      payload: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }),
    },
    status: 413,
    code: 'payload_too_large',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    request: { method: 'POST', url: companies, headers: { ...admin.headers, 'content-type': 'text/plain' }, payload: 'name' },
    status: 415,
    code: 'unsupported_media_type',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    request: { method: 'POST', url: companies, headers: { ...admin.headers, ...jsonType, 'content-length': '3' }, payload: '{"name":"x"}' },
    status: 400,
    code: 'bad_request',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    request: { method: 'POST', url: companies, headers: { ...admin.headers, ...jsonType }, payload: '' },
    status: 400,
    code: 'malformed_json',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: {
    request: { method: 'POST', url: companies, headers: { ...admin.headers, ...jsonType }, payload: '{"name":' },
    status: 400,
    code: 'malformed_json',
  },
  FST_ERR_BAD_URL: {
    request: { method: 'GET', url: '/api/v1/organizations/%E0%A4%A/companies/', headers: admin.headers },
    status: 400,
    code: 'bad_request',
  },
  FST_ERR_MAX_PARAM_LENGTH: {
    request: { method: 'GET', url: `/api/v1/organizations/${'a'.repeat(600)}/companies/`, headers: admin.headers },
    status: 414,
    code: 'uri_too_long',
  },
  FST_ERR_NOT_FOUND: {
    request: { method: 'PROPFIND' as InjectOptions['method'], url: companies, headers: admin.headers },
    status: 404,
    code: 'not_found',
  },
  FST_ERR_VALIDATION: {
    request: { method: 'GET', url: `${companies}?limit=many`, headers: admin.headers },
    status: 400,
    code: 'validation_failed',
  },
};

/** Codes of the same families that no request to this app can raise, and why. */
const unreachable: Record<string, string> = {
  FST_ERR_ASYNC_CONSTRAINT: 'the app declares no asynchronous route constraints',
  FST_ERR_INVALID_URL: 'raised for inject() calls with a malformed url option, never for a request on the wire',
  FST_ERR_CTP_INVALID_TYPE: 'raised when registering a content-type parser',
  FST_ERR_CTP_EMPTY_TYPE: 'raised when registering a content-type parser',
  FST_ERR_CTP_ALREADY_PRESENT: 'raised when registering a content-type parser',
  FST_ERR_CTP_INVALID_HANDLER: 'raised when registering a content-type parser',
  FST_ERR_CTP_INVALID_PARSE_TYPE: 'raised when registering a content-type parser',
  FST_ERR_CTP_INSTANCE_ALREADY_STARTED: 'raised when registering a content-type parser after start',
};

t.test("every request-time error code of Fastify's list is accounted for", async (t) => {
  const family = Object.keys(errorCodes).filter((code) =>
    /^FST_ERR_(CTP_|BAD_URL|MAX_PARAM_LENGTH|ASYNC_CONSTRAINT|INVALID_URL|NOT_FOUND|VALIDATION)/.test(code),
  );
  t.ok(family.length >= 10, `${family.length} codes`);
  for (const code of family) t.ok(code in reachable || code in unreachable, `${code} is tested or explained`);
});

for (const [code, { request, status, code: problemCode }] of Object.entries(reachable)) {
  t.test(`${code} → ${status} problem+json`, async (t) => {
    const res = await app.inject(request);
    t.equal(res.statusCode, status);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.match(json(res), { status, code: problemCode, detail: String });
  });
}

t.test('JWT errors and the rate limit answer problem+json too', async (t) => {
  for (const authorization of ['Bearer not.a.jwt', 'Bearer ', 'Basic abc', `Bearer ${admin.refresh}`]) {
    const res = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: { authorization } });
    t.equal(res.statusCode, 401, authorization.slice(0, 12));
    t.match(res.headers['content-type'], /^application\/problem\+json/);
  }
  const attempt = () => app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username: 'someone', password: 'wrong' } });
  t.equal((await attempt()).statusCode, 401);
  const limited = await attempt();
  t.equal(limited.statusCode, 429);
  t.match(limited.headers['content-type'], /^application\/problem\+json/);
  t.match(json(limited), { status: 429, code: 'rate_limited' });
});

t.test(
  'unknown body fields named like Object.prototype members are reported as plain fields (found by the fuzzer: was a 500)',
  async (t) => {
    const res = await app.inject({
      method: 'POST',
      url: companies,
      headers: { ...admin.headers, ...jsonType },
      payload: '{"name":"x","valueOf":1,"constructor":2,"toString":3}',
    });
    t.equal(res.statusCode, 400);
    t.match(json(res), { code: 'validation_failed', errors: { valueOf: ['Unknown field.'], constructor: ['Unknown field.'] } });
  },
);
