// Automation rules: creation (runs nothing), validation per action type, private-target refusal, capabilities,
// tenant isolation, lists and run lists.
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { startWebhookTarget } from './webhook-target.js';

const target = await startWebhookTarget(t);
// Default configuration: AUTOMATION_WEBHOOK_ALLOW_PRIVATE is off.
const { app, logs } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const member = await createUser(app, { membership: { organizationId, role: 'member' } });
const viewer = await createUser(app, { membership: { organizationId, role: 'viewer' } });
const outsider = await createUser(app);

const urlOf = (orgId: string) => `/api/v1/organizations/${orgId}/automations`;
const base = urlOf(organizationId);
const create = (payload: unknown, headers = admin.headers, url = `${base}/`) =>
  app.inject({ method: 'POST', url, headers, payload: payload as object });
const get = (url: string, headers = admin.headers) => app.inject({ method: 'GET', url, headers });

const emailRule = {
  name: 'Welcome',
  trigger: 'contact.created',
  action_type: 'send_email',
  action_config: { to: ['team@example.test'], subject: 'New contact', body: 'Say hello.' },
};
const hookRule = {
  name: 'Sync',
  trigger: 'company.updated',
  action_type: 'webhook',
  action_config: { url: 'https://hooks.example.com/crm?x=1', secret: 's3cret-value-for-signing' },
};

t.test('creating saves the rule and runs nothing', async (t) => {
  const res = await create({ ...emailRule, organization_id: '00000000-0000-4000-8000-000000000000' });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.same(Object.keys(body).sort(), [
    'action_config',
    'action_type',
    'condition',
    'created_at',
    'id',
    'is_active',
    'name',
    'trigger',
    'updated_at',
  ]);
  t.match(body, {
    name: 'Welcome',
    trigger: 'contact.created',
    action_type: 'send_email',
    is_active: true,
    action_config: emailRule.action_config,
  });
  const row = await app.db.automation.findUniqueOrThrow({ where: { id: body.id } });
  t.equal(row.organizationId, organizationId, 'the organization comes from the path, organization_id is ignored');
  t.equal(row.trigger, 'contact_created');

  const hook = json(await create({ ...hookRule, is_active: false }));
  t.same(hook.action_config, { url: 'https://hooks.example.com/crm?x=1', has_secret: true });
  t.equal(hook.is_active, false);
  t.notOk(
    logs.some((line) => line.includes('s3cret-value-for-signing')),
    'the secret is not logged',
  );
  t.equal(await app.db.automationRun.count(), 0, 'no run');

  const detail = await get(`${base}/${hook.id}/`);
  t.equal(detail.statusCode, 200);
  t.same(json(detail), hook);
});

t.test('lists: newest first, paginated, readable by every role', async (t) => {
  await create({ ...emailRule, name: 'Third' });
  const all = json(await get(`${base}/`));
  t.same(
    all.map((r: { name: string }) => r.name),
    ['Third', 'Sync', 'Welcome'],
  );

  const first = await get(`${base}/?limit=2`);
  t.same(
    json(first).map((r: { name: string }) => r.name),
    ['Third', 'Sync'],
  );
  const next = /<([^>]+)>; rel="next"/.exec(first.headers.link as string)?.[1];
  t.ok(next, 'Link rel="next"');
  const second = await get(next!);
  t.same(
    json(second).map((r: { name: string }) => r.name),
    ['Welcome'],
  );
  t.equal(second.headers.link, undefined, 'last page');

  const sync = all.find((r: { name: string }) => r.name === 'Sync');
  t.equal(sync.action_config.url, 'https://hooks.example.com/crm?x=1', 'a manager sees the whole webhook URL');
  for (const who of [viewer, member]) {
    const rules = await get(`${base}/`, who.headers);
    t.equal(rules.statusCode, 200, 'rules: VIEW_CRM');
    const seen = json(rules).find((r: { name: string }) => r.name === 'Sync');
    t.same(seen.action_config, { url: 'https://hooks.example.com', has_secret: true }, 'without MANAGE_AUTOMATIONS: the origin only');
    t.same(json(await get(`${base}/${sync.id}/`, who.headers)).action_config, seen.action_config, 'the detail too');
    t.same(json(rules).find((r: { name: string }) => r.name === 'Welcome').action_config, emailRule.action_config);
    t.equal((await get(`${base}/runs/`, who.headers)).statusCode, 200, 'runs: VIEW_CRM');
    t.equal((await get(`${base}/${all[0].id}/runs/`, who.headers)).statusCode, 200);
  }
  t.same(json(await get(`${base}/runs/`)), [], 'nothing ran');

  for (const query of ['limit=0', 'limit=201', 'limit=x', 'cursor=garbage']) {
    const res = await get(`${base}/runs/?${query}`);
    t.equal(res.statusCode, 400, query);
    t.equal(json(res).code, 'validation_failed');
  }
});

t.test('capabilities: only MANAGE_AUTOMATIONS creates; outsiders see nothing', async (t) => {
  const before = await app.db.automation.count();
  for (const who of [member, viewer]) {
    const res = await create(emailRule, who.headers);
    t.equal(res.statusCode, 403);
    t.equal(json(res).code, 'permission_denied');
  }
  t.equal((await create(emailRule, outsider.headers)).statusCode, 404, 'not a member: 404');
  t.equal((await get(`${base}/`, outsider.headers)).statusCode, 404);
  t.equal((await get(`${base}/runs/`, outsider.headers)).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: `${base}/` })).statusCode, 401);
  t.equal((await app.inject({ method: 'POST', url: `${base}/`, payload: emailRule })).statusCode, 401);
  t.equal(await app.db.automation.count(), before, 'nothing written');
});

t.test("isolation: another organization's rules and runs are not reachable", async (t) => {
  const globex = json(
    await app.inject({
      method: 'POST',
      url: '/api/v1/organizations/',
      headers: admin.headers,
      payload: { name: 'Globex', owner_email: admin.email },
    }),
  );
  const foreign = json(await create(emailRule, admin.headers, `${urlOf(globex.id)}/`));
  await app.db.automationRun.create({
    data: {
      organizationId: globex.id,
      automationId: foreign.id,
      trigger: 'contact_created',
      payload: { event: 'contact.created', organization_id: globex.id, data: {}, occurred_at: new Date().toISOString() },
    },
  });

  t.equal((await get(`${base}/${foreign.id}/`)).statusCode, 404);
  t.equal((await get(`${base}/${foreign.id}/runs/`)).statusCode, 404);
  const test = await app.inject({ method: 'POST', url: `${base}/${foreign.id}/test/`, headers: admin.headers });
  t.equal(test.statusCode, 404);
  t.equal(json(test).code, 'automation_not_found');
  t.notOk(
    json(await get(`${base}/`)).some((r: { id: string }) => r.id === foreign.id),
    'not listed',
  );
  t.same(json(await get(`${base}/runs/`)), [], 'its runs are not listed');
  t.equal(json(await get(`${urlOf(globex.id)}/runs/`)).length, 1, 'but are in its own organization');
  t.equal((await get(`${base}/not-a-uuid/`)).statusCode, 400);
});

t.test('action_config is validated against the action type', async (t) => {
  const before = await app.db.automation.count();
  const expect400 = async (label: string, payload: Record<string, unknown>, field: string) => {
    const res = await create(payload);
    t.equal(res.statusCode, 400, `${label}: 400`);
    const body = json(res);
    t.equal(body.code, 'validation_failed', `${label}: code`);
    t.ok(body.errors?.[field], `${label}: errors.${field} in ${JSON.stringify(body.errors)}`);
  };
  const email = (config: Record<string, unknown>) => ({ ...emailRule, action_config: { ...emailRule.action_config, ...config } });
  const hook = (config: Record<string, unknown>) => ({ ...hookRule, action_config: config });

  await rejectsBadBodies(t, app, { method: 'POST', url: `${base}/`, headers: admin.headers }, emailRule, ['name']);
  await expect400('unknown action type', { ...emailRule, action_type: 'sms' }, 'action_type');
  const { action_type: _omitted, ...noType } = emailRule;
  await expect400('missing action type', noType, 'action_type');
  await expect400('unknown trigger', { ...emailRule, trigger: 'company.archived' }, 'trigger');
  await expect400('empty name', { ...emailRule, name: '' }, 'name');
  await expect400('missing config', { ...emailRule, action_config: undefined }, 'action_config');
  await expect400('is_active not boolean', { ...emailRule, is_active: 'yes' }, 'is_active');

  await expect400('no recipient', email({ to: [] }), 'action_config.to');
  await expect400('51 recipients', email({ to: Array.from({ length: 51 }, (_, i) => `u${i}@example.test`) }), 'action_config.to');
  await expect400('invalid recipient', email({ to: ['not-an-email'] }), 'action_config.to.0');
  await expect400('recipients not a list', email({ to: 'team@example.test' }), 'action_config.to');
  await expect400('subject too long', email({ subject: 'x'.repeat(256) }), 'action_config.subject');
  await expect400('subject with a line break', email({ subject: 'Hi\r\nBcc: evil@example.test' }), 'action_config.subject');
  await expect400('body too long', email({ body: 'x'.repeat(10_001) }), 'action_config.body');
  await expect400('webhook field on an email action', email({ url: 'https://example.com/' }), 'action_config.url');

  await expect400('missing url', hook({}), 'action_config.url');
  await expect400('ftp url', hook({ url: 'ftp://example.com/x' }), 'action_config.url');
  await expect400('not a url', hook({ url: 'https://' }), 'action_config.url');
  await expect400('url too long', hook({ url: `https://example.com/${'x'.repeat(2040)}` }), 'action_config.url');
  await expect400('credentials in the url', hook({ url: 'https://user:pw@example.com/' }), 'action_config.url');
  await expect400('secret too long', hook({ url: 'https://example.com/', secret: 'x'.repeat(257) }), 'action_config.secret');
  await expect400('email field on a webhook', hook({ url: 'https://example.com/', to: ['a@example.test'] }), 'action_config.to');
  t.equal(await app.db.automation.count(), before, 'nothing written');
});

t.test('private, loopback and link-local webhook targets are refused at creation', async (t) => {
  const before = await app.db.automation.count();
  for (const url of [
    'http://127.0.0.1/hook',
    'http://localhost:8080/hook',
    'http://api.localhost/',
    'http://10.0.0.1/',
    'http://172.16.3.4/',
    'http://192.168.1.10/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'http://100.64.0.1/',
    'http://0x7f.1/',
    'http://2130706433/',
  ]) {
    const res = await create({ ...hookRule, action_config: { url } });
    t.equal(res.statusCode, 400, url);
    t.match(json(res).errors?.['action_config.url'], [/non-public addresses are not allowed/], url);
  }
  t.equal(await app.db.automation.count(), before, 'nothing written');
});

t.test('private targets are refused at run time too, after DNS', async (t) => {
  // A name that is not obviously local resolves to loopback here (/etc/hosts): caught only once resolved.
  const name = hostname();
  const addresses = await lookup(name, { all: true });
  t.ok(
    addresses.every((a) => a.address.startsWith('127.') || a.address === '::1'),
    `${name} resolves to loopback`,
  );
  const port = new URL(target.url).port;
  const viaName = json(await create({ ...hookRule, action_config: { url: `http://${name}:${port}/hook` } }));
  const res = await app.inject({ method: 'POST', url: `${base}/${viaName.id}/test/`, headers: admin.headers });
  t.equal(res.statusCode, 201);
  t.equal(json(res).status, 'failed');
  t.match(json(res).run.error_message, /resolves to a private, loopback or otherwise non-public address; refused/);

  // A rule saved while private targets were allowed (the flag has since been turned off).
  const saved = await app.db.automation.create({
    data: { organizationId, name: 'Old', trigger: 'company_created', actionType: 'webhook', actionConfig: { url: target.url } },
  });
  const literal = await app.inject({ method: 'POST', url: `${base}/${saved.id}/test/`, headers: admin.headers });
  t.equal(json(literal).status, 'failed');
  t.match(json(literal).run.error_message, /non-public address; refused/);
  t.equal(target.requests.length, 0, 'no request reached the local server');
});

t.test('a webhook secret cannot be stored without an encryption key', async (t) => {
  const keyless = await buildTestApp(t, { EMAIL_ENCRYPTION_KEY: undefined });
  const setup = await setupInstallation(keyless.app);
  const url = `${urlOf(setup.organizationId)}/`;
  const refused = await keyless.app.inject({ method: 'POST', url, headers: setup.admin.headers, payload: hookRule });
  t.equal(refused.statusCode, 400);
  t.equal(json(refused).code, 'encryption_key_missing');
  t.equal(await keyless.app.db.automation.count(), 0);
  const { secret: _secret, ...unsigned } = hookRule.action_config;
  const accepted = await keyless.app.inject({
    method: 'POST',
    url,
    headers: setup.admin.headers,
    payload: { ...hookRule, action_config: unsigned },
  });
  t.equal(accepted.statusCode, 201, 'a webhook without a secret needs no key');
});
