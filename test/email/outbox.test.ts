// The email outbox: transactional enqueueing with its job, the right SMTP account, retries with the queue's backoff,
// failures, each message sent once by concurrent workers, and no body or link in the job queue.
import t, { type Test } from 'tap';
import { JOBS, runDueJobs } from '../../src/jobs/queue.js';
import { emailAccountColumns, type SmtpAccountInput } from '../../src/email/smtp-account-input.js';
import { enqueueEmail, outboxTasks } from '../../src/email/outbox.js';
import { buildTestApp, TEST_EMAIL_KEY } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { backoffMs, jobOf, makeDue, removeJob, storedJobOf } from '../helpers/jobs.js';
import { startMailbox, type Mailbox } from '../helpers/mailbox.js';

// The app runs no job runner of its own: this file runs the due jobs itself, step by step.
const { app, logs, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const key = Buffer.from(TEST_EMAIL_KEY, 'base64');
const fallback = await startMailbox(t);
const orgMailbox = await startMailbox(t, { username: 'org-sender', password: 'org-smtp-password' });
const refusing = await startMailbox(t, { username: 'refusing-sender', password: 'refusing-password', rejectMessages: true });
const WRONG_PASSWORD = 'not-the-org-smtp-password';

const { organizationId } = await setupInstallation(app, fallback);

/** Sends every due outbox job (as a worker of the job queue would), with the given encryption key; how many ran. */
const runJobs = (encryptionKey = key) =>
  runDueJobs(databaseUrl, outboxTasks({ db: app.db, encryptionKey, allowPrivateHosts: true, log: app.log }), app.log);
const runBatch = () => runJobs();
const jobOfRow = (id: string) => jobOf(app.pg, JOBS.email, id);
const dueNow = (id: string, attempts?: number) => makeDue(app.pg, JOBS.email, id, { attempts });
let sequence = 0;
const address = (label: string) => {
  sequence += 1;
  return `${label}-${sequence}@example.test`;
};

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
  const queued = await rowTo(to);
  const stored = await storedJobOf(app.pg, JOBS.email, queued.id);
  t.same(stored?.payload, { id: queued.id }, 'the job carries the row id and nothing else');
  t.notMatch(JSON.stringify(stored), 'Secret link', 'no body in the job queue');
  t.equal(stored?.max_attempts, JOBS.email.attempts + 1, 'its attempts, plus one that can only record an interrupted delivery');
  t.equal(await runBatch(), 1);
  const mail = await fallback.waitForTo(to);
  t.equal(mail.authUser, fallback.username);
  t.equal(mail.subject, `Hello ${to}`);
  t.match(mail.text, `Secret link for ${to}`);
  t.match(mail.html, `<p>Secret link for ${to}</p>`);
  const row = await rowTo(to);
  t.match(row, { status: 'sent', attempts: 1, textBody: null, htmlBody: null, lastError: null });
  t.ok(row.sentAt instanceof Date);
  t.equal(await jobOfRow(row.id), undefined, 'the job is done (graphile-worker deletes completed jobs)');
  t.equal(await runBatch(), 0, 'nothing left to run');
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

/**
 * Runs the due jobs and returns when the row's next attempt is due, measured from the run (graphile-worker's clock
 * is the database's, on this machine).
 */
async function runAndMeasureRetry(t: Test, id: string, attempt: number) {
  const before = Date.now();
  t.equal(await runBatch(), 1);
  const after = Date.now();
  const job = await jobOfRow(id);
  t.ok(job, 'the job waits for its retry');
  t.equal(job?.attempts, attempt);
  t.match(job?.last_error, /authentication/, "graphile-worker keeps the attempt's error");
  const dueAt = job!.run_at.getTime();
  // exp(attempt) seconds after the failure, which happened during the run.
  t.ok(
    dueAt >= before + backoffMs(attempt) - 250 && dueAt <= after + backoffMs(attempt) + 250,
    `retry ${attempt} due ~${Math.round(backoffMs(attempt))} ms after the failure (${dueAt - before} ms after the run started)`,
  );
}

t.test("a wrong SMTP password: retried with the queue's growing backoff, recorded without the password, finally failed", async (t) => {
  await useOrganizationAccount(orgMailbox, { password: WRONG_PASSWORD });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('wrong-password');
  await enqueue(to, { organizationId });
  const { id } = await rowTo(to);

  await runAndMeasureRetry(t, id, 1);
  let row = await rowTo(to);
  t.match(row, { status: 'pending', attempts: 1, lastError: /authentication/ });
  t.notMatch(row.lastError, WRONG_PASSWORD);
  t.ok(row.textBody, 'the body is kept for the next attempt');
  t.equal(await runBatch(), 0, 'not retried before it is due');

  await dueNow(id);
  await runAndMeasureRetry(t, id, 2);
  row = await rowTo(to);
  t.match(row, { status: 'pending', attempts: 2 });
  t.notMatch(JSON.stringify(await storedJobOf(app.pg, JOBS.email, id)), WRONG_PASSWORD, 'no password in the job queue either');

  // Skip to the last allowed attempt.
  const last = JOBS.email.attempts;
  await app.db.emailOutbox.update({ where: { id }, data: { attempts: last - 1 } });
  await dueNow(id, last - 1);
  t.equal(await runBatch(), 1);
  t.match(await rowTo(to), { status: 'failed', attempts: last, lastError: /authentication/, textBody: null, htmlBody: null, sentAt: null });
  t.equal(await jobOfRow(id), undefined, 'a final failure completes the job: nothing stays behind in the queue');
  t.notOk(orgMailbox.messages.some((m) => m.to.includes(to)));
});

t.test('an unreachable SMTP server is retried', async (t) => {
  await useOrganizationAccount(orgMailbox, { port: 9 });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId } }));
  const to = address('unreachable');
  await enqueue(to, { organizationId });
  await runBatch();
  const row = await rowTo(to);
  t.match(row, { status: 'pending', attempts: 1, lastError: /connection/ });
  t.ok((await jobOf(app.pg, JOBS.email, row.id))?.run_at, 'its retry is scheduled');
  // Its retry would come due during the later tests.
  await removeJob(app.pg, JOBS.email, row.id);
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
  await runJobs(Buffer.alloc(32, 9));
  const row = await rowTo(to);
  t.match(row, { status: 'pending', attempts: 1, lastError: /cannot be decrypted/ });
  await dueNow(row.id);
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
  // Every attempt begun and never reported back: the job's extra one only records it.
  const attempts = JOBS.email.attempts;
  await app.db.emailOutbox.updateMany({ where: { toAddress: to }, data: { attempts } });
  await dueNow((await rowTo(to)).id, attempts);
  await runBatch();
  t.match(await rowTo(to), { status: 'failed', attempts: attempts + 1, lastError: /interrupted/ });
  t.notOk(fallback.messages.some((m) => m.to.includes(to)));
});

t.test('concurrent workers take each job once: every message is sent exactly once', async (t) => {
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
