// A workspace API key is the actor of what it does: in the audit log (installation API and console page), task completion and imports, never the user who created it; never its secret.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { consoleSession } from '../helpers/console.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin: owner, organizationId } = await setupInstallation(app);
const crm = (path: string) => `/api/v1/organizations/${organizationId}/${path}`;

const created = await app.inject({
  method: 'POST',
  url: crm('api-keys/'),
  headers: owner.headers,
  payload: { name: 'Billing <sync>', capabilities: ['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS'] },
});
const key = json<{ id: string; key: string; prefix: string }>(created);

/** The installation audit log's entries of one action, newest first. */
async function auditEntries(action: string): Promise<Array<Record<string, unknown>>> {
  const res = await app.inject({ method: 'GET', url: `/api/v1/installation/audit-log/?action=${action}`, headers: owner.headers });
  if (res.statusCode !== 200) throw new Error(res.body);
  t.notOk(res.body.includes(key.key), 'never the secret');
  return json<Array<Record<string, unknown>>>(res);
}

const KEY_ACTOR = () => ({
  actor_type: 'api_key',
  actor_user_id: null,
  actor_username: null,
  actor_api_key_id: key.id,
  actor_api_key_name: 'Billing <sync>',
  actor_api_key_prefix: key.prefix,
  organization_id: organizationId,
});

t.test('creating and rotating a rule with a key audits the key, not the user who created it', async (t) => {
  const rule = await app.inject({
    method: 'POST',
    url: crm('automations/'),
    headers: bearer(key.key),
    payload: { name: 'Keyed hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'http://127.0.0.1:9/hook' } },
  });
  t.equal(rule.statusCode, 201, rule.body);
  const ruleId = json(rule).id;
  const [createdEntry] = await auditEntries('automation.created');
  t.match(createdEntry, { ...KEY_ACTOR(), target_type: 'automation', target_id: ruleId });
  const rotated = await app.inject({ method: 'POST', url: crm(`automations/${ruleId}/rotate-secret/`), headers: bearer(key.key) });
  t.equal(rotated.statusCode, 200, rotated.body);
  const [rotation] = await auditEntries('automation.secret_rotated');
  t.match(rotation, { ...KEY_ACTOR(), target_id: ruleId });
  t.notOk(JSON.stringify(rotation).includes(json(rotated).secret), 'the new secret is not in the entry');
  // The actor filter finds a key's entries by its id.
  const byKey = await app.inject({ method: 'GET', url: `/api/v1/installation/audit-log/?actor=${key.id}`, headers: owner.headers });
  t.same(
    json<Array<{ action: string }>>(byKey)
      .map((e) => e.action)
      .sort(),
    ['automation.created', 'automation.secret_rotated'],
  );
  // The same actions by a person still name the person.
  const byPerson = await app.inject({
    method: 'POST',
    url: crm('automations/'),
    headers: owner.headers,
    payload: {
      name: 'Personal hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'http://127.0.0.1:9/hook' },
    },
  });
  const [personEntry] = await auditEntries('automation.created');
  t.match(personEntry, { actor_type: 'user', actor_user_id: owner.id, actor_api_key_id: null, target_id: json(byPerson).id });
});

t.test('a rule refused (400) writes no audit row', async (t) => {
  const before = (await auditEntries('automation.created')).length;
  const refused = await app.inject({
    method: 'POST',
    url: crm('automations/'),
    headers: bearer(key.key),
    payload: { name: 'Bad', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'not a url' } },
  });
  t.equal(refused.statusCode, 400);
  t.equal((await auditEntries('automation.created')).length, before);
});

t.test('a task completed with a key records the key in completed_by_api_key_id, completed_by stays null', async (t) => {
  const company = await app.inject({ method: 'POST', url: crm('companies/'), headers: bearer(key.key), payload: { name: 'Keyed Co' } });
  const task = await app.inject({
    method: 'POST',
    url: crm('tasks/'),
    headers: bearer(key.key),
    payload: { title: 'Renewal', company_id: json(company).id },
  });
  t.equal(task.statusCode, 201, task.body);
  const done = await app.inject({
    method: 'PATCH',
    url: crm(`tasks/${json(task).id}/`),
    headers: bearer(key.key),
    payload: { workflow_status: 'completed' },
  });
  t.equal(done.statusCode, 200, done.body);
  t.match(json(done), { completed_by: null, completed_by_api_key_id: key.id });
  const reopened = await app.inject({
    method: 'PATCH',
    url: crm(`tasks/${json(task).id}/`),
    headers: owner.headers,
    payload: { workflow_status: 'todo' },
  });
  t.match(json(reopened), { completed_by: null, completed_by_api_key_id: null, completed_at: null });
  const byPerson = await app.inject({
    method: 'PATCH',
    url: crm(`tasks/${json(task).id}/`),
    headers: owner.headers,
    payload: { workflow_status: 'completed' },
  });
  t.match(json(byPerson), { completed_by: owner.id, completed_by_api_key_id: null });
});

t.test('the console audit page shows the key by name and prefix, escaped, never the secret', async (t) => {
  const { get } = await consoleSession(app);
  const page = await get('/admin/audit/?action=automation.secret_rotated');
  t.equal(page.statusCode, 200);
  t.match(page.body, `API key <strong>Billing &lt;sync&gt;</strong> <code>${key.prefix}…</code>`);
  t.notOk(page.body.includes(key.key), 'never the secret');
  t.notOk(page.body.includes('Billing <sync>'), 'escaped');
  const filtered = await get('/admin/audit/?actor=billing');
  t.match(filtered.body, 'automation.created');
});
