// Setup under other server configurations: no encryption key, no setup token, and an installation that has users.
import t from 'tap';
import { buildTestApp, json, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';

const VALID = {
  setup_token: TEST_SETUP_TOKEN,
  username: 'founder',
  email: 'founder@example.test',
  password: 'a-strong-passphrase',
  organization_name: 'Acme',
  organization_slug: 'acme',
};

t.test('without EMAIL_ENCRYPTION_KEY: smtp is refused with errors.smtp, setup without it succeeds', async (t) => {
  const { app } = await buildTestApp(t, { EMAIL_ENCRYPTION_KEY: undefined });
  const mailbox = await startMailbox(t);

  const refused = await app.inject({ method: 'POST', url: '/api/v1/setup/', payload: { ...VALID, smtp: mailbox.smtpConfig() } });
  t.equal(refused.statusCode, 400);
  t.equal(json(refused).code, 'validation_failed');
  t.match(json(refused).errors.smtp, [/EMAIL_ENCRYPTION_KEY/]);
  t.equal(await app.db.user.count(), 0, 'nothing written');
  t.equal(await app.db.installationState.count(), 0);
  t.same(json(await app.inject({ method: 'GET', url: '/api/v1/setup/' })), { available: true });

  const done = await app.inject({ method: 'POST', url: '/api/v1/setup/', payload: VALID });
  t.equal(done.statusCode, 201);
  t.equal(await app.db.user.count(), 1);
  t.equal(await app.db.emailAccount.count(), 0, 'no SMTP account without smtp');
  t.equal(await app.db.installationEmailAccount.count(), 0, 'no fallback account without smtp');
});

t.test('without SERVICE_SETUP_TOKEN: unavailable, and both POSTs answer 403 setup_unavailable', async (t) => {
  const { app } = await buildTestApp(t, { SERVICE_SETUP_TOKEN: undefined });
  const mailbox = await startMailbox(t);
  t.same(json(await app.inject({ method: 'GET', url: '/api/v1/setup/' })), { available: false });

  const setup = await app.inject({ method: 'POST', url: '/api/v1/setup/', payload: VALID });
  t.equal(setup.statusCode, 403);
  t.equal(json(setup).code, 'setup_unavailable');
  const smtpTest = await app.inject({
    method: 'POST',
    url: '/api/v1/setup/smtp-test/',
    payload: { setup_token: TEST_SETUP_TOKEN, recipient: 'someone@example.test', smtp: mailbox.smtpConfig() },
  });
  t.equal(smtpTest.statusCode, 403);
  t.equal(json(smtpTest).code, 'setup_unavailable');
  t.equal(mailbox.messages.length, 0);
  t.equal(await app.db.user.count(), 0);
});

t.test('an installation that already has a user or a workspace is closed although setup never ran', async (t) => {
  const { app } = await buildTestApp(t);
  await app.db.organization.create({ data: { name: 'Existing', slug: 'existing' } });
  t.same(json(await app.inject({ method: 'GET', url: '/api/v1/setup/' })), { available: false });
  const res = await app.inject({ method: 'POST', url: '/api/v1/setup/', payload: VALID });
  t.equal(res.statusCode, 403);
  t.equal(json(res).code, 'setup_closed');
  t.equal(await app.db.user.count(), 0);
  t.equal(await app.db.installationState.count(), 0);

  await app.db.organization.deleteMany();
  await app.db.user.create({ data: { username: 'someone', email: 'someone@example.test', passwordHash: 'x' } });
  t.same(json(await app.inject({ method: 'GET', url: '/api/v1/setup/' })), { available: false });
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/setup/', payload: VALID })).statusCode, 403);
});
