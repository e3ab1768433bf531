// Changing the email address: current password, notice to the old address, confirmation link, no account enumeration.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { linkIn, startMailbox, tokenOf } from '../helpers/mailbox.js';

const { app, logs } = await buildTestApp(t);
const mailbox = await startMailbox(t);
await setupInstallation(app, mailbox);
const carol = await createUser(app, { username: 'carol', email: 'carol@example.test', password: 'carol-password-1' });
const bob = await createUser(app, { username: 'bob', email: 'bob@example.test' });

const patchSettings = (payload: Record<string, unknown>) =>
  app.inject({ method: 'PATCH', url: '/api/v1/auth/me/settings/', headers: carol.headers, payload });
const confirm = (token: string) => app.inject({ method: 'POST', url: `/api/v1/auth/email-change/${token}/` });
const emailOf = async (id: string) => (await app.db.user.findUniqueOrThrow({ where: { id } })).email;

t.test('an email change needs the current password', async (t) => {
  const missing = await patchSettings({ email: 'carol.new@example.test' });
  t.equal(missing.statusCode, 400);
  t.ok(json(missing).errors.current_password, 'errors.current_password');
  const wrong = await patchSettings({ email: 'carol.new@example.test', current_password: 'not-carols-password' });
  t.equal(wrong.statusCode, 400);
  t.equal(json(wrong).code, 'wrong_password');
  t.equal(await emailOf(carol.id), 'carol@example.test', 'unchanged');
  t.equal(await app.db.emailChangeRequest.count(), 0, 'nothing pending');
});

t.test('the new address takes effect only through the link sent to it; the old one is told and its reset links die', async (t) => {
  const skip = mailbox.messages.length;
  t.equal(
    (await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/', payload: { email: 'carol@example.test' } })).statusCode,
    200,
  );
  const resetMail = await mailbox.waitFor((m) => m.to.includes('carol@example.test') && mailbox.messages.indexOf(m) >= skip);
  const resetPath = linkIn(resetMail, '/reset-password/').split('/reset-password/')[1]!.replace(/\/+$/, '');

  const res = await patchSettings({ email: 'Carol.New@Example.test', current_password: 'carol-password-1', last_name: 'Newname' });
  t.equal(res.statusCode, 200);
  t.match(json(res), { email: 'carol@example.test', last_name: 'Newname' }, 'the answer shows the current address; other fields apply');
  t.equal(await emailOf(carol.id), 'carol@example.test', 'not changed before confirmation');

  const notice = await mailbox.waitFor((m) => m.to.includes('carol@example.test') && /being changed/i.test(m.subject));
  t.match(notice.text, /carol\.new@example\.test/, 'the notice names the new address');
  const confirmation = await mailbox.waitForTo('carol.new@example.test');
  const link = linkIn(confirmation, '/confirm-email/');
  t.ok(link.startsWith('http://app.example.test/confirm-email/'), 'link on SERVICE_APP_URL');
  const token = tokenOf(link);
  const row = await app.db.emailChangeRequest.findFirstOrThrow({ where: { userId: carol.id, usedAt: null } });
  t.not(row.tokenHash, token, 'only a hash of the token is stored');
  const sevenDays = Date.now() + 7 * 24 * 60 * 60 * 1000;
  t.ok(Math.abs(row.expiresAt.getTime() - sevenDays) < 60_000, 'valid for seven days');

  const resetAfter = await app.inject({
    method: 'POST',
    url: `/api/v1/auth/password-reset/${resetPath}/`,
    payload: { new_password: 'stolen-account-pw' },
  });
  t.equal(resetAfter.statusCode, 404, 'a reset link sent before the change request is dead');

  t.equal((await confirm(token)).statusCode, 200);
  t.equal(await emailOf(carol.id), 'carol.new@example.test', 'changed once confirmed');
  t.equal((await confirm(token)).statusCode, 404, 'the link works once');
  t.equal((await confirm('not-a-real-token')).statusCode, 404);
  t.notOk(
    logs.some((line) => line.includes(token)),
    'the token never reaches the log',
  );
});

t.test('a taken address is answered like a free one, and no link is sent to it', async (t) => {
  const outbox = (to: string) => app.db.emailOutbox.count({ where: { toAddress: to } });
  const [bobBefore, carolBefore] = [await outbox(bob.email), await outbox('carol.new@example.test')];
  const taken = await patchSettings({ email: bob.email, current_password: 'carol-password-1' });
  const free = await patchSettings({ email: 'carol.third@example.test', current_password: 'carol-password-1' });
  t.equal(taken.statusCode, 200);
  t.same(json(taken), json(free), 'identical answers');
  t.equal(await outbox(bob.email), bobBefore, 'nothing queued to the taken address');
  t.equal(await outbox('carol.third@example.test'), 1, 'the free address gets its link');
  t.equal(await outbox('carol.new@example.test'), carolBefore + 2, 'the current address is told both times');
  t.equal(await emailOf(bob.id), 'bob@example.test');
  t.equal(await app.db.emailChangeRequest.count({ where: { newEmail: bob.email } }), 0);
});
