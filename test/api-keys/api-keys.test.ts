// Workspace API keys through HTTP: creation (shown once, stored hashed), use on CRM routes only, capability limits, revocation, expiry, audit and tenancy.
import { createHash } from 'node:crypto';
import t from 'tap';
import { bearer, buildTestApp, json, problemBody } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin: owner, organizationId: acmeId } = await setupInstallation(app);
const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
const member = await createUser(app, { membership: { organizationId: acmeId, role: 'member' } });
const keysUrl = (organizationId = acmeId) => `/api/v1/organizations/${organizationId}/api-keys/`;
const crm = (path: string, organizationId = acmeId) => `/api/v1/organizations/${organizationId}/${path}`;

async function createKey(by: SignedIn, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: keysUrl(), headers: by.headers, payload });
}
async function newKey(capabilities: string[], extra: Record<string, unknown> = {}) {
  const res = await createKey(owner, { name: `key ${capabilities.join('+')}`, capabilities, ...extra });
  if (res.statusCode !== 201) throw new Error(res.body);
  return json<{ id: string; key: string; prefix: string }>(res);
}

t.test('an owner creates a key shown once; only its SHA-256 is stored; the list shows no secret', async (t) => {
  const res = await createKey(owner, { name: 'Billing sync', capabilities: ['VIEW_CRM', 'MANAGE_CRM'] });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.match(body.key, /^crm_live_[A-Za-z0-9_-]{43}$/);
  t.equal(body.prefix, body.key.slice(0, 17));
  t.same(body.capabilities, ['VIEW_CRM', 'MANAGE_CRM']);
  t.equal(body.created_by, owner.id);
  t.equal(body.last_used_at, null);
  const row = await app.db.apiKey.findUniqueOrThrow({ where: { id: body.id } });
  t.same(Buffer.from(row.keyHash), createHash('sha256').update(body.key).digest());
  const list = await app.inject({ method: 'GET', url: keysUrl(), headers: owner.headers });
  t.equal(list.statusCode, 200);
  t.notOk(list.body.includes(body.key), 'the list never holds the key');
  const listed = json<Array<Record<string, unknown>>>(list).find((k) => k.id === body.id);
  t.match(listed, { name: 'Billing sync', prefix: body.prefix, created_by: owner.id, expires_at: null });
  t.notOk('key' in (listed ?? {}));
  const audit = await app.db.auditLog.findFirst({ where: { action: 'api_key.created', targetId: body.id } });
  t.equal(audit?.actorUserId, owner.id);
  t.equal(audit?.organizationId, acmeId);
});

t.test('bad bodies are 400; members may not manage keys; other workspaces are 404', async (t) => {
  for (const payload of [
    { name: 'x', capabilities: [] },
    { name: 'x', capabilities: ['MANAGE_MEMBERS'] },
    { name: 'x', capabilities: ['VIEW_CRM', 'VIEW_CRM'] },
    { name: '', capabilities: ['VIEW_CRM'] },
    { name: 'x', capabilities: ['VIEW_CRM'], expires_at: '2001-01-01T00:00:00Z' },
    { name: 'x', capabilities: ['VIEW_CRM'], extra: 1 },
  ]) {
    const res = await createKey(owner, payload);
    t.equal(res.statusCode, 400, JSON.stringify(payload));
  }
  t.equal((await createKey(member, { name: 'x', capabilities: ['VIEW_CRM'] })).statusCode, 403);
  t.equal((await app.inject({ method: 'GET', url: keysUrl(other.id), headers: owner.headers })).statusCode, 404);
});

t.test('a key works on its workspace CRM routes within its capabilities, and nowhere else', async (t) => {
  const writer = await newKey(['VIEW_CRM', 'MANAGE_CRM']);
  const reader = await newKey(['VIEW_CRM']);
  const created = await app.inject({ method: 'POST', url: crm('companies/'), headers: bearer(writer.key), payload: { name: 'Keyed Inc' } });
  t.equal(created.statusCode, 201, created.body);
  const read = await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(reader.key) });
  t.equal(read.statusCode, 200);
  t.ok(read.body.includes('Keyed Inc'));
  // A workspace's two-factor rule binds people, not keys.
  await app.db.organization.update({ where: { id: acmeId }, data: { requireTwoFactor: true } });
  const workspace = await app.inject({ method: 'GET', url: `/api/v1/organizations/${acmeId}/`, headers: bearer(reader.key) });
  await app.db.organization.update({ where: { id: acmeId }, data: { requireTwoFactor: false } });
  t.equal(workspace.statusCode, 200, workspace.body);
  t.equal(json(workspace).id, acmeId);
  t.equal((await app.inject({ method: 'GET', url: crm('automations/'), headers: bearer(reader.key) })).statusCode, 200);
  // Scope: a read-only key cannot write; no key can create automations without MANAGE_AUTOMATIONS.
  const denied = await app.inject({ method: 'POST', url: crm('contacts/'), headers: bearer(reader.key), payload: { first_name: 'A' } });
  t.equal(denied.statusCode, 403);
  t.equal(problemBody(denied).code, 'permission_denied');
  // Not a CRM route: members, keys, account and installation routes answer api_key_not_allowed.
  for (const url of [crm('members/'), keysUrl(), '/api/v1/auth/me/', '/api/v1/installation/system-information/']) {
    const res = await app.inject({ method: 'GET', url, headers: bearer(writer.key) });
    t.equal(res.statusCode, 403, url);
    t.equal(problemBody(res).code, 'api_key_not_allowed', url);
    t.notOk(res.body.includes(writer.key));
  }
  // Tenancy: another workspace is a 404, like for a non-member.
  const elsewhere = await app.inject({ method: 'GET', url: crm('companies/', other.id), headers: bearer(writer.key) });
  t.equal(elsewhere.statusCode, 404);
  t.equal(problemBody(elsewhere).code, 'organization_not_found');
  const row = await app.db.apiKey.findUniqueOrThrow({ where: { id: writer.id } });
  t.ok(row.lastUsedAt, 'last use recorded');
  // An unknown key with the prefix is a 401.
  const unknown = await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(`${writer.key.slice(0, -2)}xx`) });
  t.equal(unknown.statusCode, 401);
  t.equal(problemBody(unknown).code, 'api_key_not_valid');
});

t.test('revocation and expiry refuse the key at once', async (t) => {
  const key = await newKey(['VIEW_CRM']);
  t.equal((await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(key.key) })).statusCode, 200);
  t.equal((await app.inject({ method: 'DELETE', url: `${keysUrl()}${key.id}/`, headers: member.headers })).statusCode, 403);
  const revoked = await app.inject({ method: 'DELETE', url: `${keysUrl()}${key.id}/`, headers: owner.headers });
  t.equal(revoked.statusCode, 204);
  const after = await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(key.key) });
  t.equal(after.statusCode, 401);
  t.equal(problemBody(after).code, 'api_key_not_valid');
  t.equal((await app.inject({ method: 'DELETE', url: `${keysUrl()}${key.id}/`, headers: owner.headers })).statusCode, 404);
  const audit = await app.db.auditLog.findFirst({ where: { action: 'api_key.revoked', targetId: key.id } });
  t.equal(audit?.actorUserId, owner.id);
  const listed = json<Array<{ id: string }>>(await app.inject({ method: 'GET', url: keysUrl(), headers: owner.headers }));
  t.notOk(
    listed.some((k) => k.id === key.id),
    'revoked keys leave the list',
  );

  const expiring = await newKey(['VIEW_CRM'], { expires_at: new Date(Date.now() + 60_000).toISOString() });
  t.equal((await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(expiring.key) })).statusCode, 200);
  // Time passes (moved in the database: the check is the database's now()).
  await app.db.apiKey.update({ where: { id: expiring.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
  t.equal((await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(expiring.key) })).statusCode, 401);
  // Another workspace cannot revoke this workspace's key.
  const kept = await newKey(['VIEW_CRM']);
  const outsider = await createUser(app, { membership: { organizationId: other.id, role: 'owner' } });
  t.equal((await app.inject({ method: 'DELETE', url: `${keysUrl(other.id)}${kept.id}/`, headers: outsider.headers })).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: crm('companies/'), headers: bearer(kept.key) })).statusCode, 200);
});
