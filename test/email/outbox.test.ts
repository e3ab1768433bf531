// The email outbox: transactional enqueueing, the right SMTP account, retries with backoff, failures, exactly-once claims.
import t from 'tap';
import { emailAccountColumns, type SmtpAccountInput } from '../../src/modules/email/smtp-account-input.js';
import { enqueueEmail, processOutboxBatch } from '../../src/modules/email/outbox.js';
import { buildTestApp, TEST_EMAIL_KEY } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startMailbox, type Mailbox } from '../helpers/mailbox.js';

// The app's own worker polls once at start and then sleeps for an hour: this file drives the batches itself.
const { app, logs } = await buildTestApp(t, { OUTBOX_POLL_INTERVAL_MS: '3600000' });
const key = Buffer.from(TEST_EMAIL_KEY, 'base64');
const fallback = await startMailbox(t);
const orgMailbox = await startMailbox(t, { username: 'org-sender', password: 'org-smtp-password' });
const refusing = await startMailbox(t, { username: 'refusing-sender', password: 'refusing-password', rejectMessages: true });
const WRONG_PASSWORD = 'not-the-org-smtp-password';

const { organizationId } = await setupInstallation(app, fallback);

const runBatch = () => processOutboxBatch(app.db, key, app.log, true);
let sequence = 0;
const address = (label: string) => `${label}-${(sequence += 1)}@example.test`;

function enqueue(to: string, options: { organizationId: string | null; requireAccount?: boolean; installationOnly?: boolean }) {
  return app.db.$transaction((tx) =>
    enqueueEmail(
      tx,
      { to, subject: `Hello ${to}`, text: `Secret link for ${to}`, html: `<p>Secret link for ${to}</p>` },
      { requireAccount: true, ...options },
    ),
  );
}

const rowTo = (to: string) => app.db.emailOutbox.findFirstOrThrow({ where: { toAddress: to } });

/** Makes an organization-owned default account sending through `mailbox`, replacing the previous one. */
async function useOrganizationAccount(mailbox: Mailbox, overrides: Record<string, unknown> = {}) {
  await app.db.emailAccount.deleteMany({ where: { organizationId } });
  const input = mailbox.smtpConfig({ name: 'Org SMTP', ...overrides }) as unknown as SmtpAccountInput;
  return app.db.emailAccount.create({ data: { ...emailAccountColumns(input, key), organizationId, isDefault: true } });
}

t.test('without its own account a workspace sends through the installation fallback; bodies are wiped once sent', async (t) => {
  const to = address('fallback');
  await enqueue(to, { organizationId });
  t.equal(await runBatch(), 1);
  const mail = await fallback.waitForTo(to);
  t.equal(mail.authUser, fallback.username);
  t.equal(mail.subject, `Hello ${to}`);
  t.match(mail.text, `Secret link for ${to}`);
  t.match(mail.html, `<p>Secret link for ${to}</p>`);
  const row = await rowTo(to);
  t.match(row, { status: 'sent', attempts: 1, textBody: null, htmlBody: null, lastError: null });
  t.ok(row.sentAt instanceof Date);
});

t.test("a workspace's active default account sends its mail; installation-only mail still uses the fallback", async (t) => {
  await useOrganizationAccount(orgMailbox);
  const own = address('own');
  const installation = address('installation');
  await enqueue(own, { organizationId });
  await enqueue(installation, { organizationId, installationOnly: true });
  t.equal(await runBatch(), 2);
  t.equal((await orgMailbox.waitForTo(own)).authUser, 'org-sender');
  t.equal((await fallback.waitForTo(installation)).authUser, fallback.username);
  t.notOk(
    fallback.messages.some((m) => m.to.includes(own)),
    'the fallback did not send the workspace mail',
  );

  await app.db.emailAccount.updateMany({ where: { organizationId }, data: { isActive: false } });
  const inactive = address('inactive');
  await enqueue(inactive, { organizationId });
  await runBatch();
  t.equal((await fallback.waitForTo(inactive)).authUser, fallback.username, 'an inactive default falls back');
  await app.db.emailAccount.deleteMany({ where: { organizationId } });
});

t.test('a rolled-back transaction sends nothing', async (t) => {
  const to = address('rolled-back');
  await t.rejects(
    app.db.$transaction(async (tx) => {
      await enqueueEmail(tx, { to, subject: 'never', text: 'never', html: 'never' }, { organizationId, requireAccount: true });
      throw new Error('the business change failed');
    }),
    { message: 'the business change failed' },
  );
  t.equal(await app.db.emailOutbox.count({ where: { toAddress: to } }), 0);
  t.equal(await runBatch(), 0);
  t.notOk(fallback.messages.some((m) => m.to.includes(to)));
});

t.test('with no usable account: requireAccount refuses with 400, otherwise the row fails at once', async (t) => {
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  t.teardown(() => app.db.installationEmailAccount.updateMany({ data: { isActive: true } }));

  const refused = address('refused');
  await t.rejects(enqueue(refused, { organizationId }), { name: 'ProblemError', status: 400, code: 'email_not_configured' });
  t.equal(await app.db.emailOutbox.count({ where: { toAddress: refused } }), 0);

  const queued = address('queued');
  await enqueue(queued, { organizationId, requireAccount: false });
  t.equal((await rowTo(queued)).emailAccountId, null);
  await runBatch();
  t.match(await rowTo(queued), { status: 'failed', lastError: /no email account/, textBody: null, htmlBody: null });
});

t.test('a wrong SMTP password: retried with growing backoff, recorded without the password, finally failed', async (t) => {
  await useOrganizationAccount(orgMailbox, { password: WRONG_PASSWORD });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('wrong-password');
  await enqueue(to, { organizationId });

  const started = Date.now();
  t.equal(await runBatch(), 1);
  let row = await rowTo(to);
  t.match(row, { status: 'pending', attempts: 1, lastError: /authentication/ });
  t.notMatch(row.lastError, WRONG_PASSWORD);
  t.ok(row.textBody, 'the body is kept for the next attempt');
  const firstDelay = row.nextAttemptAt.getTime() - started;
  t.ok(firstDelay >= 7_000 && firstDelay <= 13_500, `first retry after ~10 s (${firstDelay} ms)`);
  t.equal(await runBatch(), 0, 'not retried before it is due');

  await app.db.emailOutbox.update({ where: { id: row.id }, data: { nextAttemptAt: new Date() } });
  const again = Date.now();
  t.equal(await runBatch(), 1);
  row = await rowTo(to);
  const secondDelay = row.nextAttemptAt.getTime() - again;
  t.match(row, { status: 'pending', attempts: 2 });
  t.ok(secondDelay >= 30_000 && secondDelay <= 50_000, `second retry after ~40 s (${secondDelay} ms)`);

  // Skip to the last allowed attempt.
  await app.db.emailOutbox.update({ where: { id: row.id }, data: { attempts: 5, nextAttemptAt: new Date() } });
  t.equal(await runBatch(), 1);
  t.match(await rowTo(to), { status: 'failed', attempts: 6, lastError: /authentication/, textBody: null, htmlBody: null, sentAt: null });
  t.notOk(orgMailbox.messages.some((m) => m.to.includes(to)));
});

t.test('an unreachable SMTP server is retried', async (t) => {
  await useOrganizationAccount(orgMailbox, { port: 9 });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('unreachable');
  await enqueue(to, { organizationId });
  await runBatch();
  t.match(await rowTo(to), { status: 'pending', attempts: 1, lastError: /connection/ });
});

t.test('a 5xx refusal of the message is permanent: failed at once', async (t) => {
  await useOrganizationAccount(refusing);
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('refused-by-server');
  await enqueue(to, { organizationId });
  t.equal(await runBatch(), 1);
  t.match(await rowTo(to), { status: 'failed', attempts: 1, lastError: /rejected.*550/, textBody: null, htmlBody: null });
  t.equal(refusing.messages.length, 0);
});

t.test('a password that cannot be decrypted (key changed) is recorded and retried', async (t) => {
  const to = address('wrong-key');
  await enqueue(to, { organizationId });
  await processOutboxBatch(app.db, Buffer.alloc(32, 9), app.log, true);
  t.match(await rowTo(to), { status: 'pending', attempts: 1, lastError: /cannot be decrypted/ });
  await app.db.emailOutbox.updateMany({ where: { toAddress: to }, data: { nextAttemptAt: new Date() } });
  await runBatch();
  t.match(await rowTo(to), { status: 'sent', attempts: 2, lastError: null });
  t.ok(await fallback.waitForTo(to));
});

t.test('an account deactivated after queueing is replaced by the current sender', async (t) => {
  const account = await useOrganizationAccount(orgMailbox);
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('deactivated');
  await enqueue(to, { organizationId });
  t.equal((await rowTo(to)).emailAccountId, account.id);
  await app.db.emailAccount.update({ where: { id: account.id }, data: { isActive: false } });
  await runBatch();
  t.equal((await fallback.waitForTo(to)).authUser, fallback.username);
  t.notOk(orgMailbox.messages.some((m) => m.to.includes(to)));
});

t.test('a row whose worker kept dying mid-send is failed without another attempt', async (t) => {
  const to = address('interrupted');
  await enqueue(to, { organizationId });
  await app.db.emailOutbox.updateMany({ where: { toAddress: to }, data: { attempts: 6 } });
  await runBatch();
  t.match(await rowTo(to), { status: 'failed', attempts: 7, lastError: /interrupted/ });
  t.notOk(fallback.messages.some((m) => m.to.includes(to)));
});

t.test('concurrent workers claim each row once: every message is sent exactly once', async (t) => {
  const recipients = Array.from({ length: 25 }, () => address('concurrent'));
  for (const to of recipients) await enqueue(to, { organizationId });
  let handled = 0;
  for (;;) {
    const counts = await Promise.all([runBatch(), runBatch(), runBatch()]);
    const round = counts.reduce((a, b) => a + b, 0);
    if (round === 0) break;
    handled += round;
  }
  t.equal(handled, recipients.length, 'each row handled by one worker');
  for (const to of recipients) {
    t.equal(fallback.messages.filter((m) => m.to.includes(to)).length, 1, `${to} received once`);
  }
  t.equal(await app.db.emailOutbox.count({ where: { toAddress: { in: recipients }, status: 'sent', attempts: 1 } }), recipients.length);
});

t.test('no SMTP password reaches the log', async (t) => {
  t.ok(
    logs.some((line) => line.includes('email delivery failed')),
    'failures are logged',
  );
  for (const secret of [fallback.password, orgMailbox.password, refusing.password, WRONG_PASSWORD]) {
    t.notOk(
      logs.some((line) => line.includes(secret)),
      'not logged',
    );
  }
});
