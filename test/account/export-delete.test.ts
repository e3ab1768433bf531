// The personal data export (exact contents, no secrets) and account deletion (confirmation, password, ownership).
import t from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser, deleteAccount, setupInstallation, signIn, type SignedIn } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const { app } = await buildTestApp(t);
const mailbox = await startMailbox(t);
const { admin, organizationId } = await setupInstallation(app, mailbox);
const carol = await createUser(app, { username: 'carol', membership: { organizationId, role: 'member' } });

const exportOf = (user: SignedIn) => app.inject({ method: 'GET', url: '/api/v1/auth/me/export/', headers: user.headers });

t.test('the export holds account, profile and memberships, and nothing else', async (t) => {
  await app.db.profile.update({
    where: { userId: carol.id },
    data: { firstName: 'Carol', timezone: 'Europe/Paris', marketingConsent: true, dateOfBirth: new Date('1990-05-17T00:00:00Z') },
  });
  await app.db.company.create({ data: { organizationId, name: 'Confidential Widgets Ltd', email: 'buyer@widgets.test' } });
  await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/', payload: { email: carol.email } });
  // The worker creates the link: once its email has arrived, the reset token row exists.
  await mailbox.waitForTo(carol.email);

  const res = await exportOf(carol);
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-disposition'], 'attachment; filename="account-export.json"');
  t.match(res.headers['content-type'], /^application\/json/);
  const body = json(res);
  t.same(Object.keys(body).sort(), ['account', 'memberships', 'profile']);
  const user = await app.db.user.findUniqueOrThrow({ where: { id: carol.id } });
  t.same(body.account, { username: 'carol', email: carol.email, date_joined: user.dateJoined.toISOString() });
  t.same(body.profile, {
    display_name: 'carol',
    first_name: 'Carol',
    last_name: null,
    date_of_birth: '1990-05-17',
    timezone: 'Europe/Paris',
    locale: null,
    marketing_consent: true,
    onboarding_completed_at: null,
    privacy_policy_version_accepted: null,
    privacy_policy_accepted_at: null,
  });
  const membership = await app.db.membership.findFirstOrThrow({ where: { userId: carol.id } });
  t.same(body.memberships, [
    { organization_id: organizationId, organization_name: 'Acme', role: 'member', created_at: membership.createdAt.toISOString() },
  ]);

  const resetToken = await app.db.passwordResetToken.findFirstOrThrow({ where: { userId: carol.id } });
  const smtp = await app.db.installationEmailAccount.findFirstOrThrow();
  for (const secret of [
    carol.password,
    carol.access,
    carol.refresh,
    user.passwordHash,
    resetToken.tokenHash,
    mailbox.password,
    smtp.passwordEncrypted!,
    'Confidential Widgets',
  ]) {
    t.notOk(res.body.includes(secret), 'no secret and no CRM record in the export');
  }
});

t.test("the admin's export lists the workspace they own", async (t) => {
  const body = json(await exportOf(admin));
  t.same(
    body.memberships.map((m: { organization_id: string; role: string }) => [m.organization_id, m.role]),
    [[organizationId, 'owner']],
  );
  t.notOk(JSON.stringify(body).includes(admin.password));
});

t.test('deletion needs the literal confirmation and the password; bad bodies change nothing', async (t) => {
  for (const confirmation of ['delete', 'DELETE ', '']) {
    const res = await deleteAccount(app, carol, { password: carol.password, confirmation });
    t.equal(res.statusCode, 400, JSON.stringify(confirmation));
    t.equal(json(res).code, 'validation_failed');
    t.ok(json(res).errors.confirmation);
  }
  const wrong = await deleteAccount(app, carol, { password: 'not-carols-password', confirmation: 'DELETE' });
  t.equal(wrong.statusCode, 400);
  t.equal(json(wrong).code, 'wrong_password');
  t.ok(json(wrong).errors.password);
  await rejectsBadBodies(
    t,
    app,
    { method: 'POST', url: '/api/v1/auth/me/delete/', headers: carol.headers },
    { password: carol.password, confirmation: 'DELETE' },
    ['password', 'confirmation'],
  );
  t.equal((await deleteAccount(app, carol, { password: carol.password })).statusCode, 400, 'confirmation required');
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/me/delete/', headers: carol.headers })).statusCode, 400, 'body required');
  t.equal(
    (await app.inject({ method: 'POST', url: '/api/v1/auth/me/delete/', payload: { password: carol.password, confirmation: 'DELETE' } }))
      .statusCode,
    401,
  );
  t.ok(await app.db.user.findUnique({ where: { id: carol.id } }), 'carol still exists');
  t.equal(json(await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: carol.headers })).id, carol.id, 'and her token works');
});

t.test('the owner of a workspace cannot delete the account until ownership moves', async (t) => {
  const res = await deleteAccount(app, admin, { password: admin.password, confirmation: 'DELETE' });
  t.equal(res.statusCode, 409);
  t.equal(json(res).code, 'owner_of_workspace');
  t.match(json(res).detail, /Acme/);
  t.ok(await app.db.user.findUnique({ where: { id: admin.id } }), 'admin still exists');
});

t.test('the last installation administrator cannot delete the account', async (t) => {
  const dave = await createUser(app, { username: 'dave' });
  // Ownership transfer is the members module's business: the scenery is set in the database.
  await app.db.membership.updateMany({ where: { organizationId, userId: admin.id }, data: { role: 'admin' } });
  await app.db.membership.create({ data: { organizationId, userId: dave.id, role: 'owner' } });
  const res = await deleteAccount(app, admin, { password: admin.password, confirmation: 'DELETE' });
  t.equal(res.statusCode, 409);
  t.equal(json(res).code, 'last_installation_admin');
  await app.db.user.update({ where: { id: dave.id }, data: { isSuperuser: true } });
  t.equal(
    (await deleteAccount(app, admin, { password: admin.password, confirmation: 'DELETE' })).statusCode,
    204,
    'with another admin it works',
  );
  t.equal(await app.db.organization.count({ where: { id: organizationId } }), 1, 'the shared workspace stays');
});

t.test('owning a personal or a cancelled workspace does not block deletion', async (t) => {
  const erin = await createUser(app, { username: 'erin' });
  const cancelled = await app.db.organization.create({ data: { name: 'Gone', slug: 'gone', status: 'cancelled' } });
  await app.db.membership.create({ data: { organizationId: cancelled.id, userId: erin.id, role: 'owner' } });
  const personal = await app.db.organization.create({
    data: { name: 'Erin', slug: 'erin-personal', isPersonal: true, personalUserId: erin.id },
  });
  await app.db.membership.create({ data: { organizationId: personal.id, userId: erin.id, role: 'owner' } });
  t.equal((await deleteAccount(app, erin, { password: erin.password, confirmation: 'DELETE' })).statusCode, 204);
  t.equal(await app.db.organization.count({ where: { id: personal.id } }), 0, 'the personal workspace is deleted with the account');
});

t.test('a plain member deletes the account: rows gone, every token dead', async (t) => {
  const second = await signIn(app, 'carol', carol.password);
  const members = await app.db.membership.count({ where: { organizationId } });
  const res = await deleteAccount(app, carol, { password: carol.password, confirmation: 'DELETE' });
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal(await app.db.user.count({ where: { id: carol.id } }), 0);
  t.equal(await app.db.membership.count({ where: { userId: carol.id } }), 0);
  t.equal(await app.db.profile.count({ where: { userId: carol.id } }), 0);
  t.equal(await app.db.refreshToken.count({ where: { userId: carol.id } }), 0);
  t.equal(await app.db.passwordResetToken.count({ where: { userId: carol.id } }), 0);
  for (const access of [carol.access, second.access]) {
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) })).statusCode, 401);
  }
  const refresh = await app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: second.refresh } });
  t.equal(refresh.statusCode, 401);
  const again = await app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username: 'carol', password: carol.password } });
  t.equal(again.statusCode, 401, 'cannot sign in any more');
  t.equal(await app.db.membership.count({ where: { organizationId } }), members - 1, 'the workspace keeps its other members');
});
