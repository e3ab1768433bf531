// Server-generated webhook secrets (shown once) and their rotation with a 24-hour overlap, verified with the `standardwebhooks` library as a consumer would.
import t, { type Test } from 'tap';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';
import { startWebhookTarget, type ReceivedRequest } from './webhook-target.js';

const target = await startWebhookTarget(t);
const { app, databaseUrl, logs } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}/automations`;

const createRule = (action_config: Record<string, unknown>, action_type = 'webhook') =>
  app.inject({
    method: 'POST',
    url: `${base}/`,
    headers: admin.headers,
    payload: { name: 'Billing sync', trigger: 'company.created', action_type, action_config },
  });
const rotate = (id: string) => app.inject({ method: 'POST', url: `${base}/${id}/rotate-secret/`, headers: admin.headers });

/** A real delivery through the rule's test action: what the target received. */
async function deliver(t: Test, id: string): Promise<ReceivedRequest> {
  const before = target.requests.length;
  const res = await app.inject({ method: 'POST', url: `${base}/${id}/test/`, headers: admin.headers });
  t.equal(json(res).status, 'success', res.body);
  return target.requests[before]!;
}

const headersOf = (request: ReceivedRequest): Record<string, string> => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});
const verifies = (secret: string, request: ReceivedRequest) => {
  try {
    new Webhook(secret).verify(request.body, headersOf(request));
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
};

t.test('generate_secret: a whsec_ secret shown once, never again; deliveries verify with it and refuse a replay', async (t) => {
  const created = await createRule({ url: target.url, generate_secret: true });
  t.equal(created.statusCode, 201, created.body);
  const body = json(created);
  const secret: string = body.action_config.secret;
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, '32 random bytes in base64');
  t.equal(body.action_config.has_secret, true);
  const read = await app.inject({ method: 'GET', url: `${base}/${body.id}/`, headers: admin.headers });
  t.notOk(read.body.includes(secret.slice(6)), 'not in a later read');
  const list = await app.inject({ method: 'GET', url: `${base}/`, headers: admin.headers });
  t.notOk(list.body.includes(secret.slice(6)), 'not in the list');
  const stored = await app.db.automation.findUniqueOrThrow({ where: { id: body.id } });
  t.notOk(JSON.stringify(stored.actionConfig).includes(secret.slice(6)), 'stored encrypted');

  const request = await deliver(t, body.id);
  t.ok(verifies(secret, request), 'the library verifies the delivery');
  const realNow = Date.now;
  Date.now = () => realNow() + 10 * 60 * 1000;
  try {
    t.notOk(verifies(secret, request), 'the same delivery replayed ten minutes later is refused');
  } finally {
    Date.now = realNow;
  }
  t.notOk(
    logs.some((line) => line.includes(secret.slice(6))),
    'the secret never reaches the log',
  );
  const both = await createRule({ url: target.url, generate_secret: true, secret: 'x' });
  t.equal(both.statusCode, 400);
  t.match(json(both).errors, { 'action_config.generate_secret': [/not both/] });
});

t.test('rotate-secret: new secret once; both sign for 24 hours; then only the new one', async (t) => {
  const created = json(await createRule({ url: target.url, generate_secret: true }));
  const oldSecret: string = created.action_config.secret;
  const res = await rotate(created.id);
  t.equal(res.statusCode, 200, res.body);
  const rotation = json(res);
  t.match(rotation.secret, /^whsec_/);
  t.not(rotation.secret, oldSecret);
  const overlap = Date.parse(rotation.previous_secret_expires_at) - Date.now();
  t.ok(overlap > 23.9 * 3600_000 && overlap <= 24 * 3600_000, `overlap ${overlap} ms`);

  const during = await deliver(t, created.id);
  t.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures, space-separated');
  t.ok(verifies(rotation.secret, during), 'a receiver with the new secret verifies');
  t.ok(verifies(oldSecret, during), 'a receiver still holding the old secret verifies');

  // The overlap over (its end moved into the past): only the new secret signs.
  const stored = await app.db.automation.findUniqueOrThrow({ where: { id: created.id } });
  await app.db.automation.update({
    where: { id: created.id },
    data: { actionConfig: { ...(stored.actionConfig as object), previous_secret_expires_at: new Date(Date.now() - 1000).toISOString() } },
  });
  const after = await deliver(t, created.id);
  t.equal(String(after.headers['webhook-signature']).split(' ').length, 1);
  t.ok(verifies(rotation.secret, after));
  t.notOk(verifies(oldSecret, after), 'the old secret no longer verifies');
});

t.test('rotation: a rule without a secret gets one; send_email rules, other workspaces and members are refused', async (t) => {
  const unsigned = json(await createRule({ url: target.url }));
  const res = await rotate(unsigned.id);
  t.equal(res.statusCode, 200);
  t.equal(json(res).previous_secret_expires_at, null);
  t.ok(verifies(json(res).secret, await deliver(t, unsigned.id)), 'signed from now on');

  const email = json(await createRule({ to: ['a@example.test'], subject: 's', body: 'b' }, 'send_email'));
  const refused = await rotate(email.id);
  t.equal(refused.statusCode, 400);
  t.equal(json(refused).code, 'automation_not_webhook');
  const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
  const foreign = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${other.id}/automations/${unsigned.id}/rotate-secret/`,
    headers: admin.headers,
  });
  t.equal(foreign.statusCode, 404);
});

t.test('two rotations racing: one wins, the other is a 409, and the winner’s secret is the one that signs', async (t) => {
  const created = json(await createRule({ url: target.url, generate_secret: true }));
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT id FROM automations WHERE id = $1 FOR UPDATE', [created.id]);
  const first = track(rotate(created.id));
  const second = track(rotate(created.id));
  await holder.waitForLockWaiters(2, () => first.settled() || second.settled());
  await holder.release();
  const answers = await Promise.all([first.promise, second.promise]);
  t.same(answers.map((a) => a.statusCode).sort(), [200, 409]);
  const winner = json(answers.find((a) => a.statusCode === 200)!);
  t.equal(json(answers.find((a) => a.statusCode === 409)!).code, 'automation_changed');
  t.ok(verifies(winner.secret, await deliver(t, created.id)));
});

t.test(
  'If-Match: a stale tag rotates nothing (412); the current one rotates and answers the new tag; two from one reading rotate once',
  async (t) => {
    const created = json(await createRule({ url: target.url, generate_secret: true }));
    const secret: string = created.action_config.secret;
    const read = () => app.inject({ method: 'GET', url: `${base}/${created.id}/`, headers: admin.headers });
    const rotateIf = (tag: string) =>
      app.inject({ method: 'POST', url: `${base}/${created.id}/rotate-secret/`, headers: { ...admin.headers, 'if-match': tag } });
    const audited = () => app.db.auditLog.count({ where: { action: 'automation.secret_rotated', targetId: created.id } });
    const first = await read();
    const tag = String(first.headers.etag);

    const stale = await rotateIf('"0123"');
    t.equal(stale.statusCode, 412, stale.body);
    t.equal(json(stale).code, 'precondition_failed');
    t.notOk(stale.body.includes('whsec_'), 'no secret in the refusal');
    t.equal((await read()).headers.etag, tag, 'the rule is at the same version');
    t.equal(await audited(), 0, 'nothing audited');
    t.ok(verifies(secret, await deliver(t, created.id)), 'the old secret alone still signs');

    const rotated = await rotateIf(tag);
    t.equal(rotated.statusCode, 200, rotated.body);
    const now = await read();
    t.not(now.headers.etag, tag);
    t.equal(rotated.headers.etag, now.headers.etag, "the answer's ETag is the rule's new version");
    t.equal((await rotateIf(tag)).statusCode, 412, 'the tag it was made against is stale now');
    t.equal((await rotateIf('*')).statusCode, 200, '`*`: any version');
    const wrongKind = json(await createRule({ to: ['a@example.test'], subject: 's', body: 'b' }, 'send_email'));
    const mail = await app.inject({
      method: 'POST',
      url: `${base}/${wrongKind.id}/rotate-secret/`,
      headers: { ...admin.headers, 'if-match': '"0123"' },
    });
    t.equal(mail.statusCode, 412, 'the precondition comes first');

    // Two rotations from the same reading, forced to interleave: both read the rule, then one writes; the other's
    // version is gone by the time its write runs, so it answers 412 (not 409: it named a version) and rotates nothing.
    const current = String((await read()).headers.etag);
    const before = await audited();
    const holder = await holdLocks(t, databaseUrl);
    await holder.query('SELECT id FROM automations WHERE id = $1 FOR UPDATE', [created.id]);
    const one = track(rotateIf(current));
    const two = track(rotateIf(current));
    await holder.waitForLockWaiters(2, () => one.settled() || two.settled());
    await holder.release();
    const answers = await Promise.all([one.promise, two.promise]);
    t.same(answers.map((a) => a.statusCode).sort(), [200, 412]);
    t.equal(await audited(), before + 1, 'one rotation audited');
    const winner = json(answers.find((a) => a.statusCode === 200)!);
    t.ok(verifies(winner.secret, await deliver(t, created.id)), "the winner's secret signs");
  },
);
