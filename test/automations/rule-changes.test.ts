// Changing and deleting rules: PATCH and DELETE with If-Match (412 on a stale version), a webhook's secret kept across
// a change, a paused rule queueing nothing, runs kept (and a queued one skipped) after the delete, capabilities.
import t from 'tap';
import { runDueRuns } from '../../src/modules/automations/run-queue.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { runDepsOf } from '../helpers/jobs.js';

// No background workers: the test decides when queued runs execute.
const { app } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { admin, organizationId } = await setupInstallation(app);
const member = await createUser(app, { membership: { organizationId, role: 'member' } });
const viewer = await createUser(app, { membership: { organizationId, role: 'viewer' } });
const outsider = await createUser(app);

const api = `/api/v1/organizations/${organizationId}`;
const base = `${api}/automations`;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (method: Method, url: string, payload?: object, headers: Record<string, string> = admin.headers) =>
  app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const hookRule = {
  name: 'Sync',
  trigger: 'company.created',
  action_type: 'webhook',
  action_config: { url: 'https://hooks.example.com/crm', secret: 's3cret-value-for-signing' },
};
const emailRule = {
  name: 'Welcome',
  trigger: 'contact.created',
  action_type: 'send_email',
  action_config: { to: ['team@example.test'], subject: 'New contact', body: 'Say hello.' },
};
const createRule = async (rule: object) => json(await call('POST', `${base}/`, rule));
const runsOf = async () => json(await call('GET', `${base}/runs/`)) as { id: string; automation_id: string; status: string }[];

t.test('PATCH changes the given fields, answers the new ETag and honours If-Match', async (t) => {
  const rule = await createRule(hookRule);
  const read = await call('GET', `${base}/${rule.id}/`);
  const etag = read.headers.etag as string;
  t.ok(etag, 'reads carry an ETag');

  const changed = await call(
    'PATCH',
    `${base}/${rule.id}/`,
    { name: 'Sync v2', trigger: 'company.updated' },
    { ...admin.headers, 'if-match': etag },
  );
  t.equal(changed.statusCode, 200);
  t.match(json(changed), { name: 'Sync v2', trigger: 'company.updated', is_active: true });
  t.same(json(changed).action_config, { url: 'https://hooks.example.com/crm', has_secret: true });
  t.not(changed.headers.etag, etag, 'a new version');

  const stale = await call('PATCH', `${base}/${rule.id}/`, { name: 'Lost update' }, { ...admin.headers, 'if-match': etag });
  t.equal(stale.statusCode, 412);
  t.equal(json(stale).code, 'precondition_failed');
  t.equal(json(await call('GET', `${base}/${rule.id}/`)).name, 'Sync v2', 'the stale change wrote nothing');

  const url = await call('PATCH', `${base}/${rule.id}/`, { action_config: { url: 'https://hooks.example.com/v2' } });
  t.same(json(url).action_config, { url: 'https://hooks.example.com/v2', has_secret: true }, 'the secret is kept');
  const generated = json(
    await call('PATCH', `${base}/${rule.id}/`, { action_config: { url: 'https://hooks.example.com/v2', generate_secret: true } }),
  );
  t.match(generated.action_config.secret, /^whsec_/, 'a generated secret is shown once');
  t.equal(json(await call('GET', `${base}/${rule.id}/`)).action_config.secret, undefined);
});

t.test('PATCH refuses bad input with 400 and writes nothing', async (t) => {
  const hook = await createRule(hookRule);
  const email = await createRule(emailRule);
  const cases: [string, object][] = [
    [hook.id, { action_config: emailRule.action_config }],
    [email.id, { action_config: { url: 'https://hooks.example.com/x' } }],
    [hook.id, { action_config: { url: 'http://127.0.0.1/x' } }],
    [hook.id, { name: '' }],
    [hook.id, { trigger: 'company.exploded' }],
    [hook.id, { action_type: 'send_email' }],
    [hook.id, { is_active: 'no' }],
  ];
  for (const [id, body] of cases) {
    const res = await call('PATCH', `${base}/${id}/`, body);
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  }
  t.equal(json(await call('GET', `${base}/${hook.id}/`)).updated_at, hook.updated_at, 'unchanged');
  t.equal((await call('PATCH', `${base}/00000000-0000-4000-8000-000000000000/`, { name: 'x' })).statusCode, 404);
});

t.test('a paused rule queues no runs; resumed, it does again', async (t) => {
  const rule = await createRule({ ...hookRule, trigger: 'company.created' });
  await call('PATCH', `${base}/${rule.id}/`, { is_active: false });
  t.equal((await call('POST', `${api}/companies/`, { name: 'Paused Co' })).statusCode, 201);
  t.equal((await runsOf()).filter((run) => run.automation_id === rule.id).length, 0);
  await call('PATCH', `${base}/${rule.id}/`, { is_active: true });
  await call('POST', `${api}/companies/`, { name: 'Resumed Co' });
  t.equal((await runsOf()).filter((run) => run.automation_id === rule.id).length, 1);
});

t.test('DELETE honours If-Match, keeps the runs with automation_id, and a queued run ends skipped', async (t) => {
  const rule = await createRule({ ...hookRule, trigger: 'company.created' });
  const created = await call('POST', `${api}/companies/`, { name: 'Queued Co' });
  t.equal(created.statusCode, 201);
  const [run] = (await runsOf()).filter((r) => r.automation_id === rule.id);
  t.equal(run?.status, 'queued');

  const stale = await call('DELETE', `${base}/${rule.id}/`, undefined, { ...admin.headers, 'if-match': '"0"' });
  t.equal(stale.statusCode, 412);
  t.equal((await call('GET', `${base}/${rule.id}/`)).statusCode, 200, 'still there');

  const etag = (await call('GET', `${base}/${rule.id}/`)).headers.etag as string;
  const deleted = await call('DELETE', `${base}/${rule.id}/`, undefined, { ...admin.headers, 'if-match': etag });
  t.equal(deleted.statusCode, 204);
  t.equal(deleted.body, '');
  t.equal((await call('GET', `${base}/${rule.id}/`)).statusCode, 404);
  t.equal((await call('DELETE', `${base}/${rule.id}/`)).statusCode, 404, 'deleted once');

  await runDueRuns(app.pg, runDepsOf(app, false));
  const kept = (await runsOf()).find((r) => r.id === run?.id);
  t.match(kept, { automation_id: rule.id, status: 'skipped', error_message: 'The rule was deleted before the run executed.' });
  await call('POST', `${api}/companies/`, { name: 'After Co' });
  t.equal((await runsOf()).filter((r) => r.automation_id === rule.id).length, 1, 'no new runs for a deleted rule');
  const audit = await app.db.auditLog.findMany({ where: { targetId: rule.id }, orderBy: { createdAt: 'asc' } });
  t.same(
    audit.map((entry) => entry.action),
    ['automation.created', 'automation.deleted'],
  );
});

t.test('capabilities: MANAGE_AUTOMATIONS changes and deletes; others 403, outsiders 404, anonymous 401', async (t) => {
  const rule = await createRule(hookRule);
  const key = json(await call('POST', `${api}/api-keys/`, { name: 'reader', capabilities: ['VIEW_CRM'] })).key as string;
  const keyHeaders = { authorization: `Bearer ${key}` };
  for (const headers of [member.headers, viewer.headers, keyHeaders]) {
    t.equal((await call('PATCH', `${base}/${rule.id}/`, { name: 'x' }, headers)).statusCode, 403);
    t.equal((await call('DELETE', `${base}/${rule.id}/`, undefined, headers)).statusCode, 403);
  }
  t.equal((await call('PATCH', `${base}/${rule.id}/`, { name: 'x' }, outsider.headers)).statusCode, 404);
  t.equal((await call('DELETE', `${base}/${rule.id}/`, undefined, outsider.headers)).statusCode, 404);
  t.equal((await call('DELETE', `${base}/${rule.id}/`, undefined, {})).statusCode, 401);
  t.equal(json(await call('GET', `${base}/${rule.id}/`)).name, 'Sync', 'unchanged');

  const manager = json(await call('POST', `${api}/api-keys/`, { name: 'manager', capabilities: ['VIEW_CRM', 'MANAGE_AUTOMATIONS'] }))
    .key as string;
  t.equal((await call('DELETE', `${base}/${rule.id}/`, undefined, { authorization: `Bearer ${manager}` })).statusCode, 204);
});
