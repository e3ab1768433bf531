// First-run setup: availability, bad input changing nothing, the one transaction (raced), and setup closing for good.
import t from 'tap';
import { decryptSecret } from '../../src/lib/crypto.js';
import { verifyPassword } from '../../src/lib/passwords.js';
import { buildTestApp, json, TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_SETUP_PER_MINUTE: '1000' });
const mailbox = await startMailbox(t);

const VALID = {
  setup_token: TEST_SETUP_TOKEN,
  username: 'founder',
  email: 'Founder@Example.test',
  password: 'a-strong-passphrase',
  organization_name: 'Acme',
  organization_slug: 'acme',
};
const bodies: string[] = [];

async function post(payload: unknown, url = '/api/v1/setup/') {
  const res = await app.inject({ method: 'POST', url, payload: payload as object });
  bodies.push(res.body);
  return res;
}

const rowCounts = async () => ({
  users: await app.db.user.count(),
  organizations: await app.db.organization.count(),
  memberships: await app.db.membership.count(),
  emailAccounts: await app.db.emailAccount.count(),
  installationEmailAccounts: await app.db.installationEmailAccount.count(),
  installationState: await app.db.installationState.count(),
});
const NOTHING = { users: 0, organizations: 0, memberships: 0, emailAccounts: 0, installationEmailAccounts: 0, installationState: 0 };

t.test('GET /setup/ says setup is available on a fresh installation, without revealing the token', async (t) => {
  for (const url of ['/api/v1/setup/', '/api/v1/setup']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200);
    t.same(json(res), { available: true });
    t.notMatch(res.body, TEST_SETUP_TOKEN);
  }
});

t.test('bad input answers 400 problem+json and writes nothing', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['missing field', { ...VALID, username: undefined }, 'username'],
    ['unknown field', { ...VALID, is_superuser: true }, 'is_superuser'],
    ['wrong type', { ...VALID, organization_name: 42 }, 'organization_name'],
    ['username too long', { ...VALID, username: 'u'.repeat(151) }, 'username'],
    ['username with spaces', { ...VALID, username: 'the founder' }, 'username'],
    ['invalid email', { ...VALID, email: 'not-an-email' }, 'email'],
    ['slug with capitals and spaces', { ...VALID, organization_slug: 'Acme Corp' }, 'organization_slug'],
    ['slug with a leading dash', { ...VALID, organization_slug: '-acme' }, 'organization_slug'],
    ['slug too long', { ...VALID, organization_slug: 'a'.repeat(101) }, 'organization_slug'],
    ['organization name too long', { ...VALID, organization_name: 'n'.repeat(201) }, 'organization_name'],
    ['empty organization name', { ...VALID, organization_name: '' }, 'organization_name'],
    ['setup token too long', { ...VALID, setup_token: 't'.repeat(1025) }, 'setup_token'],
    ['smtp port as a string', { ...VALID, smtp: mailbox.smtpConfig({ port: String(mailbox.port) }) }, 'smtp.port'],
    ['smtp port out of range', { ...VALID, smtp: mailbox.smtpConfig({ port: 70000 }) }, 'smtp.port'],
    ['smtp unknown field', { ...VALID, smtp: mailbox.smtpConfig({ secret: 'x' }) }, 'smtp.secret'],
    ['smtp host too long', { ...VALID, smtp: mailbox.smtpConfig({ host: 'h'.repeat(256) }) }, 'smtp.host'],
    ['smtp missing password', { ...VALID, smtp: mailbox.smtpConfig({ password: undefined }) }, 'smtp.password'],
    ['smtp invalid from_email', { ...VALID, smtp: mailbox.smtpConfig({ from_email: 'nobody' }) }, 'smtp.from_email'],
    ['smtp with both TLS modes', { ...VALID, smtp: mailbox.smtpConfig({ use_tls: true, use_ssl: true }) }, 'smtp.use_ssl'],
  ];
  for (const [name, payload, field] of cases) {
    const res = await post(payload);
    t.equal(res.statusCode, 400, name);
    t.match(res.headers['content-type'], /^application\/problem\+json/, name);
    t.equal(json(res).code, 'validation_failed', name);
    t.ok(json(res).errors?.[field], `${name}: errors.${field} in ${res.body}`);
  }

  const malformed = await app.inject({
    method: 'POST',
    url: '/api/v1/setup/',
    headers: { 'content-type': 'application/json' },
    payload: '{"setup_token": ',
  });
  t.equal(malformed.statusCode, 400);
  t.equal(json(malformed).code, 'malformed_json');

  const noBody = await app.inject({ method: 'POST', url: '/api/v1/setup/' });
  t.equal(noBody.statusCode, 400);
  t.equal(json(noBody).code, 'validation_failed');

  t.same(await rowCounts(), NOTHING);
});

t.test('a wrong setup token answers 400 with errors.setup_token, checked before anything else in the body', async (t) => {
  for (const token of ['wrong-token', TEST_SETUP_TOKEN.slice(0, -1), `${TEST_SETUP_TOKEN}x`]) {
    // A weak password too: the token is judged first, so nothing else is revealed to a caller without it.
    const res = await post({ ...VALID, setup_token: token, password: '123' });
    t.equal(res.statusCode, 400);
    t.equal(json(res).code, 'invalid_setup_token');
    t.same(Object.keys(json(res).errors), ['setup_token']);
  }
  t.same(await rowCounts(), NOTHING);
});

t.test('password rules answer 400 with errors.password', async (t) => {
  for (const password of ['short', '1234567890', 'founder', 'FOUNDER@example.test']) {
    const res = await post({ ...VALID, password });
    t.equal(res.statusCode, 400, password);
    t.equal(json(res).code, 'validation_failed');
    t.ok(json(res).errors.password.length > 0, password);
  }
  t.same(await rowCounts(), NOTHING);
});

t.test('two setups racing: exactly one wins, creating admin, workspace and fallback SMTP in one go', async (t) => {
  const contenders = [
    { ...VALID, smtp: mailbox.smtpConfig() },
    { ...VALID, username: 'rival', email: 'rival@example.test', organization_slug: 'rival', smtp: mailbox.smtpConfig({ name: 'Rival' }) },
  ];
  const results = await Promise.all(contenders.map((payload) => post(payload)));
  const statuses = results.map((r) => r.statusCode).sort();
  t.same(statuses, [201, 403], results.map((r) => r.body).join(' | '));
  const winner = contenders[results.findIndex((r) => r.statusCode === 201)]!;
  const loser = results.find((r) => r.statusCode === 403)!;
  t.same(json(results.find((r) => r.statusCode === 201)!), { detail: 'Setup completed.' });
  t.equal(json(loser).code, 'setup_closed');

  t.same(await rowCounts(), {
    users: 1,
    organizations: 1,
    memberships: 1,
    emailAccounts: 0,
    installationEmailAccounts: 1,
    installationState: 1,
  });
  const user = await app.db.user.findFirstOrThrow({ include: { profile: true } });
  t.equal(user.username, winner.username);
  t.equal(user.email, winner.email.toLowerCase());
  t.ok(user.isSuperuser && user.isStaff, 'installation admin');
  t.not(user.passwordHash, winner.password);
  t.ok(await verifyPassword(user.passwordHash, winner.password), 'argon2 hash of the password');
  t.ok(user.profile, 'profile created');

  const organization = await app.db.organization.findFirstOrThrow({ include: { memberships: true } });
  t.match(organization, { name: 'Acme', slug: winner.organization_slug, status: 'active', isPersonal: false, createdById: user.id });
  t.match(organization.memberships, [{ userId: user.id, role: 'owner', isTemporary: false }]);

  t.equal(await app.db.emailAccount.count(), 0, 'no workspace account: the fallback is installation settings');
  const account = await app.db.installationEmailAccount.findFirstOrThrow();
  t.match(account, {
    isActive: true,
    name: winner.smtp.name,
    host: mailbox.host,
    port: mailbox.port,
    username: mailbox.username,
    fromEmail: 'crm@example.test',
    useTls: false,
    useSsl: false,
  });
  t.not(account.passwordEncrypted, mailbox.password);
  t.equal(decryptSecret(account.passwordEncrypted!, Buffer.from(TEST_EMAIL_KEY, 'base64')), mailbox.password);

  const state = await app.db.installationState.findUniqueOrThrow({ where: { id: 1 } });
  t.ok(state.setupCompletedAt instanceof Date);
});

t.test('once completed, setup is closed for good: 403 whatever the body, and unavailable', async (t) => {
  const before = await rowCounts();
  const get = await app.inject({ method: 'GET', url: '/api/v1/setup/' });
  t.same(json(get), { available: false });

  const attempts: Array<[string, unknown]> = [
    ['valid body', { ...VALID, username: 'second', email: 'second@example.test', organization_slug: 'second' }],
    ['wrong token', { ...VALID, setup_token: 'wrong' }],
    ['invalid body', { nonsense: true }],
  ];
  for (const [name, payload] of attempts) {
    const res = await post(payload);
    t.equal(res.statusCode, 403, name);
    t.equal(json(res).code, 'setup_closed', name);
  }
  const smtpTest = await post(
    { setup_token: TEST_SETUP_TOKEN, recipient: 'someone@example.test', smtp: mailbox.smtpConfig() },
    '/api/v1/setup/smtp-test/',
  );
  t.equal(smtpTest.statusCode, 403);
  t.equal(json(smtpTest).code, 'setup_closed');
  t.same(await rowCounts(), before);
  t.equal(mailbox.messages.length, 0, 'the closed SMTP test sent nothing');
});

t.test('the setup token and passwords never appear in a response or in the log', async (t) => {
  const secrets = [TEST_SETUP_TOKEN, VALID.password, mailbox.password];
  for (const secret of secrets) {
    t.notOk(
      bodies.some((body) => body.includes(secret)),
      'not in a response body',
    );
    t.notOk(
      logs.some((line) => line.includes(secret)),
      'not in the log',
    );
  }
  t.ok(logs.length > 0, 'the log was captured');
});
