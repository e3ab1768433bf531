// The console's automation rules of a workspace: listed, edited and deleted through the API's service, CSRF-checked,
// If-Match-like (the form's version), audited; a deleted rule's runs stay.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { ADMIN, setupInstallation } from '../helpers/fixtures.js';
import { consoleSession, FORM } from '../helpers/console.js';

const { app } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { admin: owner, organizationId } = await setupInstallation(app);
const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
const { cookie, get, csrf } = await consoleSession(app);
const post = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { ...FORM, cookie, ...headers }, payload: new URLSearchParams(fields).toString() });

const api = `/api/v1/organizations/${organizationId}`;
async function newRule(name: string) {
  const res = await app.inject({
    method: 'POST',
    url: `${api}/automations/`,
    headers: owner.headers,
    payload: {
      name,
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'https://hooks.example.com/a', secret: 'a-secret-value-12' },
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return json<{ id: string; updated_at: string }>(res);
}
const readRule = async (id: string) => json(await app.inject({ method: 'GET', url: `${api}/automations/${id}/`, headers: owner.headers }));
const ruleUrl = (id: string, workspace = organizationId) => `/admin/organizations/${workspace}/automations/${id}/`;

t.test('the workspace page links its rules; the list shows them, escaped, with edit and delete', async (t) => {
  const rule = await newRule('Billing <sync>');
  t.match((await get(`/admin/organizations/${organizationId}/`)).body, `href="/admin/organizations/${organizationId}/automations/"`);
  const list = await get(`/admin/organizations/${organizationId}/automations/`);
  t.equal(list.statusCode, 200);
  t.match(list.body, 'Billing &lt;sync&gt;');
  t.match(list.body, `href="${ruleUrl(rule.id)}"`);
  t.match(list.body, `action="${ruleUrl(rule.id)}delete/"`);
  const form = await get(ruleUrl(rule.id));
  t.equal(form.statusCode, 200);
  t.match(form.body, 'value="https://hooks.example.com/a"');
  t.notOk(form.body.includes('a-secret-value-12'), 'never the secret');
  t.equal((await get(ruleUrl(rule.id, other.id))).statusCode, 404, "another workspace's address does not reach it");
});

t.test('editing needs the CSRF token, honours the version and changes the rule through the API service', async (t) => {
  const rule = await newRule('Edit me');
  const fields = { name: 'Edited', trigger: 'company.updated', url: 'https://hooks.example.com/b', version: rule.updated_at };
  for (const [token, headers] of [
    [null, {}],
    ['wrong', {}],
    [csrf, { origin: 'https://evil.example' }],
  ] as const) {
    const refused = await post(ruleUrl(rule.id), token === null ? fields : { ...fields, _csrf: token }, headers);
    t.equal(refused.statusCode, 403, `refused: ${String(token)}`);
  }
  t.equal((await readRule(rule.id)).name, 'Edit me', 'unchanged');

  const saved = await post(ruleUrl(rule.id), { ...fields, _csrf: csrf });
  t.equal(saved.statusCode, 303, saved.body);
  t.match(saved.headers.location, `/admin/organizations/${organizationId}/automations/?done=`);
  t.match(await readRule(rule.id), {
    name: 'Edited',
    trigger: 'company.updated',
    is_active: false,
    action_config: { url: 'https://hooks.example.com/b', has_secret: true },
  });
  const audit = await app.db.auditLog.findFirstOrThrow({ where: { action: 'automation.updated', targetId: rule.id } });
  t.match(audit, { actorType: 'user', actorUsername: ADMIN.username, organizationId });

  const stale = await post(ruleUrl(rule.id), { ...fields, name: 'Stale', is_active: 'true', _csrf: csrf });
  t.equal(stale.statusCode, 412, 'a form read before the change is refused');
  const bad = await post(ruleUrl(rule.id), {
    ...fields,
    version: (await readRule(rule.id)).updated_at,
    url: 'http://127.0.0.1/',
    _csrf: csrf,
  });
  t.equal(bad.statusCode, 400);
  t.equal((await readRule(rule.id)).name, 'Edited', 'nothing written by the refused forms');
});

t.test('deleting needs the CSRF token and keeps the runs', async (t) => {
  const rule = await newRule('Delete me');
  await app.inject({ method: 'POST', url: `${api}/companies/`, headers: owner.headers, payload: { name: 'Run Co' } });
  const url = `${ruleUrl(rule.id)}delete/`;
  t.equal((await post(url, { version: rule.updated_at })).statusCode, 403);
  t.equal((await post(`${ruleUrl(rule.id, other.id)}delete/`, { _csrf: csrf })).statusCode, 404);
  const deleted = await post(url, { version: rule.updated_at, _csrf: csrf });
  t.equal(deleted.statusCode, 303, deleted.body);
  t.equal((await get(ruleUrl(rule.id))).statusCode, 404);
  t.equal(await app.db.automationRun.count({ where: { automationId: rule.id } }), 1, 'its run is kept');
  t.match((await get('/admin/automation-runs/')).body, '(deleted rule)');
});

t.test('the form shows and changes the condition as JSON; malformed JSON or trees are a 400 page, nothing written', async (t) => {
  const rule = await newRule('Conditional');
  const condition = { field: 'lifecycle_stage', op: 'eq', value: 'customer' };
  const fields = { name: 'Conditional', trigger: 'company.created', url: 'https://hooks.example.com/a', is_active: 'true', _csrf: csrf };
  const saved = await post(ruleUrl(rule.id), { ...fields, version: rule.updated_at, condition: JSON.stringify(condition) });
  t.equal(saved.statusCode, 303, saved.body);
  const read = await readRule(rule.id);
  t.same(read.condition, condition);
  const form = await get(ruleUrl(rule.id));
  t.match(form.body, '&quot;lifecycle_stage&quot;', 'the form shows the condition, escaped');

  const notJson = await post(ruleUrl(rule.id), { ...fields, version: read.updated_at, condition: '{"field": ' });
  t.equal(notJson.statusCode, 400);
  t.match(notJson.body, 'The condition is not valid JSON');
  const badTree = await post(ruleUrl(rule.id), {
    ...fields,
    version: read.updated_at,
    condition: JSON.stringify({ and: [{ field: 'nope', op: 'eq', value: 1 }] }),
  });
  t.equal(badTree.statusCode, 400);
  t.match(badTree.body, 'condition.and.0.field');
  const onImport = await post(ruleUrl(rule.id), {
    ...fields,
    trigger: 'import.finished',
    version: read.updated_at,
    condition: JSON.stringify(condition),
  });
  t.equal(onImport.statusCode, 400);
  t.same((await readRule(rule.id)).condition, condition, 'unchanged by the refused forms');

  const cleared = await post(ruleUrl(rule.id), { ...fields, version: read.updated_at, condition: '  ' });
  t.equal(cleared.statusCode, 303, cleared.body);
  t.equal((await readRule(rule.id)).condition, null, 'an empty condition removes it');
});
