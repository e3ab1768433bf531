// Compressed answers: the OpenAPI document, Swagger UI and CSV exports in br or gzip as Accept-Encoding asks, the same
// content once decoded; not the API's JSON, never an answer to a write or a console page (BREACH); bodies not inflated.
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;

const get = (url: string, encoding?: string) =>
  app.inject({ method: 'GET', url, headers: { ...admin.headers, ...(encoding ? { 'accept-encoding': encoding } : {}) } });

/** The body as sent, decoded by its Content-Encoding. */
function decoded(res: LightMyRequestResponse): string {
  const raw = res.rawPayload;
  const encoding = res.headers['content-encoding'];
  if (encoding === 'gzip') return gunzipSync(raw).toString('utf8');
  if (encoding === 'br') return brotliDecompressSync(raw).toString('utf8');
  if (encoding !== undefined) throw new Error(`unexpected content-encoding ${String(encoding)}`);
  return raw.toString('utf8');
}

for (let i = 0; i < 12; i++) {
  const res = await app.inject({
    method: 'POST',
    url: `${base}/companies/`,
    headers: admin.headers,
    payload: { name: `Compressible ${i}`, website: `https://compressible-${i}.example.com`, notes: 'Met at the fair. '.repeat(20) },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
}

t.test('the OpenAPI document and Swagger UI in br or gzip, as asked, decode to the same content', async (t) => {
  const plain = await app.inject({ method: 'GET', url: '/openapi.json' });
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: as it is');
  for (const [asked, expected] of [
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
  ] as const) {
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': asked } });
    t.equal(res.statusCode, 200);
    t.equal(res.headers['content-encoding'], expected, `Accept-Encoding: ${asked}`);
    t.match(String(res.headers.vary), /accept-encoding/i);
    t.ok(res.rawPayload.length * 5 < plain.rawPayload.length, `${res.rawPayload.length} of ${plain.rawPayload.length} bytes`);
    t.same(JSON.parse(decoded(res)), JSON.parse(plain.body));
  }
  for (const asked of ['identity', 'deflate']) {
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': asked } });
    t.equal(res.headers['content-encoding'], undefined, `${asked} is not offered`);
  }
  const asset = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js', headers: { 'accept-encoding': 'br' } });
  t.equal(asset.statusCode, 200);
  t.equal(asset.headers['content-encoding'], 'br', "Swagger UI's script");
  t.match(decoded(asset), /SwaggerUIBundle/);
});

t.test('a CSV export is compressed and decodes to the same file', async (t) => {
  const csv = await get(`${base}/companies/export/`);
  t.equal(csv.headers['content-encoding'], undefined);
  for (const asked of ['gzip', 'br']) {
    const res = await get(`${base}/companies/export/`, asked);
    t.equal(res.statusCode, 200);
    t.equal(res.headers['content-encoding'], asked);
    t.match(String(res.headers['content-disposition']), /^attachment/);
    t.ok(res.rawPayload.length * 3 < csv.rawPayload.length, `${res.rawPayload.length} of ${csv.rawPayload.length} bytes`);
    t.equal(decoded(res), csv.body);
  }
});

t.test("never compressed: the API's JSON (left to the edge), answers to writes, console pages", async (t) => {
  for (const url of [`${base}/companies/?limit=10`, `${base}/companies/?search=compressible&limit=10`]) {
    const res = await get(url, 'gzip, br');
    t.equal(res.statusCode, 200);
    t.ok(res.rawPayload.length > 1024, `${url}: ${res.rawPayload.length} bytes`);
    t.equal(res.headers['content-encoding'], undefined, url);
    t.equal(json(res).length, 10);
  }
  const writes: InjectOptions[] = [
    {
      method: 'POST',
      url: `${base}/companies/`,
      headers: { ...admin.headers, 'accept-encoding': 'gzip, br' },
      payload: { name: 'Written', notes: 'A long note. '.repeat(200) },
    },
    {
      method: 'POST',
      url: `${base}/api-keys/`,
      headers: { ...admin.headers, 'accept-encoding': 'gzip, br' },
      payload: { name: 'Integration '.repeat(8).trim(), capabilities: ['VIEW_CRM', 'MANAGE_CRM'] },
    },
    {
      method: 'POST',
      url: '/api/v1/auth/token/',
      headers: { 'accept-encoding': 'gzip, br' },
      payload: { username: 'admin', password: 'correct-horse-battery' },
    },
  ];
  for (const request of writes) {
    const res = await app.inject(request);
    t.ok(res.statusCode < 300, `${request.url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    t.equal(res.headers['content-encoding'], undefined, `${request.method} ${request.url}`);
    t.doesNotThrow(() => JSON.parse(res.body));
  }
  const signedIn = await app.inject({
    method: 'POST',
    url: '/admin/login/',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-encoding': 'gzip, br' },
    payload: new URLSearchParams({ username: 'admin', password: 'correct-horse-battery' }).toString(),
  });
  const cookie = signedIn.cookies.find((c) => c.name === 'crm_admin_session');
  t.ok(cookie, `console sign-in: ${signedIn.statusCode}`);
  for (const url of ['/admin/', '/admin/users/', '/admin/audit/']) {
    const res = await app.inject({
      method: 'GET',
      url,
      headers: { cookie: `crm_admin_session=${cookie?.value}`, 'accept-encoding': 'gzip, br' },
    });
    t.equal(res.statusCode, 200, url);
    t.equal(res.headers['content-encoding'], undefined, `a console page: ${url} (${res.rawPayload.length} bytes)`);
  }
  const dashboard = await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: `crm_admin_session=${cookie?.value}` } });
  t.ok(dashboard.rawPayload.length > 1024, 'the dashboard is big enough to be compressed');
  t.match(dashboard.body, /name="_csrf"/, 'and carries a CSRF token');
});

t.test('a compressed request body is not inflated: 400, and nothing written', async (t) => {
  const before = json(await get(`${base}/companies/?limit=100`)).length;
  const res = await app.inject({
    method: 'POST',
    url: `${base}/companies/`,
    headers: { ...admin.headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    payload: gzipSync(JSON.stringify({ name: 'Zipped' })),
  });
  t.equal(res.statusCode, 400);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
  t.equal(json(await get(`${base}/companies/?limit=100`)).length, before);
});
