// The setup SMTP test: sends one real message, answers a generic 502 on any SMTP failure, and stores nothing.
import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, json, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_SETUP_PER_MINUTE: '1000' });
const mailbox = await startMailbox(t);
const URL = '/api/v1/setup/smtp-test/';
const WRONG_PASSWORD = 'definitely-the-wrong-password';

const smtpTest = (payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: URL, payload: { setup_token: TEST_SETUP_TOKEN, recipient: 'ops@example.test', ...payload } });

const storedRows = async () => ({
  emailAccounts: await app.db.emailAccount.count(),
  installationEmailAccounts: await app.db.installationEmailAccount.count(),
  installationState: await app.db.installationState.count(),
  users: await app.db.user.count(),
  outbox: await app.db.emailOutbox.count(),
});
const NOTHING = { emailAccounts: 0, installationEmailAccounts: 0, installationState: 0, users: 0, outbox: 0 };

/** A port on which nothing listens (bound once, then released). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('accepted by the server: 200, one message delivered through the submitted account, nothing stored', async (t) => {
  const res = await smtpTest({ smtp: mailbox.smtpConfig(), recipient: 'Ops@Example.test' });
  t.equal(res.statusCode, 200, res.body);
  t.same(json(res), { detail: 'The SMTP server accepted the test message.' });
  const mail = await mailbox.waitForTo('ops@example.test');
  t.equal(mail.authUser, mailbox.username, 'authenticated with the submitted login');
  t.equal(mail.from, 'crm@example.test');
  t.match(mail.subject, /SMTP test/);
  t.equal(mailbox.messages.length, 1);
  t.same(await storedRows(), NOTHING);
});

t.test('SMTP failures answer a generic 502 without credentials and store nothing', async (t) => {
  const failures: Array<[string, Record<string, unknown>]> = [
    ['wrong password', mailbox.smtpConfig({ password: WRONG_PASSWORD })],
    ['closed port', mailbox.smtpConfig({ port: await closedPort(), password: WRONG_PASSWORD })],
    ['TLS required but not offered', mailbox.smtpConfig({ use_tls: true, password: WRONG_PASSWORD })],
  ];
  for (const [name, smtp] of failures) {
    const res = await smtpTest({ smtp });
    t.equal(res.statusCode, 502, name);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.match(json(res), { status: 502, code: 'smtp_failed' });
    for (const secret of [WRONG_PASSWORD, mailbox.username, mailbox.host, String(mailbox.port)]) {
      t.notOk(res.body.includes(secret), `${name}: the body does not mention ${secret}`);
    }
  }
  t.equal(mailbox.messages.length, 1, 'only the first test message ever arrived');
  t.same(await storedRows(), NOTHING);
});

t.test('a server that refuses the message answers 502', async (t) => {
  const refusing = await startMailbox(t, { rejectMessages: true });
  const res = await smtpTest({ smtp: refusing.smtpConfig() });
  t.equal(res.statusCode, 502);
  t.equal(json(res).code, 'smtp_failed');
});

t.test('bad input answers 400 and sends nothing', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['invalid recipient', { smtp: mailbox.smtpConfig(), recipient: 'not-an-address' }, 'recipient'],
    ['missing smtp', {}, 'smtp'],
    ['smtp port too large', { smtp: mailbox.smtpConfig({ port: 65536 }) }, 'smtp.port'],
    ['smtp use_tls not a boolean', { smtp: mailbox.smtpConfig({ use_tls: 'yes' }) }, 'smtp.use_tls'],
    ['unknown field', { smtp: mailbox.smtpConfig(), cc: 'x@example.test' }, 'cc'],
    ['smtp password too long', { smtp: mailbox.smtpConfig({ password: 'p'.repeat(1025) }) }, 'smtp.password'],
    ['smtp with both TLS modes', { smtp: mailbox.smtpConfig({ use_tls: true, use_ssl: true }) }, 'smtp.use_ssl'],
  ];
  for (const [name, payload, field] of cases) {
    const res = await smtpTest(payload);
    t.equal(res.statusCode, 400, name);
    t.ok(json(res).errors?.[field], `${name}: errors.${field} in ${res.body}`);
  }
  const wrongToken = await smtpTest({ setup_token: 'wrong', smtp: mailbox.smtpConfig() });
  t.equal(wrongToken.statusCode, 400);
  t.equal(json(wrongToken).code, 'invalid_setup_token');
  t.ok(json(wrongToken).errors.setup_token);
  t.equal(mailbox.messages.length, 1);
});

t.test('no SMTP password or setup token reaches the log', async (t) => {
  for (const secret of [WRONG_PASSWORD, mailbox.password, TEST_SETUP_TOKEN]) {
    t.notOk(
      logs.some((line) => line.includes(secret)),
      'secret not logged',
    );
  }
  t.ok(
    logs.some((line) => line.includes('SMTP test failed')),
    'failures are logged (without secrets)',
  );
});
