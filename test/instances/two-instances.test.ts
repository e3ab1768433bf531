// Two server processes on one database and one Redis: limits are shared, every email and webhook run happens once.
import t from 'tap';
import pg from 'pg';
import { createTestDatabase } from '../helpers/database.js';
import { startMailbox } from '../helpers/mailbox.js';
import { startTestRedis } from '../helpers/redis.js';
import { apiClient, killGroup, startServer, stop, type Started } from '../helpers/server.js';
import { startWebhookTarget } from '../automations/webhook-target.js';
import { ADMIN } from '../helpers/fixtures.js';
import { TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';

const COMPANIES = 150;
const INVITATIONS = 100;

const redis = await startTestRedis(t);
if (redis) {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const mailbox = await startMailbox(t);
  const target = await startWebhookTarget(t);
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    JWT_SECRET: 'two-instances-jwt-secret-0123456789-abcdef',
    SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
    EMAIL_ENCRYPTION_KEY: TEST_EMAIL_KEY,
    EMAIL_SMTP_ALLOW_PRIVATE: 'true',
    AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true',
    AUTOMATION_EMAILS_PER_HOUR: '100000',
    RATE_LIMIT_INVITATIONS_PER_DAY: '100000',
    RATE_LIMIT_TOKEN_PER_MINUTE: '4',
    OUTBOX_POLL_INTERVAL_MS: '100',
  };
  const servers: Started[] = [];
  for (let i = 0; i < 2; i += 1) {
    const server = await startServer(env);
    t.teardown(() => killGroup(server));
    servers.push(server);
  }
  const [a, b] = servers as [Started, Started];
  const call = (server: Started, method: string, path: string, body?: unknown, access?: string) =>
    apiClient(server)(method, path, body, access);

  t.test('a limit is counted once across both processes', async (t) => {
    const statuses = [];
    for (let i = 0; i < 5; i += 1) {
      statuses.push((await call(i % 2 === 0 ? a : b, 'POST', '/auth/token/', { username: 'mallory', password: 'guess' })).status);
    }
    t.same(statuses, [401, 401, 401, 401, 429], 'the fifth wrong sign-in is refused, whichever process gets it');
  });

  t.test('with two processes, each outbox email is sent once and each automation run executed once', async (t) => {
    t.equal(
      (
        await call(a, 'POST', '/setup/', {
          setup_token: TEST_SETUP_TOKEN,
          ...ADMIN,
          organization_name: 'Acme',
          organization_slug: 'acme',
          smtp: mailbox.smtpConfig(),
        })
      ).status,
      201,
    );
    const tokens = (await call(b, 'POST', '/auth/token/', { username: ADMIN.username, password: ADMIN.password })).body;
    const me = (await call(a, 'GET', '/auth/me/', undefined, tokens.access)).body;
    const org = `/organizations/${me.organizations[0].id}`;
    for (const rule of [
      { name: 'hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: target.url } },
      {
        name: 'mail',
        trigger: 'company.created',
        action_type: 'send_email',
        action_config: { to: [ADMIN.email], subject: 'New company', body: 'A company was created.' },
      },
    ]) {
      t.equal((await call(a, 'POST', `${org}/automations/`, rule, tokens.access)).status, 201, rule.name);
    }
    // Writes alternate between the processes, ten at a time.
    const creates = Array.from(
      { length: COMPANIES },
      (_, i) => () => call(i % 2 ? a : b, 'POST', `${org}/companies/`, { name: `Company ${i}` }, tokens.access),
    );
    const invites = Array.from(
      { length: INVITATIONS },
      (_, i) => () =>
        call(i % 2 ? b : a, 'POST', `${org}/invitations/`, { email: `invitee${i}@example.test`, role: 'member' }, tokens.access),
    );
    const work = [...creates, ...invites];
    const statuses: number[] = [];
    for (let i = 0; i < work.length; i += 10) {
      statuses.push(...(await Promise.all(work.slice(i, i + 10).map((run) => run()))).map((r) => r.status));
    }
    t.ok(
      statuses.every((status) => status === 201),
      'every write answered 201',
    );

    await target.waitForRequests(COMPANIES, 120_000);
    const expectedMails = COMPANIES + INVITATIONS;
    await mailbox.waitFor(() => mailbox.messages.length >= expectedMails, 120_000);
    // Both workers keep polling for a while: a duplicate would show up now.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const deliveries = target.requests.map((r) => String(r.headers['x-webhook-delivery']));
    t.equal(target.requests.length, COMPANIES, `${COMPANIES} webhook calls`);
    t.equal(new Set(deliveries).size, COMPANIES, 'one call per run');
    const automationMails = mailbox.messages.filter((m) => m.subject === 'New company');
    t.equal(automationMails.length, COMPANIES, `${COMPANIES} automation emails`);
    const invitationMails = mailbox.messages.filter((m) => m.to.some((to) => to.startsWith('invitee')));
    t.equal(invitationMails.length, INVITATIONS, `${INVITATIONS} invitation emails`);
    t.equal(new Set(invitationMails.map((m) => m.to.join(','))).size, INVITATIONS, 'one email per invitation');

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    t.teardown(() => client.end());
    const runs = await client.query<{ status: string; count: string }>('SELECT status, count(*) FROM automation_runs GROUP BY status');
    t.same(Object.fromEntries(runs.rows.map((r) => [r.status, Number(r.count)])), { success: COMPANIES * 2 }, 'every run succeeded once');
    const outbox = await client.query<{ status: string; attempts: number; count: string }>(
      'SELECT status, attempts, count(*) FROM email_outbox GROUP BY status, attempts',
    );
    t.same(
      outbox.rows.map((r) => [r.status, r.attempts, Number(r.count)]),
      [['sent', 1, INVITATIONS]],
      'every outbox row sent on its first attempt',
    );
  });

  t.test('both processes drain on SIGTERM', async (t) => {
    t.same(await Promise.all([stop(a), stop(b)]), [0, 0]);
  });
}
