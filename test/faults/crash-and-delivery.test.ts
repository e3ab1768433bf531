// Drills on the built server as a process: SIGKILL mid-send and mid-webhook, an SMTP server that disappears, a webhook that hangs.
import t from 'tap';
import pg from 'pg';
import { createTestDatabase } from '../helpers/database.js';
import { startMailbox } from '../helpers/mailbox.js';
import { apiClient, killGroup, startServer, stop, until, type Started } from '../helpers/server.js';
import { startWebhookTarget } from '../automations/webhook-target.js';
import { ADMIN } from '../helpers/fixtures.js';
import { TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { JOBS } from '../../src/jobs/queue.js';
import { makeDue, makeRunDue } from '../helpers/jobs.js';

const database = await createTestDatabase();
t.teardown(() => database.drop());
const sql = new pg.Client({ connectionString: database.url });
await sql.connect();
t.teardown(() => sql.end());
const mailbox = await startMailbox(t);
const target = await startWebhookTarget(t);
const env = {
  DATABASE_URL: database.url,
  JWT_SECRET: 'crash-drill-jwt-secret-0123456789-abcdef',
  SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
  EMAIL_ENCRYPTION_KEY: TEST_EMAIL_KEY,
  EMAIL_SMTP_ALLOW_PRIVATE: 'true',
  AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true',
  OUTBOX_POLL_INTERVAL_MS: '100',
  // The jobs of a worker whose process died are released this long after they were locked, and its automation runs'
  // leases last as long (default 60).
  JOB_RECOVERY_SECONDS: '3',
};

/** The job queue's workers holding jobs: after a SIGKILL, those of the dead process (their locks outlive it). */
const lockingWorkers = async () =>
  (await sql.query<{ locked_by: string }>('SELECT DISTINCT locked_by FROM graphile_worker.jobs WHERE locked_by IS NOT NULL')).rows.map(
    (row) => row.locked_by,
  );

const messageIdOf = (raw: string) => /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(raw)?.[1];

let server: Started = await startServer(env);
t.teardown(() => killGroup(server));
// `server` changes at the restart: each call goes to the current one.
const call = (method: string, path: string, body?: unknown, access?: string) => apiClient(server)(method, path, body, access);

// Scenery (outside any test: tap closes the file's root test at its first assertion once nothing else is queued).
const expect201 = (res: { status: number; body: unknown }, what: string) => {
  if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
};
expect201(
  await call('POST', '/setup/', {
    setup_token: TEST_SETUP_TOKEN,
    ...ADMIN,
    organization_name: 'Acme',
    organization_slug: 'acme',
    smtp: mailbox.smtpConfig(),
  }),
  'setup',
);
const signIn = async () =>
  (await call('POST', '/auth/token/', { username: ADMIN.username, password: ADMIN.password })).body.access as string;
let access = await signIn();
const org = `/organizations/${(await call('GET', '/auth/me/', undefined, access)).body.organizations[0].id}`;
expect201(
  await call(
    'POST',
    `${org}/automations/`,
    { name: 'hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: target.url } },
    access,
  ),
  'automation',
);

t.test(
  'SIGKILL while an email is in DATA and a webhook is waiting: after a restart both complete, the email with the same Message-ID',
  async (t) => {
    mailbox.stall = true;
    target.respondWith = [0];
    t.equal((await call('POST', `${org}/invitations/`, { email: 'crash@example.test', role: 'member' }, access)).status, 201);
    t.equal((await call('POST', `${org}/companies/`, { name: 'Crash Ltd' }, access)).status, 201);
    await until('the email to be in flight', async () => mailbox.held.length > 0);
    await until('the webhook to be in flight', async () => target.requests.length > 0);

    killGroup(server);
    await until('the process to be gone', async () => server.child.exitCode !== null || server.child.signalCode !== null);
    const runsAfterKill = await sql.query(`SELECT status, run_at > now() AS leased FROM automation_runs`);
    t.same(runsAfterKill.rows, [{ status: 'running', leased: true }], 'the run was running when the process died, under its lease');
    const outboxAfterKill = await sql.query(`SELECT status, attempts FROM email_outbox`);
    t.same(outboxAfterKill.rows, [{ status: 'pending', attempts: 1 }], 'the email was being sent, not recorded as sent');
    const deadWorkers = await lockingWorkers();
    const locked = await sql.query(`SELECT key FROM graphile_worker.jobs WHERE locked_by IS NOT NULL ORDER BY key`);
    t.same(
      locked.rows.map((row) => row.key.split(':')[0]),
      [JOBS.email.task],
      "the email's job stays locked by the dead process (the run has no job: its lease runs out instead)",
    );

    mailbox.stall = false;
    // The new process's liveness sweep finds nobody holding the dead workers' proof of life and releases their jobs.
    server = await startServer(env);
    await until('the dead workers to hold no job', async () => {
      const holders = await lockingWorkers();
      return !holders.some((worker) => deadWorkers.includes(worker));
    });
    const delivered = await mailbox.waitForTo('crash@example.test', 30_000);
    t.equal(messageIdOf(delivered.raw), messageIdOf(mailbox.held[0]!), 'the retry carries the Message-ID of the interrupted attempt');
    t.ok(messageIdOf(delivered.raw), 'a Message-ID is set');
    await target.waitForRequests(2, 30_000);
    t.equal(
      target.requests[1]!.headers['x-webhook-delivery'],
      target.requests[0]!.headers['x-webhook-delivery'],
      'the same delivery retried',
    );
    const run = await until('the run to end', async () => {
      const { rows } = await sql.query<{ status: string }>(`SELECT status FROM automation_runs`);
      return ['success', 'failed'].includes(rows[0]!.status) && rows[0];
    });
    t.equal(run.status, 'success');
    // Recorded right after the server's answer.
    await until(
      'the email to be recorded as sent',
      async () => (await sql.query(`SELECT 1 FROM email_outbox WHERE status = 'sent'`)).rowCount === 1,
    );
    t.same(
      (await sql.query(`SELECT status, attempts FROM email_outbox`)).rows,
      [{ status: 'sent', attempts: 2 }],
      'sent on the second attempt',
    );
  },
);

t.test('an SMTP server that disappears: retried with growing backoff, then failed with a readable error', async (t) => {
  await mailbox.close();
  access = await signIn();
  t.equal((await call('POST', `${org}/invitations/`, { email: 'nobody-home@example.test', role: 'member' }, access)).status, 201);
  const delays: number[] = [];
  let final: { status: string; last_error: string; attempts: number } | undefined;
  for (let attempt = 1; attempt <= JOBS.email.attempts && !final; attempt += 1) {
    // The attempt's outcome on the row, and its job once released: the wait graphile-worker chose for the retry.
    const row = await until(`attempt ${attempt}`, async () => {
      const { rows } = await sql.query(
        `SELECT o.id, o.status, o.attempts, o.last_error, extract(epoch FROM j.run_at - now()) AS wait
         FROM email_outbox o LEFT JOIN graphile_worker.jobs j ON j.key = '${JOBS.email.task}:' || o.id
         WHERE o.to_address = 'nobody-home@example.test' AND o.attempts = $1 AND o.last_error IS NOT NULL
           AND (o.status = 'failed' OR (j.id IS NOT NULL AND j.locked_at IS NULL))`,
        [attempt],
      );
      return rows[0] as { id: string; status: string; attempts: number; last_error: string; wait: number } | undefined;
    });
    if (row.status === 'failed') final = row;
    else {
      delays.push(Number(row.wait));
      // Time passes: the next attempt is due now. last_error is cleared so that the attempt's own outcome is seen.
      await sql.query(`UPDATE email_outbox SET last_error = NULL WHERE id = $1 AND attempts = $2`, [row.id, attempt]);
      await makeDue(sql, JOBS.email, row.id);
    }
  }
  final ??= await until('the row to fail', async () => {
    const { rows } = await sql.query(
      `SELECT status, attempts, last_error FROM email_outbox WHERE to_address = 'nobody-home@example.test' AND status = 'failed'`,
    );
    return rows[0];
  });
  t.equal(final!.status, 'failed', 'ends failed');
  t.match(final!.last_error, /connect|ECONNREFUSED|refused/i, `a readable error: ${final!.last_error}`);
  t.ok(delays.length >= 4, `retried (${delays.length} waits)`);
  t.ok(
    delays.every((delay, i) => i === 0 || delay > delays[i - 1]!),
    `the waits grow: ${delays.map((d) => Math.round(d)).join(', ')} s`,
  );
});

t.test('a webhook target that never answers is cut at its timeout; the run ends failed after its retries', async (t) => {
  target.respondWith = [0, 0, 0];
  const before = target.requests.length;
  t.equal((await call('POST', `${org}/companies/`, { name: 'Hang Ltd' }, access)).status, 201);
  const runId = await until('the run', async () => {
    const { rows } = await sql.query<{ id: string }>(`SELECT r.id FROM automation_runs r WHERE r.payload::text LIKE '%Hang Ltd%'`);
    return rows[0]?.id;
  });
  let run: { status: string; error_message: string | null; attempts: number } | undefined;
  for (let attempt = 1; attempt <= 3; attempt += 1) {
    const started = Date.now();
    run = await until(`attempt ${attempt} to be cut`, async () => {
      const { rows } = await sql.query(
        `SELECT status, error_message, attempts FROM automation_runs WHERE id = $1 AND attempts = $2 AND status <> 'running'`,
        [runId, attempt],
      );
      return rows[0];
    });
    t.ok(Date.now() - started < 15_000, `attempt ${attempt} ended within the timeout (and the poll)`);
    t.match(run!.error_message, /timed out after 5 s/);
    if (run!.status === 'queued') await makeRunDue(sql, runId);
  }
  t.equal(run!.status, 'failed', 'failed after three attempts, never stuck in running');
  t.equal(target.requests.length - before, 3);
  t.equal(
    (await sql.query(`SELECT 1 FROM automation_runs WHERE id = $1 AND status IN ('queued', 'running')`, [runId])).rowCount,
    0,
    'nothing left for a worker to claim',
  );
  t.equal(await stop(server), 0, 'clean exit');
});
