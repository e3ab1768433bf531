// The console's list of a workspace's API keys (never a secret) and their revocation through the API's service, CSRF-checked and audited.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { ADMIN, setupInstallation } from '../helpers/fixtures.js';
import { consoleSession, FORM } from '../helpers/console.js';

const { app } = await buildTestApp(t);
const { admin: owner, organizationId } = await setupInstallation(app);
const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
const { cookie, get, csrf } = await consoleSession(app);
const post = (url: string, token: string | null, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { ...FORM, cookie, ...headers }, payload: token === null ? '' : `_csrf=${token}` });

async function newKey(name: string, capabilities: string[], extra: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/api-keys/`,
    headers: owner.headers,
    payload: { name, capabilities, ...extra },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return json<{ id: string; key: string; prefix: string }>(res);
}
const companies = `/api/v1/organizations/${organizationId}/companies/`;
const detail = `/admin/organizations/${organizationId}/`;
const revokeUrl = (id: string, workspace = organizationId) => `/admin/organizations/${workspace}/api-keys/${id}/revoke/`;

t.test('the workspace page lists its keys: prefix, name, capabilities, creator, dates, state; never a secret', async (t) => {
  const billing = await newKey('Billing <sync>', ['VIEW_CRM', 'MANAGE_CRM'], { expires_at: '2099-01-01T00:00:00.000Z' });
  const unused = await newKey('Unused', ['MANAGE_AUTOMATIONS']);
  t.equal((await app.inject({ method: 'GET', url: companies, headers: bearer(billing.key) })).statusCode, 200);
  const page = await get(detail);
  t.equal(page.statusCode, 200);
  t.match(page.body, '<h2>API keys</h2>');
  t.match(page.body, 'Billing &lt;sync&gt;', 'escaped');
  t.notOk(page.body.includes('Billing <sync>'));
  t.match(page.body, `<code>${billing.prefix}…</code>`);
  t.match(page.body, '<td>VIEW_CRM, MANAGE_CRM</td>');
  t.match(page.body, `<td>${ADMIN.username}</td>`);
  t.match(page.body, '2099-01-01T00:00:00.000Z');
  t.match(page.body, '<td>never</td>', 'the unused key was never used');
  t.match(page.body, '<td>active</td>');
  for (const key of [billing, unused]) t.notOk(page.body.includes(key.key), 'never the secret');
  t.notOk(page.body.includes(billing.key.slice(17)), 'nor any part past the prefix');
  // Another workspace's page does not list them.
  t.notOk((await get(`/admin/organizations/${other.id}/`)).body.includes(billing.prefix));
});

t.test('revoking from the console needs the CSRF token, goes through the API service, and refuses the key at once', async (t) => {
  const key = await newKey('To revoke', ['VIEW_CRM']);
  for (const [token, headers] of [
    [null, {}],
    ['wrong', {}],
    [csrf, { origin: 'https://evil.example' }],
  ] as const) {
    const refused = await post(revokeUrl(key.id), token, headers);
    t.equal(refused.statusCode, 403, `refused: ${String(token)} ${JSON.stringify(headers)}`);
  }
  t.equal((await app.inject({ method: 'GET', url: companies, headers: bearer(key.key) })).statusCode, 200, 'still valid');
  // Another workspace's address does not reach this workspace's key.
  t.equal((await post(revokeUrl(key.id, other.id), csrf)).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: companies, headers: bearer(key.key) })).statusCode, 200, 'still valid');

  const revoked = await post(revokeUrl(key.id), csrf);
  t.equal(revoked.statusCode, 303, revoked.body);
  t.match(revoked.headers.location, `/admin/organizations/${organizationId}/?done=`);
  t.equal((await app.inject({ method: 'GET', url: companies, headers: bearer(key.key) })).statusCode, 401, 'refused at once');
  const audit = await app.db.auditLog.findFirstOrThrow({ where: { action: 'api_key.revoked', targetId: key.id } });
  t.match(audit, { actorType: 'user', actorUsername: ADMIN.username, organizationId });
  const page = await get(detail);
  t.match(page.body, /<td>revoked \d{4}-/, 'the revoked key stays listed with its state');
  t.equal((await post(revokeUrl(key.id), csrf)).statusCode, 404, 'a second revocation finds no live key');
  t.equal((await post(revokeUrl('not-a-uuid'), csrf)).statusCode, 404);
});
