// Starts the built server as a real process with `npm start`: readiness, migrations, embedded database, clean SIGTERM.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.js';
import { TEST_SETUP_TOKEN } from '../helpers/app.js';
import { killGroup, startServer, stop } from '../helpers/server.js';

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
      setup_token: TEST_SETUP_TOKEN, username: 'admin', email: 'admin@example.test', password: 'correct-horse-battery',
      organization_name: 'Acme', organization_slug: 'acme',
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
