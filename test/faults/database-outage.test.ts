// Drill: PostgreSQL stops under load. The process answers 503 problem+json (no 500, no hang) and serves again once it is back.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import pg from 'pg';
import { embeddedSharedBuffersMb, startEmbeddedPostgres, type RunningPostgres } from '../../src/db/embedded-postgres.js';
import { killGroup, startServer, stop } from '../helpers/server.js';
import { startForwarder } from '../helpers/tcp-forwarder.js';
import { TEST_SETUP_TOKEN } from '../helpers/app.js';
import { ADMIN } from '../helpers/fixtures.js';

/** No answer may take longer than this, outage or not (the pool's connection timeout is 5 s). */
const ANSWER_WITHIN_MS = 10_000;

const dataDir = mkdtempSync(path.join(tmpdir(), 'crm-outage-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
let database: RunningPostgres = await startEmbeddedPostgres({ dataDir });
t.teardown(() => database.stop());
const portOf = (url: string) => Number(new URL(url).port);
const forwarder = await startForwarder(t, portOf(database.url));
const url = new URL(database.url);
url.port = String(forwarder.port);

const server = await startServer({
  DATABASE_URL: url.toString(),
  SERVICE_SETUP_TOKEN: TEST_SETUP_TOKEN,
  JWT_SECRET: 'outage-jwt-secret-0123456789-0123456789',
});
t.teardown(() => killGroup(server));
if (process.env.DRILL_LOG) t.teardown(() => writeFileSync(process.env.DRILL_LOG!, server.output()));

interface Answer {
  status: number;
  type: string;
  ms: number;
}

async function request(pathname: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`${server.origin}${pathname}`, { ...init, signal: AbortSignal.timeout(ANSWER_WITHIN_MS + 5_000) }).catch(
    () => ({ status: 0, headers: new Headers(), text: async () => '' }) as unknown as Response,
  );
  await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', ms: Date.now() - started };
}

t.test('the embedded server sizes its buffer cache to the host: a quarter of its memory, 128 MB to 8 GB', async (t) => {
  const GIB = 1024 ** 3;
  t.equal(embeddedSharedBuffersMb(24 * GIB), 6144, 'a quarter of 24 GiB');
  t.equal(embeddedSharedBuffersMb(GIB / 4), 128, "PostgreSQL's default on a small host");
  t.equal(embeddedSharedBuffersMb(256 * GIB), 8192, 'at most 8 GB');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(() => client.end());
  const { rows } = await client.query<{ mb: number }>(
    "SELECT setting::bigint * 8192 / 1048576 AS mb FROM pg_settings WHERE name = 'shared_buffers'",
  );
  t.equal(Number(rows[0]?.mb), embeddedSharedBuffersMb(), 'the running server has it');
});

t.test('PostgreSQL stopped under load and started again', async (t) => {
  const json = { 'content-type': 'application/json' };
  t.equal(
    (
      await request('/api/v1/setup/', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ setup_token: TEST_SETUP_TOKEN, ...ADMIN, organization_name: 'Acme', organization_slug: 'acme' }),
      })
    ).status,
    201,
    'setup',
  );
  const tokens = await fetch(`${server.origin}/api/v1/auth/token/`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ username: ADMIN.username, password: ADMIN.password }),
  }).then((r) => r.json() as Promise<{ access: string }>);
  const auth = { authorization: `Bearer ${tokens.access}` };
  const me = await fetch(`${server.origin}/api/v1/auth/me/`, { headers: auth }).then(
    (r) => r.json() as Promise<{ organizations: { id: string }[] }>,
  );
  const companies = `/api/v1/organizations/${me.organizations[0]!.id}/companies/`;

  // Load: eight clients reading and writing in a loop for the whole drill.
  const answers: Answer[] = [];
  let loading = true;
  const load = Array.from({ length: 8 }, async (_, i) => {
    while (loading) {
      answers.push(
        i % 2 === 0
          ? await request(companies, { headers: auth })
          : await request(companies, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ name: `Load ${i}` }) }),
      );
    }
  });

  const waitFor = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.ok(
    answers.some((a) => a.status === 200 || a.status === 201),
    'served before the outage',
  );

  await database.stop();
  await waitFor('readyz 503', async () => (await request('/readyz')).status === 503);
  const during = await Promise.all([
    request(companies, { headers: auth }),
    request('/api/v1/auth/me/', { headers: auth }),
    request(companies, {
      method: 'POST',
      headers: { ...auth, ...json },
      body: JSON.stringify({ name: 'During the outage' }),
    }),
  ]);
  for (const answer of during) {
    t.equal(answer.status, 503, 'API answers 503 while the database is down');
    t.match(answer.type, /^application\/problem\+json/);
  }
  const readyz = await request('/readyz');
  t.equal(readyz.status, 503);
  t.match(readyz.type, /^application\/problem\+json/);

  database = await startEmbeddedPostgres({ dataDir });
  forwarder.setTarget(portOf(database.url));
  await waitFor('readyz 200', async () => (await request('/readyz')).status === 200);
  await waitFor('the API serving again', async () => (await request(companies, { headers: auth })).status === 200);
  t.equal(
    (await request(companies, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ name: 'After' }) })).status,
    201,
    'writes work again',
  );

  loading = false;
  await Promise.all(load);
  const statuses = [...new Set(answers.map((a) => a.status))].sort();
  t.ok(answers.length > 20, `${answers.length} requests under load`);
  t.same(
    statuses.filter((s) => ![200, 201, 503].includes(s)),
    [],
    `only 200/201/503 under load (saw ${statuses.join(', ')})`,
  );
  t.ok(
    answers.every((a) => a.ms < ANSWER_WITHIN_MS),
    `no answer took ${ANSWER_WITHIN_MS} ms or more (slowest ${Math.max(...answers.map((a) => a.ms))} ms)`,
  );
  t.ok(
    answers.filter((a) => a.status === 503).every((a) => a.type.startsWith('application/problem+json')),
    'every 503 is problem+json',
  );
  t.equal(await stop(server), 0, 'the same process shuts down cleanly');
});
