// The automation test endpoint: a real, synchronous run of a webhook or email action, recorded as success or failed.
import { createHmac } from 'node:crypto';
import t from 'tap';
import { encryptSecret } from '../../src/lib/crypto.js';
import { TEST_EMAIL_KEY, buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { closedPortUrl, startWebhookTarget } from './webhook-target.js';

const mailbox = await startMailbox(t);
const refusingMailbox = await startMailbox(t, { rejectMessages: true });
const target = await startWebhookTarget(t);
const { app, logs } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app, mailbox);
const member = await createUser(app, { membership: { organizationId, role: 'member' } });

const base = `/api/v1/organizations/${organizationId}/automations`;
const createRule = async (payload: Record<string, unknown>) => {
  const res = await app.inject({ method: 'POST', url: `${base}/`, headers: admin.headers, payload });
  if (res.statusCode !== 201) throw new Error(`rule creation failed: ${res.statusCode} ${res.body}`);
  return json(res);
};
const webhookRule = (action_config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  createRule({ name: 'Hook', trigger: 'company.created', action_type: 'webhook', action_config, ...extra });
const runTest = (id: string, options: { headers?: Record<string, string>; payload?: unknown } = {}) =>
  app.inject({
    method: 'POST',
    url: `${base}/${id}/test/`,
    headers: options.headers ?? admin.headers,
    ...(options.payload === undefined ? {} : { payload: options.payload as object }),
  });

t.test('a webhook test POSTs the event JSON, signed, and records a successful run', async (t) => {
  const secret = 'whsec-test-signing-secret-0123456789';
  const rule = await webhookRule({ url: target.url, secret });
  t.same(rule.action_config, { url: target.url, has_secret: true }, 'the secret is never returned');
  t.equal(target.requests.length, 0, 'creating a rule runs nothing');
  t.equal(await app.db.automationRun.count(), 0);

  const res = await runTest(rule.id, { payload: { data: { name: 'Initech', lifecycle_stage: 'lead' } } });
  t.equal(res.statusCode, 201);
  const { status, run } = json(res);
  t.equal(status, 'success');
  t.match(run, { automation_id: rule.id, trigger: 'company.created', status: 'success', error_message: null, attempts: 1 });
  t.ok(run.finished_at && run.started_at, 'started and finished');
  t.same(run.payload.data, { name: 'Initech', lifecycle_stage: 'lead' });
  t.match(run.payload, { event: 'company.created', organization_id: organizationId, test: true });

  t.equal(target.requests.length, 1);
  const [request] = target.requests;
  t.equal(request!.method, 'POST');
  t.equal(request!.path, '/hook');
  t.match(request!.headers['content-type'], /^application\/json/);
  t.same(JSON.parse(request!.body), run.payload, 'the body is the event JSON of the run');
  const expected = `sha256=${createHmac('sha256', secret).update(request!.body).digest('hex')}`;
  t.equal(request!.headers['x-webhook-signature'], expected, 'HMAC-SHA256 of the raw body');
  t.equal(request!.headers['x-webhook-delivery'], run.id);
  t.equal(request!.headers['x-webhook-event'], 'company.created');

  const stored = await app.db.automation.findUniqueOrThrow({ where: { id: rule.id } });
  t.notOk(JSON.stringify(stored.actionConfig).includes(secret), 'stored encrypted');
  t.notOk(
    logs.some((line) => line.includes(secret)),
    'never logged',
  );

  const runs = json(await app.inject({ method: 'GET', url: `${base}/${rule.id}/runs/`, headers: admin.headers }));
  t.same(runs, [run], 'the run is listed with the rule');
});

t.test('without a secret there is no signature; the body may be omitted; inactive rules run too', async (t) => {
  const rule = await webhookRule({ url: target.url }, { is_active: false });
  t.equal(rule.is_active, false);
  t.same(rule.action_config, { url: target.url, has_secret: false });
  const before = target.requests.length;
  const res = await runTest(rule.id);
  t.equal(res.statusCode, 201);
  t.equal(json(res).status, 'success');
  t.same(json(res).run.payload.data, {});
  const request = target.requests[before]!;
  t.equal(request.headers['x-webhook-signature'], undefined);
  t.equal((await runTest(rule.id, { payload: {} })).statusCode, 201, '`{}` works as well');
});

t.test('webhook failures are runs with status failed and an error message, still 201', async (t) => {
  const expectFailure = async (url: string, message: RegExp) => {
    const rule = await webhookRule({ url });
    const res = await runTest(rule.id);
    t.equal(res.statusCode, 201, `${url}: 201`);
    const { status, run } = json(res);
    t.equal(status, 'failed');
    t.equal(run.status, 'failed');
    t.match(run.error_message, message);
    t.ok(run.finished_at);
    const stored = await app.db.automationRun.findUniqueOrThrow({ where: { id: run.id } });
    t.equal(stored.status, 'failed', 'recorded');
    return run;
  };
  await expectFailure(await closedPortUrl(), /^Webhook connection refused\.$/);

  const before = target.requests.length;
  target.respondWith.push(500);
  await expectFailure(target.url, /^Webhook answered HTTP 500\.$/);

  target.respondWith.push(302);
  target.headers.location = `${target.url}/elsewhere`;
  await expectFailure(target.url, /HTTP 302; redirects are not followed/);
  delete target.headers.location;
  t.equal(target.requests.length, before + 2, 'the 500 and the 302; the redirect was not followed');
});

t.test('a webhook that does not answer fails after 5 seconds', async (t) => {
  const rule = await webhookRule({ url: target.url });
  target.respondWith.push(0);
  const started = Date.now();
  const res = await runTest(rule.id);
  const elapsed = Date.now() - started;
  t.equal(json(res).status, 'failed');
  t.equal(json(res).run.error_message, 'Webhook timed out after 5 s.');
  t.ok(elapsed >= 4900 && elapsed < 15_000, `took ${elapsed} ms (a loaded machine may add seconds, never remove them)`);
});

t.test('send_email sends through the workspace account or the installation fallback; failures are runs', async (t) => {
  // Through the installation fallback only members may be mailed (the policy has its own test in test/security).
  for (const email of ['sales@example.test', 'boss@example.test'])
    await createUser(app, { email, membership: { organizationId, role: 'member' } });
  const rule = await createRule({
    name: 'Tell sales',
    trigger: 'contact.created',
    action_type: 'send_email',
    action_config: {
      to: ['sales@example.test', 'boss@example.test'],
      subject: 'New contact',
      body: 'A new contact arrived.\n\nHave a look.',
    },
  });
  t.same(rule.action_config, {
    to: ['sales@example.test', 'boss@example.test'],
    subject: 'New contact',
    body: 'A new contact arrived.\n\nHave a look.',
  });

  const ok = await runTest(rule.id);
  t.equal(ok.statusCode, 201);
  t.equal(json(ok).status, 'success', 'through the installation fallback');
  const mail = await mailbox.waitForTo('sales@example.test');
  t.same(mail.to.sort(), ['boss@example.test', 'sales@example.test'], 'one message to every recipient');
  t.equal(mail.subject, 'New contact');
  t.match(mail.text, /A new contact arrived\.\s+Have a look\./);
  t.match(mail.text, /automation "Tell sales" on the event contact\.created/);

  // The workspace's own default account wins over the fallback; this one refuses every message.
  const account = await app.db.emailAccount.create({
    data: {
      organizationId,
      name: 'Refusing',
      host: refusingMailbox.host,
      port: refusingMailbox.port,
      username: refusingMailbox.username,
      passwordEncrypted: encryptSecret(refusingMailbox.password, Buffer.from(TEST_EMAIL_KEY, 'base64')),
      fromEmail: 'crm@example.test',
      useTls: false,
      isDefault: true,
    },
  });
  const refused = await runTest(rule.id);
  t.equal(refused.statusCode, 201);
  t.equal(json(refused).status, 'failed');
  t.match(json(refused).run.error_message, /^SMTP rejected failure \(reply 550\)$/);
  t.notOk(JSON.stringify(json(refused)).includes(refusingMailbox.password), 'no credentials in the run');

  await app.db.emailAccount.updateMany({ data: { isActive: false } });
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  const none = await runTest(rule.id);
  t.equal(json(none).status, 'failed');
  t.match(json(none).run.error_message, /^No email account can send this message/);
  await app.db.emailAccount.delete({ where: { id: account.id } });
  await app.db.emailAccount.updateMany({ data: { isActive: true } });
  await app.db.installationEmailAccount.updateMany({ data: { isActive: true } });
});

t.test('test: capability, unknown ids and bad bodies', async (t) => {
  const rule = await webhookRule({ url: target.url });
  const before = { requests: target.requests.length, runs: await app.db.automationRun.count() };

  const forbidden = await runTest(rule.id, { headers: member.headers });
  t.equal(forbidden.statusCode, 403, 'a member cannot test (MANAGE_AUTOMATIONS)');
  t.equal(json(forbidden).code, 'permission_denied');
  t.equal((await app.inject({ method: 'POST', url: `${base}/${rule.id}/test/` })).statusCode, 401);
  t.equal((await runTest('00000000-0000-4000-8000-000000000000')).statusCode, 404);
  const malformedId = await runTest('not-a-uuid');
  t.equal(malformedId.statusCode, 400);
  t.match(json(malformedId).errors, { automation_id: [] });

  for (const [label, payload, field] of [
    ['unknown field', { dry_run: true }, 'dry_run'],
    ['data not an object', { data: 'x' }, 'data'],
    ['data an array', { data: [1] }, 'data'],
  ] as const) {
    const res = await runTest(rule.id, { payload });
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors[field], `${label}: errors.${field}`);
  }
  const malformed = await app.inject({
    method: 'POST',
    url: `${base}/${rule.id}/test/`,
    headers: { ...admin.headers, 'content-type': 'application/json' },
    payload: '{"data": ',
  });
  t.equal(malformed.statusCode, 400);
  t.equal(json(malformed).code, 'malformed_json');
  t.same({ requests: target.requests.length, runs: await app.db.automationRun.count() }, before, 'nothing ran, nothing recorded');
});

t.test('test runs and email-account test sends share one limit per user (429 with Retry-After)', async (t) => {
  const limited = (await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_TEST_SENDS_PER_HOUR: '2' })).app;
  const box = await startMailbox(t);
  const { admin: boss, organizationId: orgId } = await setupInstallation(limited, box);
  const deputy = await createUser(limited, { username: 'deputy', membership: { organizationId: orgId, role: 'admin' } });
  const post = (headers: Record<string, string>, url: string, payload: object) =>
    limited.inject({ method: 'POST', url: `/api/v1/organizations/${orgId}/${url}`, headers, payload });
  const account = json(await post(boss.headers, 'email-accounts/', box.smtpConfig({ name: 'Main' })));
  const rule = json(
    await post(boss.headers, 'automations/', {
      name: 'Hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: target.url },
    }),
  );
  const before = target.requests.length;

  t.equal((await post(boss.headers, `email-accounts/${account.id}/test/`, { recipient: 'qa@example.test' })).statusCode, 200);
  t.equal((await post(boss.headers, `automations/${rule.id}/test/`, {})).statusCode, 201);
  const third = await post(boss.headers, `automations/${rule.id}/test/`, {});
  t.equal(third.statusCode, 429);
  t.match(third.headers['content-type'], /^application\/problem\+json/);
  t.ok(third.headers['retry-after']);
  t.equal((await post(boss.headers, `email-accounts/${account.id}/test/`, { recipient: 'qa@example.test' })).statusCode, 429);
  t.equal(target.requests.length, before + 1, 'the refused test run called nothing');
  t.equal(await limited.db.automationRun.count({ where: { automationId: rule.id } }), 1, 'and recorded nothing');
  t.equal((await post(deputy.headers, `automations/${rule.id}/test/`, {})).statusCode, 201, 'another user has their own budget');
});
