// Password change and reset by emailed link: rules, sessions ended, single-use links, identical answers, rate limit.
import t from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser, setupInstallation, signIn, type SignedIn } from '../helpers/fixtures.js';
import { linkIn, startMailbox, tokenOf } from '../helpers/mailbox.js';
import { sha256Hex } from '../../src/lib/crypto.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const { app, logs } = await buildTestApp(t);
const mailbox = await startMailbox(t);
await setupInstallation(app, mailbox);
const frank = await createUser(app, { username: 'frank', password: 'frank-original-pw' });
const seenSecrets: string[] = [frank.password, frank.access, frank.refresh];

let clientCounter = 0;
/** Each reset request comes from its own client address unless told otherwise: the limit has its own test. */
const requestReset = (email: unknown, remoteAddress = `10.1.0.${++clientCounter}`) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/', remoteAddress, payload: { email } });
const confirmReset = (path: string, newPassword: unknown) =>
  app.inject({ method: 'POST', url: `/api/v1/auth/password-reset/${path}/`, payload: { new_password: newPassword } });
const changePassword = (user: SignedIn, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/me/password/', headers: user.headers, payload });
const me = (access: string) => app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) });
const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: token } });
const canSignIn = async (username: string, password: string) =>
  (await app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password } })).statusCode === 200;

/** The reset link of the first email to `email` after the first `skip` messages; returns its `<uidb64>/<token>`. */
async function linkOfNextMail(email: string, skip: number): Promise<string> {
  const mail = await mailbox.waitFor((m) => m.to.includes(email) && mailbox.messages.indexOf(m) >= skip);
  const link = linkIn(mail, '/reset-password/');
  t.ok(link.startsWith('http://app.example.test/reset-password/'), 'link on SERVICE_APP_URL');
  seenSecrets.push(tokenOf(link));
  return link.split('/reset-password/')[1]!.replace(/\/+$/, '');
}

/** Requests a reset for `email` and returns the `<uidb64>/<token>` of the link that arrives. */
async function resetLink(email: string): Promise<string> {
  const skip = mailbox.messages.length;
  t.equal((await requestReset(email)).statusCode, 200);
  return linkOfNextMail(email, skip);
}

t.test('a wrong current password or a weak new one answers 400 and changes nothing', async (t) => {
  const before = await app.db.user.findUniqueOrThrow({ where: { id: frank.id } });
  const wrong = await changePassword(frank, { current_password: 'not-franks-password', new_password: 'a-fine-new-password' });
  t.equal(wrong.statusCode, 400);
  t.equal(json(wrong).code, 'wrong_password');
  t.ok(json(wrong).errors.current_password);
  for (const weak of ['short', '1234567890123', 'frank', 'FRANK@example.test', 'é'.repeat(600)]) {
    const res = await changePassword(frank, { current_password: frank.password, new_password: weak });
    t.equal(res.statusCode, 400, `weak: ${weak.slice(0, 20)}`);
    t.equal(json(res).code, 'validation_failed');
    t.ok(json(res).errors.new_password);
  }
  await rejectsBadBodies(
    t,
    app,
    { method: 'POST', url: '/api/v1/auth/me/password/', headers: frank.headers },
    { current_password: frank.password, new_password: 'a-fine-new-password' },
    ['current_password', 'new_password'],
  );
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/api/v1/auth/me/password/',
        payload: { current_password: frank.password, new_password: 'a-fine-new-password' },
      })
    ).statusCode,
    401,
    'anonymous',
  );
  t.same(await app.db.user.findUniqueOrThrow({ where: { id: frank.id } }), before, 'user row unchanged');
  t.equal((await me(frank.access)).statusCode, 200, 'session intact');
});

t.test('a password change ends every session and kills outstanding reset links', async (t) => {
  const pending = await resetLink(frank.email);
  const other = await signIn(app, 'frank', frank.password);
  seenSecrets.push(other.access, other.refresh);
  const res = await changePassword(frank, { current_password: frank.password, new_password: 'frank-second-pw' });
  t.equal(res.statusCode, 200);
  t.same(Object.keys(json(res)), ['detail'], 'no tokens: the caller signs in again');
  for (const session of [frank, other]) {
    t.equal((await me(session.access)).statusCode, 401, 'old access token');
    t.equal((await refresh(session.refresh)).statusCode, 401, 'old refresh token');
  }
  t.notOk(await canSignIn('frank', 'frank-original-pw'), 'old password refused');
  t.ok(await canSignIn('frank', 'frank-second-pw'), 'new password works');
  t.equal((await confirmReset(pending, 'frank-third-password')).statusCode, 404, 'reset link from before the change is dead');
  frank.password = 'frank-second-pw';
});

t.test('reset requests answer the same for known and unknown addresses; only known ones get mail', async (t) => {
  const outboxBefore = await app.db.emailOutbox.count();
  const skip = mailbox.messages.length;
  const unknown = await requestReset('nobody@example.test');
  const known = await requestReset(frank.email.toUpperCase());
  t.equal(unknown.statusCode, 200);
  t.equal(known.statusCode, 200);
  t.same(json(known), json(unknown), 'identical bodies');
  t.ok(json(known).detail, 'a detail message');
  // The worker handles the requests in order: once the known address's mail has arrived, both were looked up.
  const [uidb64, token] = (await linkOfNextMail(frank.email, skip)).split('/');
  t.equal(await app.db.emailOutbox.count(), outboxBefore + 1, 'one email queued, for the known address only');
  t.equal(Buffer.from(uidb64!, 'base64url').toString('utf8'), frank.id, 'uidb64 is the base64url user id');
  t.ok(token!.length >= 43, 'at least 32 random bytes');
  const row = await app.db.passwordResetToken.findUniqueOrThrow({ where: { tokenHash: sha256Hex(token!) } });
  t.equal(row.userId, frank.id, 'only the SHA-256 of the token is stored');
  const hourFromNow = Date.now() + 60 * 60 * 1000;
  t.ok(Math.abs(row.expiresAt.getTime() - hourFromNow) < 60_000, 'valid for one hour');
  t.equal(mailbox.messages.filter((m) => m.to.includes('nobody@example.test')).length, 0);
});

t.test('the reset link sets the password once and ends everything else', async (t) => {
  const session = await signIn(app, 'frank', frank.password);
  seenSecrets.push(session.access, session.refresh);
  const older = await resetLink(frank.email);
  const path = await resetLink(frank.email);
  const [uidb64, token] = path.split('/');

  const weak = await confirmReset(path, '12345678');
  t.equal(weak.statusCode, 400, 'password rules apply');
  t.ok(json(weak).errors.new_password);
  const alice = await createUser(app, { username: 'alice' });
  const otherUid = Buffer.from(alice.id).toString('base64url');
  t.equal((await confirmReset(`${otherUid}/${token}`, 'frank-reset-password')).statusCode, 404, "token with another user's uid");
  t.equal((await confirmReset(`not-base64/${token}`, 'frank-reset-password')).statusCode, 404, 'garbage uid');
  const unknown = await confirmReset(`${uidb64}/${'A'.repeat(43)}`, 'frank-reset-password');
  t.equal(unknown.statusCode, 404, 'unknown token');
  t.equal(json(unknown).code, 'reset_link_invalid');
  await rejectsBadBodies(
    t,
    app,
    { method: 'POST', url: `/api/v1/auth/password-reset/${path}/` },
    { new_password: 'frank-reset-password' },
    ['new_password'],
  );
  t.ok(await canSignIn('frank', frank.password), 'none of that changed the password');

  const ok = await confirmReset(path, 'frank-reset-password');
  t.equal(ok.statusCode, 200);
  t.same(Object.keys(json(ok)), ['detail']);
  t.equal((await confirmReset(path, 'frank-another-password')).statusCode, 404, 'replay');
  t.equal((await confirmReset(older, 'frank-another-password')).statusCode, 404, 'an older link died with the change');
  t.equal((await me(session.access)).statusCode, 401, 'sessions ended');
  t.equal((await refresh(session.refresh)).statusCode, 401);
  t.notOk(await canSignIn('frank', frank.password), 'old password refused');
  t.ok(await canSignIn('frank', 'frank-reset-password'), 'new password works');
  frank.password = 'frank-reset-password';
});

t.test('an expired link answers 404', async (t) => {
  const path = await resetLink(frank.email);
  await app.db.passwordResetToken.updateMany({
    where: { userId: frank.id, usedAt: null },
    data: { expiresAt: new Date(Date.now() - 1000) },
  });
  const res = await confirmReset(path, 'frank-expired-password');
  t.equal(res.statusCode, 404);
  t.equal(json(res).code, 'reset_link_invalid');
  t.ok(await canSignIn('frank', frank.password));
});

t.test('reset requests reject bad bodies and write nothing', async (t) => {
  const before = await app.db.passwordResetToken.count();
  await rejectsBadBodies(t, app, { method: 'POST', url: '/api/v1/auth/password-reset/' }, { email: frank.email }, ['email']);
  t.equal((await requestReset('not-an-email')).statusCode, 400);
  t.equal(await app.db.passwordResetToken.count(), before);
});

t.test('reset requests are limited to 5 an hour per client address', async (t) => {
  for (let i = 1; i <= 5; i++) t.equal((await requestReset(`probe${i}@example.test`, '10.9.9.9')).statusCode, 200, `request ${i}`);
  const limited = await requestReset('probe6@example.test', '10.9.9.9');
  t.equal(limited.statusCode, 429);
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After set');
  t.equal((await requestReset('probe7@example.test', '10.9.9.10')).statusCode, 200, 'another address is not limited');
});

t.test('no password or token reaches the log', async (t) => {
  const text = logs.join('\n');
  for (const secret of [...new Set([...seenSecrets, 'frank-reset-password', 'frank-second-pw', 'frank-original-pw'])]) {
    t.notOk(text.includes(secret), 'secret absent from logs');
  }
});
