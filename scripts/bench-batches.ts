// `make bench-batches`: issue 48's batch targets against the built server on a throwaway embedded PostgreSQL: 100
// company creates in one batch against 100 single creates from one client, and a 100-operation batch under 4 clients.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import {
  addBenchUser,
  insertCompanies,
  log,
  mark,
  measure,
  median,
  type Server,
  signIn,
  startService,
  stopServer,
  table,
  watchPostmaster,
} from './bench-kit.js';

/** Rounds of the one-client comparison, alternating which goes first; medians reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
/** The workspace's companies before the creates: a workspace in use, not an empty table. */
const EXISTING = 100_000;
const OPERATIONS = 100;
const CLIENTS = 4;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TARGET_SHARE = 1 / 5;

let unique = 0;
const company = (tag: string) => ({ name: `Batch Bench ${tag}`, email: `bench-${tag}@batch.example` });

async function seed(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Batch Bench', 'batch-bench', now()) RETURNING id`,
    );
    const organizationId = rows[0]!.id;
    await client.query(insertCompanies(organizationId, 0, EXISTING));
    await client.query('VACUUM (ANALYZE) companies');
    await addBenchUser(client);
    return organizationId;
  } finally {
    await client.end();
  }
}

/** Milliseconds for `OPERATIONS` creates: one request each, one after the other, as one client sends them. */
async function singles(headers: Record<string, string>, url: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < OPERATIONS; i++) {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(company(`s${unique++}`)) });
    if (res.status !== 201) throw new Error(`single create: ${res.status} ${await res.text()}`);
  }
  return performance.now() - started;
}

/** Milliseconds for the same creates in one batch request. */
async function batch(headers: Record<string, string>, url: string): Promise<number> {
  const operations = Array.from({ length: OPERATIONS }, () => ({ op: 'create', data: company(`b${unique++}`) }));
  const started = performance.now();
  const res = await fetch(`${url}batch/`, { method: 'POST', headers, body: JSON.stringify({ operations }) });
  const body = (await res.json()) as { results: Array<{ status: number }> };
  if (res.status !== 200 || body.results.some((result) => result.status !== 201)) {
    throw new Error(`batch: ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
  }
  return performance.now() - started;
}

const workDir = await mkdtemp(path.join(tmpdir(), 'crm-bench-batches-'));
let postgres: RunningPostgres | undefined;
let server: Server | undefined;
try {
  postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
  await applyMigrations(postgres.url);
  log(`seeding ${EXISTING.toLocaleString('en')} companies`);
  const organizationId = await seed(postgres.url);
  watchPostmaster(Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]));
  server = await startService(postgres.url, path.join(workDir, 'app'), randomBytes(32).toString('hex'), 1);
  const token = await signIn(server.origin);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const url = `${server.origin}/api/v1/organizations/${organizationId}/companies/`;

  log('warming up');
  await singles(headers, url);
  await batch(headers, url);
  const singleMs: number[] = [];
  const batchMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`one client, round ${round + 1}/${ROUNDS}`);
    if (round % 2 === 0) {
      singleMs.push(await singles(headers, url));
      batchMs.push(await batch(headers, url));
    } else {
      batchMs.push(await batch(headers, url));
      singleMs.push(await singles(headers, url));
    }
  }
  const share = median(batchMs) / median(singleMs);

  log(`${CLIENTS} clients: ${OPERATIONS}-operation batches, then single creates (${SECONDS} s each)`);
  const items = Array.from({ length: OPERATIONS }, (_, i) => ({ op: 'create', data: company(`w{n}-${i}`) }));
  const companies = `/api/v1/organizations/${organizationId}/companies/`;
  const batches = await measure(
    server,
    token,
    { name: 'batch', path: `${companies}batch/`, method: 'POST', body: { operations: items } },
    SECONDS,
    2,
    CLIENTS,
  );
  const creates = await measure(
    server,
    token,
    { name: 'create', path: companies, method: 'POST', body: company('w{n}') },
    SECONDS,
    2,
    CLIENTS,
  );
  if (batches.errors + creates.errors > 0) throw new Error(`errors under load: ${batches.errors} batch, ${creates.errors} create`);

  console.log(
    [
      `Batches (issue 48): one server process, embedded PostgreSQL, a workspace of ${EXISTING.toLocaleString('en')} companies, all on this machine.`,
      '',
      ...table(
        ['one client', 'median ms', `of ${ROUNDS} rounds (ms)`],
        [
          [
            `${OPERATIONS} single creates, one after the other`,
            median(singleMs).toFixed(0),
            singleMs.map((ms) => ms.toFixed(0)).join(', '),
          ],
          [`${OPERATIONS} creates in one batch`, median(batchMs).toFixed(0), batchMs.map((ms) => ms.toFixed(0)).join(', ')],
        ],
      ),
      '',
      `${mark(share <= TARGET_SHARE)} the batch takes ${(share * 100).toFixed(1)} % of the singles' time (≤ ${(TARGET_SHARE * 100).toFixed(0)} %)`,
      '',
      ...table(
        [`${CLIENTS} clients, ${SECONDS} s`, 'req/s', 'creates/s', 'p50 ms', 'p99 ms', 'CPU µs per create (server / PG)'],
        [
          [
            `${OPERATIONS}-operation batch`,
            batches.rps.toFixed(1),
            (batches.rps * OPERATIONS).toFixed(0),
            batches.p50.toFixed(1),
            batches.p99.toFixed(1),
            `${(batches.cpu.server / OPERATIONS).toFixed(0)} / ${(batches.cpu.postgres / OPERATIONS).toFixed(0)}`,
          ],
          [
            'single create',
            creates.rps.toFixed(1),
            creates.rps.toFixed(0),
            creates.p50.toFixed(1),
            creates.p99.toFixed(1),
            `${creates.cpu.server.toFixed(0)} / ${creates.cpu.postgres.toFixed(0)}`,
          ],
        ],
      ),
    ].join('\n'),
  );
} finally {
  if (server) await stopServer(server);
  await postgres?.stop();
  await rm(workDir, { recursive: true, force: true });
}
