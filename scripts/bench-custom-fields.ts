// `make bench-custom-fields`: issue 47's write targets against the built server on a throwaway embedded PostgreSQL: a
// company create with 10 custom values against one with none (p50 from one client, server and PostgreSQL CPU per
// create), and an import of companies with 5 custom columns end to end, beside the same import without them.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import {
  addBenchUser,
  insertCompanies,
  log,
  mark,
  median,
  type Server,
  signIn,
  startService,
  stopServer,
  table,
  treeCpuSeconds,
  watchPostmaster,
} from './bench-kit.js';

/** Rounds of the one-client comparison, alternating which goes first; medians reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Creates per round and kind. */
const CREATES = Number(process.env.BENCH_CREATES ?? 200);
/** The workspace's companies before the creates: a workspace in use, not an empty table. */
const EXISTING = Number(process.env.BENCH_EXISTING ?? 100_000);
/** Rows of the import (the issue: 100,000 in at most 40 s). */
const IMPORT_ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
const CREATE_SHARE = 1.2;
const IMPORT_SECONDS = 40;

const OPTIONS = ['free', 'pro', 'enterprise'].map((value) => ({ value, label: value }));
/** Ten fields of mixed types, and a value of each. */
const FIELDS: [string, string, unknown][] = [
  ['note_text', 'text', 'Renewal discussed with procurement'],
  ['seats', 'number', 42],
  ['mrr', 'decimal', '1234.50'],
  ['active', 'boolean', true],
  ['renewal', 'date', '2027-01-31'],
  ['signed_at', 'datetime', '2026-11-28T10:00:00Z'],
  ['billing_email', 'email', 'billing@example.com'],
  ['portal', 'url', 'https://portal.example.com/acme'],
  ['tier', 'select', 'pro'],
  ['tags', 'multi_select', ['free', 'enterprise']],
];
/** The import's five custom columns (a subset of FIELDS) and a cell of each for row `i`. */
const IMPORT_COLUMNS: [string, (i: number) => string][] = [
  ['tier', (i) => OPTIONS[i % 3]!.value],
  ['seats', (i) => String(i % 500)],
  ['renewal', (i) => `2027-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`],
  ['mrr', (i) => `${i % 10_000}.${String(i % 100).padStart(2, '0')}`],
  ['active', (i) => (i % 2 === 0 ? 'true' : 'false')],
];

let unique = 0;

async function seed(url: string): Promise<{ busy: string; target: string; plain: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO organizations (id, name, slug, updated_at)
       VALUES (gen_random_uuid(), 'Fields Bench', 'fields-bench', now()), (gen_random_uuid(), 'Fields Import', 'fields-import', now()),
              (gen_random_uuid(), 'Plain Import', 'plain-import', now())
       RETURNING id`,
    );
    const [busy, target, plain] = rows.map((row) => row.id) as [string, string, string];
    await client.query(insertCompanies(busy, 0, EXISTING));
    await client.query('VACUUM (ANALYZE) companies');
    await addBenchUser(client);
    await client.query('CHECKPOINT');
    return { busy, target, plain };
  } finally {
    await client.end();
  }
}

async function defineFields(origin: string, headers: Record<string, string>, organizationId: string, keys?: string[]) {
  for (const [key, type] of FIELDS) {
    if (keys && !keys.includes(key)) continue;
    const body = { object: 'company', key, label: key, type, ...(type.endsWith('select') ? { options: OPTIONS } : {}) };
    const res = await fetch(`${origin}/api/v1/organizations/${organizationId}/custom-fields/`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`define ${key}: ${res.status} ${await res.text()}`);
  }
}

/** Latencies (ms) of CREATES creates one after the other, and the server's and PostgreSQL's CPU µs per create. */
async function creates(server: Server, postmaster: number, headers: Record<string, string>, url: string, custom: boolean) {
  const values = Object.fromEntries(FIELDS.map(([key, , value]) => [key, value]));
  const cpu = () => Promise.all([treeCpuSeconds(server.process.pid!), treeCpuSeconds(postmaster)]);
  const before = await cpu();
  const latencies: number[] = [];
  for (let i = 0; i < CREATES; i++) {
    const n = unique++;
    const body = { name: `Fields Bench ${n}`, email: `bench-${n}@fields.example`, ...(custom ? { custom_fields: values } : {}) };
    const started = performance.now();
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
  }
  const after = await cpu();
  return { p50: median(latencies), server: ((after[0] - before[0]) * 1e6) / CREATES, postgres: ((after[1] - before[1]) * 1e6) / CREATES };
}

/** The import file, with the custom columns or (`custom` false) the same rows without them. */
async function importFile(dir: string, custom: boolean): Promise<string> {
  const file = path.join(dir, custom ? 'import.csv' : 'plain.csv');
  const out = createWriteStream(file);
  const columns = custom ? IMPORT_COLUMNS : [];
  out.write(`name,email,website${columns.map(([key]) => `,custom.${key}`).join('')}\n`);
  for (let i = 1; i <= IMPORT_ROWS; i++) {
    const cells = columns.map(([, cell]) => `,${cell(i)}`).join('');
    if (!out.write(`Imported ${i},sales${i}@imported${i}.example,https://imported${i}.example${cells}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return file;
}

async function benchImport(origin: string, headers: Record<string, string>, target: string, file: string) {
  const form = new FormData();
  form.set('kind', 'companies');
  form.set('file', await openAsBlob(file, { type: 'text/csv' }), 'import.csv');
  const started = performance.now();
  const res = await fetch(`${origin}/api/v1/organizations/${target}/imports/`, { method: 'POST', headers, body: form });
  if (res.status !== 202) throw new Error(`import answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  for (;;) {
    const status = (await (await fetch(`${origin}/api/v1/organizations/${target}/imports/${id}/`, { headers })).json()) as Record<
      string,
      unknown
    >;
    if (status.status !== 'queued' && status.status !== 'running') return { seconds: (performance.now() - started) / 1000, status };
    await sleep(200);
  }
}

const workDir = await mkdtemp(path.join(tmpdir(), 'crm-bench-fields-'));
let postgres: RunningPostgres | undefined;
let server: Server | undefined;
try {
  postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
  await applyMigrations(postgres.url);
  log(`seeding ${EXISTING.toLocaleString('en')} companies`);
  const { busy, target, plain } = await seed(postgres.url);
  const postmaster = Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  watchPostmaster(postmaster);
  server = await startService(postgres.url, path.join(workDir, 'app'), randomBytes(32).toString('hex'), 1);
  const token = await signIn(server.origin);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  await defineFields(server.origin, headers, busy);
  await defineFields(
    server.origin,
    headers,
    target,
    IMPORT_COLUMNS.map(([key]) => key),
  );
  const url = `${server.origin}/api/v1/organizations/${busy}/companies/`;

  log('warming up');
  await creates(server, postmaster, headers, url, false);
  await creates(server, postmaster, headers, url, true);
  const none: Awaited<ReturnType<typeof creates>>[] = [];
  const ten: Awaited<ReturnType<typeof creates>>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`one client, round ${round + 1}/${ROUNDS}`);
    if (round % 2 === 0) {
      none.push(await creates(server, postmaster, headers, url, false));
      ten.push(await creates(server, postmaster, headers, url, true));
    } else {
      ten.push(await creates(server, postmaster, headers, url, true));
      none.push(await creates(server, postmaster, headers, url, false));
    }
  }
  const med = (runs: typeof none, key: 'p50' | 'server' | 'postgres') => median(runs.map((run) => run[key]));
  const ratio = (key: 'p50' | 'server' | 'postgres') => med(ten, key) / med(none, key);

  log(`import files of ${IMPORT_ROWS.toLocaleString('en')} companies, with and without ${IMPORT_COLUMNS.length} custom columns`);
  const bearer = { authorization: `Bearer ${token}` };
  const plainFile = await importFile(workDir, false);
  const customFile = await importFile(workDir, true);
  log('importing without custom columns');
  const plainImport = await benchImport(server.origin, bearer, plain, plainFile);
  log('importing with custom columns');
  const imported = await benchImport(server.origin, bearer, target, customFile);
  const importTarget = (IMPORT_SECONDS * IMPORT_ROWS) / 100_000;

  console.log(
    [
      `Custom fields (issue 47): one server process, embedded PostgreSQL, a workspace of ${EXISTING.toLocaleString('en')} companies, all on this machine.`,
      '',
      ...table(
        [`one client, ${CREATES} creates × ${ROUNDS} rounds`, 'p50 ms', 'server CPU µs/create', 'PG CPU µs/create', 'p50 per round (ms)'],
        [none, ten].map((runs, k) => [
          k === 0 ? 'company create, no custom values' : 'company create, 10 custom values',
          med(runs, 'p50').toFixed(2),
          med(runs, 'server').toFixed(0),
          med(runs, 'postgres').toFixed(0),
          runs.map((run) => run.p50.toFixed(2)).join(', '),
        ]),
      ),
      '',
      `${mark(ratio('p50') <= CREATE_SHARE)} p50 with 10 values: ${(ratio('p50') * 100).toFixed(1)} % of none (≤ ${CREATE_SHARE * 100} %)`,
      `${mark(ratio('server') <= CREATE_SHARE)} server CPU per create with 10 values: ${(ratio('server') * 100).toFixed(1)} % of none (≤ ${CREATE_SHARE * 100} %)`,
      `       PostgreSQL CPU per create with 10 values: ${(ratio('postgres') * 100).toFixed(1)} % of none`,
      '',
      `${mark(imported.seconds <= importTarget && imported.status.status === 'succeeded')} import of ${IMPORT_ROWS.toLocaleString('en')} companies ` +
        `with ${IMPORT_COLUMNS.length} custom columns: ${imported.seconds.toFixed(1)} s from upload to finished (≤ ${importTarget.toFixed(0)} s), ` +
        `status ${String(imported.status.status)}, created ${String(imported.status.created)}, failed ${String(imported.status.failed_rows)}`,
      `       the same rows without custom columns, same run: ${plainImport.seconds.toFixed(1)} s ` +
        `(with them: ${((imported.seconds / plainImport.seconds) * 100).toFixed(0)} % of that)`,
    ].join('\n'),
  );
} finally {
  if (server) await stopServer(server);
  await postgres?.stop();
  await rm(workDir, { recursive: true, force: true });
}
