// Reads on a real streaming replica that lags by three seconds (recovery_min_apply_delay): GETs go to it, yet a user
// always reads their own writes; a replica that is stopped is skipped without an error, and used again once back.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';

// Several processes start here (databases, PgBouncer, HAProxy, instances): room for a slow, loaded machine.
t.setTimeout(600_000);
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { installJobQueue } from '../../src/jobs/install.js';
import { startReplica } from '../../scripts/stack/replica.js';
import { TEST_SETUP_TOKEN } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';

const APPLY_DELAY_MS = 3000;
const dataDir = await mkdtemp(path.join(tmpdir(), 'crm-replica-test-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const primary = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'primary') });
t.teardown(primary.stop);
await applyMigrations(primary.url);
await installJobQueue(primary.url);
const replica = await startReplica({
  primaryUrl: primary.url,
  primaryDataDir: path.join(dataDir, 'primary'),
  dir: path.join(dataDir, 'replica'),
  applyDelayMs: APPLY_DELAY_MS,
});
t.teardown(replica.stop);

const logs: string[] = [];
const app = await buildApp(
  loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: primary.url,
    DATABASE_REPLICA_URL: replica.url,
    JWT_SECRET: 'test-jwt-secret-0123456789-0123456789-abcdef',
    SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
    RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE: '100000',
    RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000',
  }),
  { logStream: { write: (line: string) => void logs.push(line) } },
);
await app.ready();
t.teardown(() => app.close());
const { admin, organizationId } = await setupInstallation(app);
const viewer = await createUser(app, { username: 'vera', membership: { organizationId, role: 'viewer' } });
const companies = `/api/v1/organizations/${organizationId}/companies/`;

/** Waits until the replica has caught up with everything written so far (the apply delay passes). */
const caughtUp = async () => {
  await sleep(APPLY_DELAY_MS + 300);
  await app.inject({ method: 'GET', url: '/healthz' });
};

t.test('a user reads their own writes at once; another reads the lagging replica', async (t) => {
  await caughtUp();
  for (let i = 0; i < 5; i++) {
    const created = await app.inject({ method: 'POST', url: companies, headers: admin.headers, payload: { name: `Fresh ${i}` } });
    t.equal(created.statusCode, 201);
    const id = created.json().id;
    const mine = await app.inject({ method: 'GET', url: companies, headers: admin.headers });
    t.ok(
      mine.json().some((c: { id: string }) => c.id === id),
      `the writer lists company ${i} at once`,
    );
    const one = await app.inject({ method: 'GET', url: `${companies}${id}/`, headers: admin.headers });
    t.equal(one.statusCode, 200, 'and reads it');
    const renamed = await app.inject({
      method: 'PATCH',
      url: `${companies}${id}/`,
      headers: admin.headers,
      payload: { name: `Renamed ${i}` },
    });
    t.equal(renamed.statusCode, 200);
    t.equal(
      (await app.inject({ method: 'GET', url: `${companies}${id}/`, headers: admin.headers })).json().name,
      `Renamed ${i}`,
      'never an older state',
    );
  }
  // Vera wrote nothing: her reads go to the replica, seconds behind, which proves where reads go.
  const probe = (await app.inject({ method: 'POST', url: companies, headers: admin.headers, payload: { name: 'Probe' } })).json();
  const theirs = await app.inject({ method: 'GET', url: companies, headers: viewer.headers });
  t.equal(theirs.statusCode, 200);
  t.notOk(
    theirs.json().some((c: { id: string }) => c.id === probe.id),
    'the replica has not applied the newest company yet',
  );
  t.equal(
    (await app.inject({ method: 'GET', url: `${companies}${probe.id}/`, headers: viewer.headers })).statusCode,
    404,
    'nor can she read it',
  );
  await caughtUp();
  t.equal((await app.inject({ method: 'GET', url: companies, headers: viewer.headers })).json().length, 6, 'after the delay it has');
});

t.test('a stopped replica is skipped, never an error, and used again when back', async (t) => {
  await replica.stop();
  for (let i = 0; i < 20; i++) {
    const res = await app.inject({ method: 'GET', url: companies, headers: viewer.headers });
    t.equal(res.statusCode, 200, `read ${i} with the replica down`);
    t.equal(res.json().length, 6, 'from the primary');
    await sleep(25);
  }
  const one = await app.inject({ method: 'GET', url: `${companies}?search=renamed`, headers: viewer.headers });
  t.equal(one.statusCode, 200);
  t.ok(
    logs.some((line) => line.includes('read replica skipped')),
    'the switch is logged',
  );

  await replica.start();
  await app.inject({ method: 'POST', url: companies, headers: admin.headers, payload: { name: 'After restart' } });
  // Back in use: Vera (no writes) again sees the replica's lagging state first, then the new company.
  let sawLag = false;
  for (let i = 0; i < 40 && !sawLag; i++) {
    const listed = await app.inject({ method: 'GET', url: companies, headers: viewer.headers });
    sawLag = listed.json().length === 6;
    await sleep(50);
  }
  t.ok(sawLag, 'reads went back to the replica');
  await caughtUp();
  t.equal((await app.inject({ method: 'GET', url: companies, headers: viewer.headers })).json().length, 7);
});
