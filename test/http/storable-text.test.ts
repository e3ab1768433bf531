// Text PostgreSQL cannot store (NUL, unpaired surrogates) is refused with 400 naming the field, on every endpoint, before any write.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const org = `/api/v1/organizations/${organizationId}`;
const send = (method: string, url: string, payload: string) =>
  app.inject({ method: method as 'POST', url, headers: { ...admin.headers, 'content-type': 'application/json' }, payload });

const cases: Array<[string, string, string, string]> = [
  ['POST', `${org}/companies/`, '{"name":"a\\u0000b"}', 'name'],
  ['POST', `${org}/companies/`, '{"name":"ok","website":"\\ud800"}', 'website'],
  [
    'POST',
    `${org}/automations/`,
    '{"name":"r","trigger":"company.created","action_type":"webhook","action_config":{"url":"https://example.com/\\u0000"}}',
    'action_config.url',
  ],
  ['POST', `${org}/invitations/`, '{"email":"a\\u0000@example.test","role":"member"}', 'email'],
  ['PATCH', '/api/v1/auth/me/profile/', '{"display_name":"\\udc00x"}', 'display_name'],
  ['POST', '/api/v1/auth/token/', '{"username":"ad\\u0000min","password":"x"}', 'username'],
  ['POST', `${org}/companies/`, '{"na\\u0000me":"x"}', 'na\u0000me'],
];

for (const [method, url, payload, field] of cases) {
  t.test(`${method} ${url.replace(org, '…')} with ${field}`, async (t) => {
    const before = await app.db.company.count();
    const res = await send(method, url, payload);
    t.equal(res.statusCode, 400);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.match(json(res), { code: 'validation_failed', errors: { [field]: [/NUL characters or unpaired surrogates/] } });
    t.equal(await app.db.company.count(), before, 'nothing written');
  });
}

t.test('query strings and path parameters too', async (t) => {
  const search = await app.inject({ method: 'GET', url: `${org}/companies/?search=%00`, headers: admin.headers });
  t.equal(search.statusCode, 400);
  t.match(json(search), { errors: { search: [String] } });
  const path = await app.inject({ method: 'GET', url: `${org}/companies/%00/`, headers: admin.headers });
  t.equal(path.statusCode, 400);
  t.match(json(path), { errors: { company_id: [String] } });
});

t.test('well-formed text outside the BMP is stored as sent', async (t) => {
  const res = await send('POST', `${org}/companies/`, JSON.stringify({ name: 'Ünïcode 🚀 株式会社' }));
  t.equal(res.statusCode, 201);
  t.equal(json(res).name, 'Ünïcode 🚀 株式会社');
});
