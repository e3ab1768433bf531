// Standard Webhooks signing, checked as a consumer would: with the `standardwebhooks` library, including a refused replay.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { startWebhookTarget, type ReceivedRequest } from './webhook-target.js';

const mailbox = await startMailbox(t);
const target = await startWebhookTarget(t);
const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app, mailbox);
const base = `/api/v1/organizations/${organizationId}/automations`;

const createRule = (action_config: Record<string, unknown>) =>
  app.inject({
    method: 'POST',
    url: `${base}/`,
    headers: admin.headers,
    payload: { name: 'Billing sync', trigger: 'company.created', action_type: 'webhook', action_config },
  });

/** Creates a rule with `secret`, runs its test action (a real delivery) and returns what the target received. */
async function deliverWith(t: Test, secret: string): Promise<ReceivedRequest> {
  const created = await createRule({ url: target.url, secret });
  t.equal(created.statusCode, 201, created.body);
  const before = target.requests.length;
  const res = await app.inject({ method: 'POST', url: `${base}/${json(created).id}/test/`, headers: admin.headers });
  t.equal(json(res).status, 'success', res.body);
  return target.requests[before]!;
}

const headersOf = (request: ReceivedRequest): Record<string, string> => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

t.test('a whsec_ secret: the library verifies the delivery, and refuses it replayed ten minutes later', async (t) => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const request = await deliverWith(t, secret);
  const headers = headersOf(request);
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.match(headers['webhook-timestamp'], /^\d+$/);
  t.equal(headers['webhook-id'], request.headers['x-webhook-delivery'], 'webhook-id is the delivery id');
  const verified = new Webhook(secret).verify(request.body, headers) as { event: string };
  t.equal(verified.event, 'company.created', 'verified and parsed');
  t.ok(request.headers['x-webhook-signature'], 'the deprecated header is still sent');

  t.throws(() => new Webhook(secret).verify(`${request.body} `, headers), WebhookVerificationError, 'a changed body is refused');
  const otherSecret = `whsec_${randomBytes(32).toString('base64')}`;
  t.throws(() => new Webhook(otherSecret).verify(request.body, headers), WebhookVerificationError, 'another secret is refused');

  // The same captured delivery sent again later: the library's timestamp tolerance (5 minutes) refuses it.
  const realNow = Date.now;
  Date.now = () => realNow() + 10 * 60 * 1000;
  try {
    t.throws(() => new Webhook(secret).verify(request.body, headers), WebhookVerificationError, 'an old delivery is refused');
  } finally {
    Date.now = realNow;
  }
});

t.test('a secret without the prefix signs with its UTF-8 bytes', async (t) => {
  const secret = 'plain-shared-secret-ü-0123456789';
  const request = await deliverWith(t, secret);
  // The library takes raw key bytes when given them: the UTF-8 bytes of the plain secret.
  const verified = new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' }).verify(request.body, headersOf(request));
  t.ok(verified);
});

t.test('a whsec_ secret that is not base64 is a 400; without a secret nothing is signed but the id and time are sent', async (t) => {
  const bad = await createRule({ url: target.url, secret: 'whsec_not base64!' });
  t.equal(bad.statusCode, 400);
  t.match(json(bad).errors, { 'action_config.secret': [/base64/] });

  const created = await createRule({ url: target.url });
  const before = target.requests.length;
  await app.inject({ method: 'POST', url: `${base}/${json(created).id}/test/`, headers: admin.headers });
  const request = target.requests[before]!;
  t.equal(request.headers['webhook-signature'], undefined);
  t.equal(request.headers['x-webhook-signature'], undefined);
  t.ok(request.headers['webhook-id']);
  t.ok(request.headers['webhook-timestamp']);
});
