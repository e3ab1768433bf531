// Imports and exports with a workspace API key: within its capabilities (VIEW_CRM reads and exports, MANAGE_CRM imports), the key recorded as the import's creator and as the actor of both in the audit log.
import t from 'tap';
import { runDueJobs } from '../../src/jobs/queue.js';
import { importTasks } from '../../src/modules/imports/import-job.js';
import { threadConnection } from '../../src/modules/imports/import-thread.js';
import { bearer, buildTestApp, json, problemBody } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { multipartForm } from '../helpers/multipart.js';

const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { admin: owner, organizationId } = await setupInstallation(app);
const otherWorkspace = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
await createUser(app, { membership: { organizationId: otherWorkspace.id, role: 'owner' } });
const crm = (path: string, id = organizationId) => `/api/v1/organizations/${id}/${path}`;

async function newKey(capabilities: string[]) {
  const res = await app.inject({ method: 'POST', url: crm('api-keys/'), headers: owner.headers, payload: { name: 'Sync', capabilities } });
  if (res.statusCode !== 201) throw new Error(res.body);
  return json<{ id: string; key: string; prefix: string }>(res);
}
const writer = await newKey(['VIEW_CRM', 'MANAGE_CRM']);
const reader = await newKey(['VIEW_CRM']);

const upload = (key: string, fields: Record<string, string>, id = organizationId) => {
  const { payload, contentType } = multipartForm(fields);
  return app.inject({ method: 'POST', url: crm('imports/', id), headers: { ...bearer(key), 'content-type': contentType }, payload });
};

t.test('a MANAGE_CRM key imports; the import names the key as its creator, never the user who created the key', async (t) => {
  const res = await upload(writer.key, { kind: 'companies', file: 'name,website\nKeyed Import Ltd,https://keyed.example\n' });
  t.equal(res.statusCode, 202, res.body);
  const queued = json(res);
  t.match(queued, { status: 'queued', total_rows: 1, created_by: null, created_by_api_key_id: writer.id });
  await runDueJobs(databaseUrl, importTasks({ db: app.db, pool: app.pg, connection: threadConnection(app.config) }));
  const done = await app.inject({ method: 'GET', url: crm(`imports/${queued.id}/`), headers: bearer(reader.key) });
  t.equal(done.statusCode, 200);
  t.match(json(done), { status: 'succeeded', created: 1, created_by_api_key_id: writer.id });
  const listed = await app.inject({ method: 'GET', url: crm('imports/'), headers: bearer(reader.key) });
  t.equal(listed.statusCode, 200);
  t.ok(json<Array<{ id: string }>>(listed).some((i) => i.id === queued.id));
  const errors = await app.inject({ method: 'GET', url: crm(`imports/${queued.id}/errors/`), headers: bearer(reader.key) });
  t.equal(errors.statusCode, 200);
  const company = await app.db.company.findFirstOrThrow({ where: { organizationId, name: 'Keyed Import Ltd' } });
  const timeline = await app.inject({ method: 'GET', url: crm(`companies/${company.id}/activity/`), headers: bearer(reader.key) });
  t.match(json(timeline), [{ kind: 'created', actor_type: 'api_key', actor_id: writer.id, actor_name: 'Sync' }], 'the key made it');
  const audit = await app.db.auditLog.findFirstOrThrow({ where: { action: 'import.started', targetId: queued.id } });
  t.match(audit, { actorType: 'api_key', actorApiKeyId: writer.id, actorUserId: null, organizationId });
  // A person's import still names the person.
  const { payload, contentType } = multipartForm({ kind: 'companies', file: 'name\nPerson Import\n' });
  const byPerson = await app.inject({
    method: 'POST',
    url: crm('imports/'),
    headers: { ...owner.headers, 'content-type': contentType },
    payload,
  });
  t.match(json(byPerson), { created_by: owner.id, created_by_api_key_id: null });
});

t.test('a VIEW_CRM key may not import or cancel (403 permission_denied), and nothing is stored', async (t) => {
  const before = await app.db.import.count();
  const refused = await upload(reader.key, { kind: 'companies', file: 'name\nNope\n' });
  t.equal(refused.statusCode, 403);
  t.equal(problemBody(refused).code, 'permission_denied');
  t.equal(await app.db.import.count(), before);
  const some = await app.db.import.findFirstOrThrow({ where: { organizationId } });
  const cancel = await app.inject({ method: 'POST', url: crm(`imports/${some.id}/cancel/`), headers: bearer(reader.key) });
  t.equal(cancel.statusCode, 403);
});

t.test('a key exports its workspace as CSV (VIEW_CRM), audited with the key; another workspace is 404', async (t) => {
  const companies = await app.inject({ method: 'GET', url: crm('companies/export/'), headers: bearer(reader.key) });
  t.equal(companies.statusCode, 200, companies.body);
  t.match(companies.headers['content-type'], /^text\/csv/);
  t.match(companies.body, /Keyed Import Ltd/);
  const contacts = await app.inject({ method: 'GET', url: crm('contacts/export/'), headers: bearer(reader.key) });
  t.equal(contacts.statusCode, 200);
  t.match(contacts.body, /^id,/);
  const entries = await app.db.auditLog.findMany({
    where: { action: 'crm.exported', actorApiKeyId: reader.id },
    orderBy: { createdAt: 'asc' },
  });
  t.same(
    entries.map((e) => [e.actorType, e.targetType, e.organizationId]),
    [
      ['api_key', 'companies', organizationId],
      ['api_key', 'contacts', organizationId],
    ],
  );
  t.notOk(JSON.stringify(entries).includes(reader.key), 'never the secret');
  const elsewhere = await app.inject({ method: 'GET', url: crm('companies/export/', otherWorkspace.id), headers: bearer(reader.key) });
  t.equal(elsewhere.statusCode, 404);
  const importElsewhere = await upload(writer.key, { kind: 'companies', file: 'name\nX\n' }, otherWorkspace.id);
  t.equal(importElsewhere.statusCode, 404);
});

t.test('a key without VIEW_CRM cannot export (403), a revoked key is refused at once (401)', async (t) => {
  const automationsOnly = await newKey(['MANAGE_AUTOMATIONS']);
  const refused = await app.inject({ method: 'GET', url: crm('companies/export/'), headers: bearer(automationsOnly.key) });
  t.equal(refused.statusCode, 403);
  t.equal(problemBody(refused).code, 'permission_denied');
  await app.inject({ method: 'DELETE', url: crm(`api-keys/${reader.id}/`), headers: owner.headers });
  const revoked = await app.inject({ method: 'GET', url: crm('companies/export/'), headers: bearer(reader.key) });
  t.equal(revoked.statusCode, 401);
  t.equal(problemBody(revoked).code, 'api_key_not_valid');
});
