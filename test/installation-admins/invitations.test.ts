// Installation-administrator invitations end to end: the list, sending through the installation fallback only,
// preview, acceptance by new and existing users (superuser, no membership), single use, expiry, bad input.
import t from 'tap';
import { encryptSecret } from '../../src/lib/crypto.js';
import { buildTestApp, bearer, json, TEST_EMAIL_KEY } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { emailedLink } from '../invitations/links.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_ADMIN_INVITATIONS_PER_DAY: '1000' });
const mailbox = await startMailbox(t);
const { admin: root, organizationId } = await setupInstallation(app, mailbox);
const dave = await createUser(app, { username: 'dave', membership: { organizationId, role: 'admin' } });
const erin = await createUser(app, { username: 'erin' });
const secrets: string[] = [];

const LIST_URL = '/api/v1/organizations/installation-admin-invitations/';
const PASSWORD = 'an-admin-passphrase';
const list = (who: SignedIn) => app.inject({ method: 'GET', url: LIST_URL, headers: who.headers });
const invite = (who: SignedIn, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: LIST_URL, headers: who.headers, payload });
const preview = (token: string) => app.inject({ method: 'GET', url: `/api/v1/installation-admin-invitations/${token}/` });
const acceptUrl = (token: string) => `/api/v1/installation-admin-invitations/${token}/accept/`;
const accept = (token: string, options: { headers?: Record<string, string>; payload?: Record<string, unknown> } = {}) =>
  app.inject({ method: 'POST', url: acceptUrl(token), ...options });

async function inviteAdmin(email: string) {
  const { result, mail, link, token } = await emailedLink(mailbox, email, '/installation-admin-invite/', () => invite(root, { email }));
  if (result.statusCode !== 201) throw new Error(`admin invitation failed: ${result.statusCode} ${result.body}`);
  secrets.push(token);
  return { invitation: json(result), mail, link, token };
}

t.test('only installation administrators list and invite', async (t) => {
  const res = await list(root);
  t.equal(res.statusCode, 200);
  t.same(json(res), { administrators: [{ id: root.id, username: 'admin', email: 'admin@example.test' }], invitations: [] });
  for (const who of [dave, erin]) {
    t.equal((await list(who)).statusCode, 403, `${who.username} cannot list`);
    const refused = await invite(who, { email: 'wannabe@example.test' });
    t.equal(refused.statusCode, 403);
    t.equal(json(refused).code, 'installation_admin_required');
  }
  t.equal((await app.inject({ method: 'GET', url: LIST_URL })).statusCode, 401);
  t.equal((await app.inject({ method: 'POST', url: LIST_URL, payload: { email: 'x@example.test' } })).statusCode, 401);
  t.equal(await app.db.installationAdminInvitation.count(), 0);
});

t.test('an invitation goes out through the fallback SMTP with an installation-admin link', async (t) => {
  const { invitation, mail, link, token } = await inviteAdmin('New.Admin@Example.test');
  t.same(Object.keys(invitation).sort(), ['email', 'expires_at', 'id']);
  t.equal(invitation.email, 'new.admin@example.test');
  t.ok(Math.abs(Date.parse(invitation.expires_at) - Date.now() - 7 * 24 * 3600 * 1000) < 60_000, 'seven days');
  t.equal(link, `http://app.example.test/installation-admin-invite/${token}`);
  t.equal(mail.authUser, mailbox.username);
  t.ok(mail.text.includes(link) && mail.html.includes(`href="${link}"`), 'text and HTML parts');
  const listed = json(await list(root));
  t.same(listed.invitations, [invitation], 'pending invitations listed');

  const preview200 = await preview(token);
  t.equal(preview200.statusCode, 200);
  t.same(json(preview200), { email: 'new.admin@example.test', expires_at: invitation.expires_at });
  const unknown = await preview('B'.repeat(43));
  t.equal(unknown.statusCode, 404);
  t.equal(json(unknown).code, 'invitation_invalid');
  // A workspace-invitation token is no installation-admin token.
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/invitations/${token}/` })).statusCode, 404);
});

t.test('inviting the same address again replaces the link; administrators are not invited', async (t) => {
  const first = await inviteAdmin('twice-admin@example.test');
  const second = await inviteAdmin('twice-admin@example.test');
  t.not(second.invitation.id, first.invitation.id);
  t.equal((await preview(first.token)).statusCode, 404, 'earlier link revoked');
  t.equal((await preview(second.token)).statusCode, 200);
  t.equal(json(await list(root)).invitations.filter((i: { email: string }) => i.email === 'twice-admin@example.test').length, 1);

  const existing = await invite(root, { email: 'ADMIN@example.test' });
  t.equal(existing.statusCode, 409);
  t.equal(json(existing).code, 'already_administrator');
});

t.test('without the installation fallback nothing is sent, even when a workspace has its own account', async (t) => {
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  t.teardown(() => app.db.installationEmailAccount.updateMany({ data: { isActive: true } }));
  await app.db.emailAccount.create({
    data: {
      organizationId,
      name: 'Acme SMTP',
      host: mailbox.host,
      port: mailbox.port,
      username: mailbox.username,
      passwordEncrypted: encryptSecret(mailbox.password, Buffer.from(TEST_EMAIL_KEY, 'base64')),
      fromEmail: 'acme@example.test',
      useTls: false,
      isDefault: true,
    },
  });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const res = await invite(root, { email: 'no-fallback@example.test' });
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'email_not_configured');
  t.equal(await app.db.installationAdminInvitation.count({ where: { email: 'no-fallback@example.test' } }), 0);
});

t.test('a new user accepts: superuser and staff, tokens, no membership, single use', async (t) => {
  const { token } = await inviteAdmin('fresh-admin@example.test');
  const res = await accept(token, {
    payload: { username: 'fresh-admin', password: PASSWORD, display_name: 'Fresh Admin', locale: 'de-DE' },
  });
  t.equal(res.statusCode, 201);
  const body = json(res);
  secrets.push(body.tokens.access, body.tokens.refresh);
  t.same(Object.keys(body).sort(), ['is_superuser', 'tokens']);
  t.equal(body.is_superuser, true);
  const user = await app.db.user.findUniqueOrThrow({ where: { username: 'fresh-admin' }, include: { memberships: true, profile: true } });
  t.match(user, { email: 'fresh-admin@example.test', isSuperuser: true, isStaff: true });
  t.same(user.memberships, [], 'no workspace membership');
  t.ok(user.profile?.onboardingCompletedAt);
  const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(body.tokens.access) });
  t.match(json(me), { is_superuser: true, organizations: [] });
  t.equal(
    (await app.inject({ method: 'GET', url: LIST_URL, headers: bearer(body.tokens.access) })).statusCode,
    200,
    'can now manage admins',
  );

  const replay = await accept(token, { payload: { username: 'fresh-admin-2', password: PASSWORD, display_name: 'Again' } });
  t.equal(replay.statusCode, 404);
  t.equal(json(replay).code, 'invitation_invalid');
  t.equal((await preview(token)).statusCode, 404);
});

t.test('an existing user accepts with the Bearer token; the email must match', async (t) => {
  const { token } = await inviteAdmin(erin.email);
  const anonymous = await accept(token, { payload: { username: 'erin-2', password: PASSWORD, display_name: 'Erin' } });
  t.equal(anonymous.statusCode, 409);
  t.equal(json(anonymous).code, 'account_exists');
  const mismatch = await accept(token, { headers: dave.headers });
  t.equal(mismatch.statusCode, 403);
  t.equal(json(mismatch).code, 'invitation_email_mismatch');
  t.equal((await app.db.user.findUniqueOrThrow({ where: { id: dave.id } })).isSuperuser, false);
  t.equal((await preview(token)).statusCode, 200, 'still pending');

  const res = await accept(token, { headers: erin.headers, payload: {} });
  t.equal(res.statusCode, 201);
  t.same(json(res), { is_superuser: true, tokens: null });
  t.match(await app.db.user.findUniqueOrThrow({ where: { id: erin.id } }), { isSuperuser: true, isStaff: true });
  t.equal(await app.db.membership.count({ where: { userId: erin.id } }), 0, 'no membership');
  t.equal((await list(erin)).statusCode, 200, 'the same access token now passes the admin check');
  t.equal((await accept(token, { headers: erin.headers })).statusCode, 404, 'replay');
});

t.test('expired links are 404; two simultaneous accepts cannot both succeed', async (t) => {
  const expiring = await inviteAdmin('late-admin@example.test');
  await app.db.$executeRaw`UPDATE installation_admin_invitations SET expires_at = now() - interval '1 minute'
    WHERE id = ${expiring.invitation.id}::uuid`;
  t.equal((await preview(expiring.token)).statusCode, 404);
  t.equal((await accept(expiring.token, { payload: { username: 'late', password: PASSWORD, display_name: 'Late' } })).statusCode, 404);
  t.notOk(
    json(await list(root)).invitations.some((i: { email: string }) => i.email === 'late-admin@example.test'),
    'expired not listed',
  );

  const raced = await inviteAdmin('race-admin@example.test');
  const results = await Promise.all(
    ['race-a', 'race-b'].map((username) => accept(raced.token, { payload: { username, password: PASSWORD, display_name: username } })),
  );
  t.same(results.map((res) => res.statusCode).sort(), [201, 404]);
  for (const res of results) if (res.statusCode === 201) secrets.push(json(res).tokens.access, json(res).tokens.refresh);
  t.equal(await app.db.user.count({ where: { email: 'race-admin@example.test' } }), 1);
});

t.test('bad input is 400 problem+json and changes nothing', async (t) => {
  await rejectsBadBodies(t, app, { method: 'POST', url: LIST_URL, headers: root.headers }, { email: 'bad-admin@example.test' }, ['email']);
  const invalid = await invite(root, { email: 'not an email' });
  t.equal(invalid.statusCode, 400);
  t.ok(json(invalid).errors.email);
  t.equal(await app.db.installationAdminInvitation.count({ where: { email: 'bad-admin@example.test' } }), 0);

  const { token } = await inviteAdmin('careful-admin@example.test');
  const valid = { username: 'careful', password: PASSWORD, display_name: 'Careful' };
  await rejectsBadBodies(t, app, { method: 'POST', url: acceptUrl(token) }, valid, ['username', 'password', 'display_name', 'timezone']);
  const missing = await accept(token);
  t.equal(missing.statusCode, 400);
  t.same(Object.keys(json(missing).errors).sort(), ['display_name', 'password', 'username']);
  const weak = await accept(token, { payload: { ...valid, password: '123' } });
  t.equal(weak.statusCode, 400);
  t.ok(json(weak).errors.password);
  const signedInWithBody = await accept(token, { headers: erin.headers, payload: valid });
  t.equal(signedInWithBody.statusCode, 400);
  t.equal((await preview(token)).statusCode, 200, 'still pending');
  t.equal(await app.db.user.count({ where: { username: 'careful' } }), 0);
});

t.test('sending is rate-limited per administrator', async (t) => {
  const limited = await buildTestApp(t, { RATE_LIMIT_ADMIN_INVITATIONS_PER_DAY: '1' });
  const box = await startMailbox(t);
  const { admin } = await setupInstallation(limited.app, box);
  const send = (email: string) => limited.app.inject({ method: 'POST', url: LIST_URL, headers: admin.headers, payload: { email } });
  t.equal((await send('l1@example.test')).statusCode, 201);
  const second = await send('l2@example.test');
  t.equal(second.statusCode, 429);
  t.ok(second.headers['retry-after']);
  t.equal(await limited.app.db.installationAdminInvitation.count(), 1);
});

t.test('no link token, password or issued token reaches the log', async (t) => {
  t.ok(secrets.length > 8);
  const all = logs.join('\n');
  for (const secret of [...secrets, PASSWORD]) t.notOk(all.includes(secret), 'secret absent from the log');
});
