// Every error Fastify or a plugin raises around a handler leaves as problem+json with its status; the list is Fastify's own.
import { once } from 'node:events';
import { createConnection } from 'node:net';
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

/** Sends `bytes` as they are on a new connection to the listening app and answers everything the server wrote. */
async function rawExchange(port: number, bytes: Buffer): Promise<string> {
  const socket = createConnection({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.write(bytes);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}

t.test("requests the HTTP parser refuses answer problem+json and close the connection (was Fastify's own JSON)", async (t) => {
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.server.close());
  const port = Number(new URL(address).port);
  const request = (head: Buffer) => rawExchange(port, Buffer.concat([head, Buffer.from('\r\nHost: x\r\nConnection: close\r\n\r\n')]));
  const parse = (answer: string) => {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    return { head, body: JSON.parse(body) as Record<string, unknown> };
  };

  // A raw `ü` (UTF-8 bytes, not percent-encoded) in the query and in the path; a token in the URL is not echoed.
  for (const path of [`/api/v1/organizations/${organizationId}/companies/?search=Zürich&token=secret-value`, '/api/v1/Zürich/']) {
    const answer = await request(Buffer.concat([Buffer.from('GET '), Buffer.from(path, 'utf8'), Buffer.from(' HTTP/1.1')]));
    const { head, body } = parse(answer);
    t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/, path);
    t.match(head, /\r\ncontent-type: application\/problem\+json; charset=utf-8/i);
    t.match(head, /\r\nconnection: close/i);
    t.match(body, { status: 400, code: 'bad_request', title: 'Bad request', type: 'https://docs.example/errors/bad-request' });
    t.notOk(answer.includes('secret-value'), 'the URL is not echoed');
  }
  // Not HTTP at all.
  t.match(parse(await rawExchange(port, Buffer.from('HELLO THERE\r\n\r\n'))).body, { status: 400, code: 'bad_request' });
  // Headers over Node's 16 KiB.
  const big = await request(Buffer.from(`GET /healthz HTTP/1.1\r\nX-Big: ${'a'.repeat(20 * 1024)}`));
  t.match(parse(big).head, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
  t.match(parse(big).body, { status: 431, code: 'headers_too_large' });
  // A well-formed request on the same listener is still served.
  const fine = parse(await request(Buffer.from(`GET /api/v1/organizations/${organizationId}/companies/?search=Z%C3%BCrich HTTP/1.1`)));
  t.match(fine.head, /^HTTP\/1\.1 401 /, 'percent-encoded, the same URL reaches the route (401: no credentials sent)');
});
