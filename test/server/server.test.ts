// Starts the built server as a real process with `npm start`: readiness, migrations, embedded database, clean SIGTERM.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.js';
import { enqueueEmail } from '../../src/email/outbox.js';
import { buildTestApp, TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { ADMIN, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { startWebhookTarget } from '../automations/webhook-target.js';
import { killGroup, startServer, stop } from '../helpers/server.js';

// Five server starts, each migrating an empty database (two of them an embedded cluster), beside another file of
// server starts (tap runs two files at once): more than the default 240 s on a loaded 2-core CI machine.
t.setTimeout(600_000);

t.test('npm start on DATABASE_URL: ready, serves the API and the docs, exits 0 on SIGTERM', async (t) => {
  const database = await createTestDatabase({ empty: true });
  t.teardown(() => database.drop());
  const server = await startServer({ DATABASE_URL: database.url, NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) });
  t.teardown(() => killGroup(server));

  t.equal((await fetch(`${server.origin}/healthz`)).status, 200);
  t.equal((await fetch(`${server.origin}/docs`)).status, 200, 'Swagger UI');
  const setup = await fetch(`${server.origin}/api/v1/setup/`).then((r) => r.json());
  t.same(setup, { available: false }, 'no SERVICE_SETUP_TOKEN: setup unavailable');
  t.match(server.output(), /Applied migrations: \d+_init/, 'the empty database was migrated at start');

  t.equal(await stop(server), 0, 'clean exit');
});

t.test('without DATABASE_URL: embedded PostgreSQL in DATA_DIR, data kept across restarts, stopped on shutdown', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crm-server-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATA_DIR: dataDir, SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN };

  const first = await startServer(env);
  t.teardown(() => killGroup(first));
  t.match(first.output(), /Swagger UI: http:\/\/127\.0\.0\.1:\d+\/docs/);
  t.match(first.output(), /First-run setup is open/);
  t.notMatch(first.output(), TEST_SETUP_TOKEN, 'the setup token is never printed');
  const res = await fetch(`${first.origin}/api/v1/setup/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      setup_token: TEST_SETUP_TOKEN,
      username: 'admin',
      email: 'admin@example.test',
      password: 'correct-horse-battery',
      organization_name: 'Acme',
      organization_slug: 'acme',
    }),
  });
  t.equal(res.status, 201, 'setup completed');
  t.equal(await stop(first), 0, 'clean exit');
  t.notOk(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'embedded PostgreSQL stopped');

  const second = await startServer(env);
  t.teardown(() => killGroup(second));
  const setup = await fetch(`${second.origin}/api/v1/setup/`).then((r) => r.json());
  t.same(setup, { available: false }, 'the setup of the first run is still there');
  const token = await fetch(`${second.origin}/api/v1/auth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'correct-horse-battery' }),
  });
  t.equal(token.status, 200, 'the admin can sign in after a restart (JWT secret and data kept in DATA_DIR)');
  t.equal(await stop(second), 0, 'clean exit');
});

t.test(
  'WEB_CONCURRENCY=2: migrated once, two processes on one port, each email and automation run handled once, SIGTERM drains all',
  async (t) => {
    // Scenery through an in-process app without job runners of its own, so the server processes do the work.
    const { app, databaseUrl } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' }, { backgroundWorkers: false });
    const mailbox = await startMailbox(t);
    const target = await startWebhookTarget(t);
    const { admin, organizationId } = await setupInstallation(app, mailbox);
    const orgPath = `/api/v1/organizations/${organizationId}`;
    const rule = await app.inject({
      method: 'POST',
      url: `${orgPath}/automations/`,
      headers: admin.headers,
      payload: { name: 'hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: target.url } },
    });
    t.equal(rule.statusCode, 201);
    const EMAILS = 30;
    for (let n = 0; n < EMAILS; n++) {
      await app.db.$transaction((tx) =>
        enqueueEmail(
          tx,
          { to: 'queue@example.test', subject: `Queued ${n}`, text: 'Hello', html: '<p>Hello</p>' },
          { organizationId: null, requireAccount: true },
        ),
      );
    }

    const server = await startServer({
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      JWT_SECRET: 'x'.repeat(40),
      EMAIL_ENCRYPTION_KEY: TEST_EMAIL_KEY,
      WEB_CONCURRENCY: '2',
      OUTBOX_POLL_INTERVAL_MS: '20',
      AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    t.teardown(() => killGroup(server));
    t.match(server.output(), /listening on http:\/\/127\.0\.0\.1:\d+ \(2 processes\)/);
    t.equal(server.output().match(/Applied migrations|Workspace CRM API listening/g)?.length, 1, 'one start-up, no second migration run');

    const signIn = await fetch(`${server.origin}/api/v1/auth/token/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: ADMIN.username, password: ADMIN.password }),
    });
    const headers = { authorization: `Bearer ${((await signIn.json()) as { access: string }).access}`, 'content-type': 'application/json' };
    const COMPANIES = 30;
    const companies = await Promise.all(
      Array.from({ length: COMPANIES }, (_, n) =>
        fetch(`${server.origin}${orgPath}/companies/`, { method: 'POST', headers, body: JSON.stringify({ name: `Cluster ${n}` }) }).then(
          async (res) => (res.status === 201 ? ((await res.json()) as { id: string }).id : `status ${res.status}`),
        ),
      ),
    );
    await target.waitForRequests(COMPANIES, 20_000);
    const queued = (
      await Promise.all(Array.from({ length: EMAILS }, (_, n) => mailbox.waitFor((mail) => mail.subject === `Queued ${n}`, 20_000)))
    ).length;
    t.equal(queued, EMAILS);

    // Both kinds of work are finished in the database: nothing left to claim, so nothing can arrive twice later.
    const deadline = Date.now() + 20_000;
    const pending = async () =>
      (
        await app.pg.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM email_outbox WHERE status <> 'sent')
                + (SELECT count(*) FROM automation_runs WHERE status <> 'success') AS n`,
        )
      ).rows[0]!.n;
    while (Number(await pending()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(Number(await pending()), 0, 'every email sent, every run succeeded');
    const delivered = target.requests.map((request) => (JSON.parse(request.body) as { data: { id: string } }).data.id);
    t.same(delivered.sort(), [...companies].sort(), 'one webhook per company, none twice');
    t.same(
      mailbox.messages
        .filter((mail) => mail.subject.startsWith('Queued '))
        .map((mail) => mail.subject)
        .sort(),
      Array.from({ length: EMAILS }, (_, n) => `Queued ${n}`).sort(),
      'each queued email once',
    );
    const attempts = await app.pg.query<{ attempts: number }>('SELECT DISTINCT attempts FROM automation_runs');
    t.same(attempts.rows, [{ attempts: 1 }], 'each run claimed once');

    t.equal(await stop(server), 0, 'the supervisor exits 0 once both processes have drained');
    t.equal(
      await fetch(`${server.origin}/healthz`).then(
        (r) => r.status,
        () => 0,
      ),
      0,
      'nothing listens any more',
    );
  },
);
