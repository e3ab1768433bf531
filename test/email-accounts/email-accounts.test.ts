// A workspace's SMTP accounts: owner/admin only, encrypted and never-returned passwords, exactly one default, test sends.
import { createServer } from 'node:net';
import t from 'tap';
import { decryptSecret } from '../../src/lib/crypto.js';
import { buildTestApp, json, TEST_EMAIL_KEY } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const mailbox = await startMailbox(t, { username: 'org-smtp-user', password: 'org-smtp-secret-Zq81' });
const refusing = await startMailbox(t, { username: 'refusing-user', password: 'refusing-secret-Kx42', rejectMessages: true });
const { app, logs } = await buildTestApp(t);
const { admin: owner, organizationId: acmeId } = await setupInstallation(app);
const admin = await createUser(app, { membership: { organizationId: acmeId, role: 'admin' } });
const member = await createUser(app, { membership: { organizationId: acmeId, role: 'member' } });
const viewer = await createUser(app, { membership: { organizationId: acmeId, role: 'viewer' } });
const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
const outsider = await createUser(app, { membership: { organizationId: other.id, role: 'owner' } });

const SECRETS = [mailbox.password, refusing.password, 'rotated-secret-Pw77', 'wrong-secret-Mm03'];
const bodies: string[] = [];
const accountsUrl = (organizationId = acmeId) => `/api/v1/organizations/${organizationId}/email-accounts/`;
async function call(user: SignedIn, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path = '', payload?: unknown, organizationId = acmeId) {
  const res = await app.inject({
    method,
    url: `${accountsUrl(organizationId)}${path}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  bodies.push(res.body);
  return res;
}
const defaults = () => app.db.emailAccount.findMany({ where: { organizationId: acmeId, isDefault: true }, select: { id: true } });

let firstId = '';
let secondId = '';
let openRelayId = '';

t.test('creating accounts: password encrypted and never returned; the first account becomes the default', async (t) => {
  const res = await call(owner, 'POST', '', mailbox.smtpConfig({ name: 'Primary' }));
  t.equal(res.statusCode, 201);
  const body = json(res);
  firstId = body.id;
  t.same(Object.keys(body).sort(), [
    'created_at',
    'from_email',
    'from_name',
    'has_password',
    'host',
    'id',
    'is_active',
    'is_default',
    'name',
    'port',
    'updated_at',
    'use_ssl',
    'use_tls',
    'username',
  ]);
  t.match(body, {
    name: 'Primary',
    host: '127.0.0.1',
    port: mailbox.port,
    username: 'org-smtp-user',
    has_password: true,
    from_email: 'crm@example.test',
    from_name: 'Workspace CRM',
    use_tls: false,
    use_ssl: false,
    is_default: true,
    is_active: true,
  });
  const row = await app.db.emailAccount.findUniqueOrThrow({ where: { id: firstId } });
  t.equal(row.organizationId, acmeId);
  t.not(row.passwordEncrypted, mailbox.password);
  t.equal(decryptSecret(row.passwordEncrypted!, Buffer.from(TEST_EMAIL_KEY, 'base64')), mailbox.password);

  const second = await call(
    admin,
    'POST',
    '',
    mailbox.smtpConfig({ name: 'Secondary', is_default: false, is_active: false, from_name: undefined }),
  );
  t.equal(second.statusCode, 201, 'an admin may too');
  secondId = json(second).id;
  t.match(json(second), { is_default: false, is_active: false, from_name: null });

  const noPassword = await call(owner, 'POST', '', mailbox.smtpConfig({ name: 'Open relay', username: '', password: '' }));
  t.match(json(noPassword), { has_password: false, is_default: false });
  openRelayId = json(noPassword).id;
  t.equal((await app.db.emailAccount.findUniqueOrThrow({ where: { id: json(noPassword).id } })).passwordEncrypted, null);
  t.same(await defaults(), [{ id: firstId }], 'one default');
});

t.test('is_default: true moves the default in the same change; the default cannot be simply unset', async (t) => {
  const third = await call(owner, 'POST', '', mailbox.smtpConfig({ name: 'Third', is_default: true }));
  t.equal(json(third).is_default, true);
  t.same(await defaults(), [{ id: json(third).id }]);

  const moved = await call(owner, 'PATCH', `${firstId}/`, { is_default: true });
  t.equal(moved.statusCode, 200);
  t.equal(json(moved).is_default, true);
  t.same(await defaults(), [{ id: firstId }]);

  const unset = await call(owner, 'PATCH', `${firstId}/`, { is_default: false });
  t.equal(unset.statusCode, 400);
  t.ok(json(unset).errors?.is_default);
  t.same(await defaults(), [{ id: firstId }]);

  const raced = await Promise.all([
    call(owner, 'PATCH', `${secondId}/`, { is_default: true }),
    call(admin, 'PATCH', `${json(third).id}/`, { is_default: true }),
  ]);
  t.same(
    raced.map((r) => r.statusCode),
    [200, 200],
  );
  t.equal((await defaults()).length, 1, 'still exactly one default after concurrent changes');
  t.equal((await call(owner, 'PATCH', `${firstId}/`, { is_default: true })).statusCode, 200);
});

t.test('listing and reading: owner and admin; no password anywhere', async (t) => {
  const res = await call(admin, 'GET');
  t.equal(res.statusCode, 200);
  const items = json<Array<Record<string, unknown>>>(res);
  t.equal(items.length, 4);
  t.ok(items.every((item) => !('password' in item) && !('password_encrypted' in item)));
  const page = await call(owner, 'GET', '?limit=2');
  t.equal(json(page).length, 2);
  t.match(page.headers.link, /rel="next"/);

  const one = await call(owner, 'GET', `${firstId}/`);
  t.equal(one.statusCode, 200);
  t.match(json(one), { id: firstId, has_password: true });
  t.notOk('password' in json(one));
});

t.test('PATCH changes only what is sent; an empty password removes the stored one', async (t) => {
  const renamed = await call(owner, 'PATCH', `${secondId}/`, {
    name: 'Renamed',
    port: 2525,
    from_name: 'Sales',
    password: 'rotated-secret-Pw77',
  });
  t.equal(renamed.statusCode, 200);
  t.match(json(renamed), {
    name: 'Renamed',
    port: 2525,
    from_name: 'Sales',
    host: '127.0.0.1',
    username: 'org-smtp-user',
    has_password: true,
  });

  t.equal(json(await call(owner, 'PATCH', `${secondId}/`, { password: '' })).has_password, false);
  t.equal((await app.db.emailAccount.findUniqueOrThrow({ where: { id: secondId } })).passwordEncrypted, null);
  t.equal(json(await call(owner, 'PATCH', `${secondId}/`, { password: 'rotated-secret-Pw77' })).has_password, true);
  t.equal(json(await call(owner, 'PATCH', `${secondId}/`, { use_ssl: true, password: 'rotated-secret-Pw77' })).use_ssl, true);

  const both = await call(owner, 'PATCH', `${secondId}/`, { use_tls: true });
  t.equal(both.statusCode, 400, 'use_tls together with the stored use_ssl');
  t.ok(json(both).errors?.use_ssl);
  t.equal((await app.db.emailAccount.findUniqueOrThrow({ where: { id: secondId } })).useTls, false);
});

t.test('POST .../test/ sends one message now through the account', async (t) => {
  const res = await call(owner, 'POST', `${firstId}/test/`, { recipient: 'Check@Example.test' });
  t.equal(res.statusCode, 200);
  t.match(json(res), { detail: String });
  const mail = await mailbox.waitForTo('check@example.test');
  t.equal(mail.authUser, 'org-smtp-user', 'authenticated with the stored (decrypted) password');
  t.equal(mail.from, 'crm@example.test');
  t.match(mail.subject, /test/i);

  await call(owner, 'PATCH', `${secondId}/`, { use_ssl: false, port: mailbox.port, password: mailbox.password });
  const inactive = await call(admin, 'POST', `${secondId}/test/`, { recipient: 'inactive@example.test' });
  t.equal(inactive.statusCode, 200, 'an inactive account can be tested too');
  t.equal((await mailbox.waitForTo('inactive@example.test')).authUser, 'org-smtp-user');
});

t.test('SMTP failures are a generic 502 that reveals no credentials', async (t) => {
  const closedPort = await new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  const wrongPassword = json(await call(owner, 'POST', '', mailbox.smtpConfig({ name: 'Wrong', password: 'wrong-secret-Mm03' }))).id;
  const unreachable = json(await call(owner, 'POST', '', mailbox.smtpConfig({ name: 'Down', port: closedPort }))).id;
  const refused = json(await call(owner, 'POST', '', refusing.smtpConfig({ name: 'Refusing' }))).id;

  for (const [label, id] of [
    ['wrong password', wrongPassword],
    ['unreachable', unreachable],
    ['message refused', refused],
  ] as const) {
    const res = await call(owner, 'POST', `${id}/test/`, { recipient: 'nobody@example.test' });
    t.equal(res.statusCode, 502, label);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.equal(json(res).code, 'smtp_failed', label);
    for (const secret of [...SECRETS, 'org-smtp-user', 'refusing-user', '127.0.0.1', String(closedPort)]) {
      t.notMatch(res.body, secret, `${label}: body does not mention ${secret}`);
    }
  }
});

t.test('deleting: the oldest remaining account inherits the default', async (t) => {
  const deleted = await call(owner, 'DELETE', `${firstId}/`);
  t.equal(deleted.statusCode, 204);
  t.equal(deleted.body, '');
  t.same(await defaults(), [{ id: secondId }], 'the second account is now the oldest');
  t.equal((await call(owner, 'DELETE', `${firstId}/`)).statusCode, 404, 'already gone');
  t.equal((await call(admin, 'DELETE', `${openRelayId}/`)).statusCode, 204, 'a non-default one');
  t.same(await defaults(), [{ id: secondId }]);
});

t.test('members, viewers: 403; non-members, foreign, unknown and malformed ids: 404', async (t) => {
  const before = await app.db.emailAccount.count();
  for (const user of [member, viewer]) {
    for (const [method, path, payload] of [
      ['GET', '', undefined],
      ['POST', '', mailbox.smtpConfig()],
      ['GET', `${secondId}/`, undefined],
      ['PATCH', `${secondId}/`, { name: 'x' }],
      ['DELETE', `${secondId}/`, undefined],
      ['POST', `${secondId}/test/`, { recipient: 'a@example.test' }],
    ] as const) {
      const res = await call(user, method, path, payload);
      t.equal(res.statusCode, 403, `${user.username} ${method} ${path}`);
    }
  }
  const foreign = await app.db.emailAccount.create({
    data: {
      organizationId: other.id,
      name: 'Theirs',
      host: 'smtp.other.test',
      port: 25,
      username: '',
      fromEmail: 'o@example.test',
      isDefault: true,
    },
  });
  for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
    for (const [method, path, payload] of [
      ['GET', `${id}/`, undefined],
      ['PATCH', `${id}/`, { name: 'Mine now' }],
      ['DELETE', `${id}/`, undefined],
      ['POST', `${id}/test/`, { recipient: 'a@example.test' }],
    ] as const) {
      const res = await call(owner, method, path, payload);
      t.equal(res.statusCode, 404, `${method} ${path}`);
      t.equal(json(res).code, 'email_account_not_found');
    }
  }
  t.equal((await call(outsider, 'GET')).statusCode, 404, 'a non-member');
  t.equal((await app.inject({ method: 'GET', url: accountsUrl() })).statusCode, 401, 'anonymous');
  t.equal((await call(owner, 'GET', '', undefined, other.id)).statusCode, 404, 'an organization the owner is not in');
  t.match(await app.db.emailAccount.findUniqueOrThrow({ where: { id: foreign.id } }), { name: 'Theirs', organizationId: other.id });
  t.equal(await app.db.emailAccount.count(), before + 1);
});

t.test('bad input on every endpoint: 400 and nothing changes', async (t) => {
  const before = await app.db.emailAccount.findMany({ orderBy: { id: 'asc' } });
  const valid = mailbox.smtpConfig();
  await rejectsBadBodies(t, app, { method: 'POST', url: accountsUrl(), headers: owner.headers }, valid, [
    'name',
    'host',
    'username',
    'password',
    'from_email',
    'from_name',
    'use_tls',
    'use_ssl',
    'is_default',
    'is_active',
  ]);
  const target = before.find((row) => row.organizationId === acmeId)!;
  await rejectsBadBodies(t, app, { method: 'PATCH', url: `${accountsUrl()}${target.id}/`, headers: owner.headers }, { name: 'Fine' }, [
    'name',
    'host',
    'password',
    'from_email',
    'use_ssl',
    'is_default',
  ]);
  await rejectsBadBodies(
    t,
    app,
    { method: 'POST', url: `${accountsUrl()}${target.id}/test/`, headers: owner.headers },
    { recipient: 'a@example.test' },
    ['recipient'],
  );
  for (const [label, payload, field] of [
    ['missing host', { ...valid, host: undefined }, 'host'],
    ['empty name', { ...valid, name: '' }, 'name'],
    ['port 0', { ...valid, port: 0 }, 'port'],
    ['port 70000', { ...valid, port: 70000 }, 'port'],
    ['port as a string', { ...valid, port: '25' }, 'port'],
    ['invalid from_email', { ...valid, from_email: 'nope' }, 'from_email'],
    ['both TLS modes', { ...valid, use_tls: true, use_ssl: true }, 'use_ssl'],
  ] as const) {
    const res = await call(owner, 'POST', '', payload);
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: errors.${field}`);
  }
  t.equal((await call(owner, 'PATCH', `${target.id}/`, {})).statusCode, 400, 'an empty PATCH');
  t.equal((await call(owner, 'POST', `${target.id}/test/`, { recipient: 'not-an-email' })).statusCode, 400);
  t.equal((await call(owner, 'POST', `${target.id}/test/`, {})).statusCode, 400);
  t.same(await app.db.emailAccount.findMany({ orderBy: { id: 'asc' } }), before);
});

t.test('no SMTP secret in any response or log line', async (t) => {
  const everything = [...bodies, ...logs].join('\n');
  for (const secret of SECRETS) t.notMatch(everything, secret, `${secret} never shown`);
  const stored = await app.db.emailAccount.findMany({ where: { passwordEncrypted: { not: null } } });
  for (const row of stored) t.notMatch(everything, row.passwordEncrypted!, 'nor its ciphertext');
});

t.test('without EMAIL_ENCRYPTION_KEY, accounts cannot be stored and stored passwords cannot be used', async (t) => {
  const { app: keyless } = await buildTestApp(t, { EMAIL_ENCRYPTION_KEY: undefined });
  const { admin: keylessOwner, organizationId } = await setupInstallation(keyless);
  const url = `/api/v1/organizations/${organizationId}/email-accounts/`;
  const created = await keyless.inject({ method: 'POST', url, headers: keylessOwner.headers, payload: mailbox.smtpConfig() });
  t.equal(created.statusCode, 400);
  t.equal(json(created).code, 'encryption_key_missing');
  t.equal(await keyless.db.emailAccount.count(), 0);

  const stored = await keyless.db.emailAccount.create({
    data: {
      organizationId,
      name: 'Legacy',
      host: '127.0.0.1',
      port: mailbox.port,
      username: 'u',
      passwordEncrypted: 'c2VjcmV0',
      fromEmail: 'a@example.test',
      isDefault: true,
    },
  });
  const rotated = await keyless.inject({
    method: 'PATCH',
    url: `${url}${stored.id}/`,
    headers: keylessOwner.headers,
    payload: { password: 'new-one' },
  });
  t.equal(rotated.statusCode, 400);
  t.equal(json(rotated).code, 'encryption_key_missing');
  const renamed = await keyless.inject({
    method: 'PATCH',
    url: `${url}${stored.id}/`,
    headers: keylessOwner.headers,
    payload: { name: 'Renamed' },
  });
  t.equal(renamed.statusCode, 200, 'other fields can still change');
  const tested = await keyless.inject({
    method: 'POST',
    url: `${url}${stored.id}/test/`,
    headers: keylessOwner.headers,
    payload: { recipient: 'a@example.test' },
  });
  t.equal(tested.statusCode, 400);
  t.equal(json(tested).code, 'encryption_key_missing');
  t.equal((await keyless.db.emailAccount.findUniqueOrThrow({ where: { id: stored.id } })).passwordEncrypted, 'c2VjcmV0');
});
