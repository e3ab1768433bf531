// `make bench-csv` (and the end of `make bench`): the CSV targets of issue 28 against the built server on a throwaway
// embedded PostgreSQL: the export of 1,000,000 companies (time, and the server's RSS growth sampled while it streams)
// and the import of 100,000 companies end to end, with the list's p99 meanwhile against its idle p99 in the same run.
import { spawn, type ChildProcess } from 'node:child_process';
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
import { projectRoot } from '../src/lib/project-root.js';
import { freePort } from '../test/helpers/net.js';
import { addBenchUser } from './bench-kit.js';
import { percentileOf, wrk, type WrkResult } from './wrk.js';

const EXPORT_ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 1_000_000);
const IMPORT_ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
const EXPORT_TARGET_S = 20;
const EXPORT_RSS_TARGET_MB = 50;
const IMPORT_TARGET_S = 30;
const LIST_CONNECTIONS = 4;
const LIST_SECONDS = 5;
const PASSWORD = 'bench-password-not-secret';

const log = (message: string) => process.stderr.write(`[bench-csv] ${message}\n`);

/** Resident memory of a process and its children now (VmRSS), in MB. */
async function rssMb(pid: number): Promise<number> {
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(/\s+/).filter(Boolean);
  let total = 0;
  for (const id of [String(pid), ...children]) {
    const status = await readFile(`/proc/${id}/status`, 'utf8').catch(() => '');
    total += Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024;
  }
  return total;
}

/** Two workspaces: one with EXPORT_ROWS companies to export and list, an empty one to import into. */
async function seed(url: string): Promise<{ big: string; target: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET synchronous_commit = off; SET maintenance_work_mem = '256MB'`);
    const { rows: orgs } = await client.query<{ id: string }>(
      `INSERT INTO organizations (id, name, slug, updated_at)
       VALUES (gen_random_uuid(), 'CSV Big', 'csv-big', now()), (gen_random_uuid(), 'CSV Import', 'csv-import', now()) RETURNING id`,
    );
    const [big, target] = orgs.map((row) => row.id) as [string, string];
    // Indexes are built once after the rows, not kept up to date row by row (minutes saved on a million rows).
    const { rows: indexes } = await client.query<{ name: string; definition: string }>(
      `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
       WHERE tablename = 'companies' AND indexdef NOT LIKE 'CREATE UNIQUE INDEX%'`,
    );
    for (const index of indexes) await client.query(`DROP INDEX "${index.name}"`);
    await client.query(
      `INSERT INTO companies (id, organization_id, name, email, phone_number, website, lifecycle_stage, created_at, updated_at)
       SELECT md5('csv-' || i)::uuid, $1, 'Company ' || i || CASE WHEN i % 10 = 0 THEN ', "Ltd"' ELSE '' END,
              'info' || i || '@company' || i || '.example', CASE WHEN i % 7 = 0 THEN '+1 555 ' || i END,
              'https://company' || i || '.example', 'lead', now() - i * interval '1 second', now()
       FROM generate_series(1, $2::int) i`,
      [big, EXPORT_ROWS],
    );
    for (const index of indexes) await client.query(index.definition);
    await client.query('VACUUM (ANALYZE) companies');
    await addBenchUser(client);
    await client.query('CHECKPOINT');
    return { big, target };
  } finally {
    await client.end();
  }
}

/** The built server by `npm start`'s command line, one process (its workers included), until /readyz answers. */
async function startServer(databaseUrl: string, dataDir: string): Promise<{ process: ChildProcess; origin: string }> {
  const port = await freePort();
  const { scripts } = JSON.parse(await readFile(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const child = spawn('/bin/sh', ['-c', scripts.start], {
    cwd: projectRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      JWT_SECRET: randomBytes(32).toString('hex'),
      ACCESS_TOKEN_TTL: '3600',
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
      WEB_CONCURRENCY: '1',
      // The list is hammered by wrk: the workspace's request budget (issue 31) would answer 429s, fast, instead.
      RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000000',
      ...(process.env.BENCH_CPU_PROF ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` } : {}),
      ...(process.env.BENCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS } : {}),
    },
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})`);
    if (
      (await fetch(`${origin}/readyz`).then(
        (res) => res.status,
        () => 0,
      )) === 200
    )
      return { process: child, origin };
    if (Date.now() > deadline) throw new Error('the server did not become ready');
    await sleep(100);
  }
}

/** Samples `pid`'s RSS every 100 ms until stopped; returns the largest sample. */
function sampleRss(pid: number) {
  let peak = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      peak = Math.max(peak, await rssMb(pid));
      await sleep(100);
    }
  })();
  return async () => {
    running = false;
    await done;
    return peak;
  };
}

async function benchExport(origin: string, pid: number, headers: Record<string, string>, org: string) {
  // A short export first: the route's code is compiled and the pool warm, as for any later export.
  await (await fetch(`${origin}/api/v1/organizations/${org}/companies/export/?search=Company%2012345`, { headers })).text();
  const before = await rssMb(pid);
  const stop = sampleRss(pid);
  const started = performance.now();
  const res = await fetch(`${origin}/api/v1/organizations/${org}/companies/export/`, { headers });
  if (!res.ok || !res.body) throw new Error(`export answered ${res.status}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body) {
    bytes += chunk.length;
    for (const byte of chunk) if (byte === 10) lines++;
  }
  const seconds = (performance.now() - started) / 1000;
  const peak = await stop();
  return { seconds, bytes, rows: lines - 1, before, peak, growth: peak - before };
}

/** A CSV of IMPORT_ROWS companies, written to a file (as a user's upload would be). */
async function importFile(dir: string): Promise<string> {
  const file = path.join(dir, 'import.csv');
  const out = createWriteStream(file);
  out.write('name,email,website,lifecycle_stage\n');
  for (let i = 1; i <= IMPORT_ROWS; i++) {
    if (!out.write(`Imported ${i},sales${i}@imported${i}.example,https://imported${i}.example,prospect\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return file;
}

async function benchImport(origin: string, headers: Record<string, string>, target: string, listUrl: string, file: string) {
  const list = () => wrk({ url: listUrl, method: 'GET', connections: LIST_CONNECTIONS, seconds: LIST_SECONDS, headers });
  const idle = await list();
  const form = new FormData();
  form.set('kind', 'companies');
  form.set('file', await openAsBlob(file, { type: 'text/csv' }), 'import.csv');
  // The list is measured in windows of LIST_SECONDS one after the other from the upload until the import has ended.
  let importing = true;
  const windows: WrkResult[] = [];
  const listed = (async () => {
    while (importing) windows.push(await list());
  })();
  const started = performance.now();
  let status: Record<string, unknown> = {};
  let accepted = 0;
  try {
    const res = await fetch(`${origin}/api/v1/organizations/${target}/imports/`, { method: 'POST', headers, body: form });
    if (res.status !== 202) throw new Error(`import answered ${res.status}: ${await res.text()}`);
    accepted = (performance.now() - started) / 1000;
    const { id } = (await res.json()) as { id: string };
    for (;;) {
      status = (await (await fetch(`${origin}/api/v1/organizations/${target}/imports/${id}/`, { headers })).json()) as Record<
        string,
        unknown
      >;
      if (status.status !== 'queued' && status.status !== 'running') break;
      await sleep(200);
    }
  } finally {
    importing = false;
  }
  const seconds = (performance.now() - started) / 1000;
  await listed;
  const p99s = windows.map((window) => window.p99_us / 1000).sort((x, y) => x - y);
  return {
    seconds,
    accepted,
    status,
    idleP99: percentileOf([idle], 99),
    // Every list answered from the upload to the end of the import, as one distribution (the "meanwhile").
    busyP99: percentileOf(windows, 99),
    busyRequests: windows.reduce((sum, window) => sum + window.requests, 0),
    worstWindowP99: p99s.at(-1) ?? 0,
    medianP99: p99s[Math.floor(p99s.length / 2)] ?? 0,
    windows: windows.length,
    // In order, so a reader sees whether the worst is the upload's window, the job's start or its end.
    inOrder: windows.map((window) => (window.p99_us / 1000).toFixed(1)),
    busyErrors: windows.reduce((sum, window) => sum + window.errors + window.non2xx, 0),
  };
}

const mark = (met: boolean) => (met ? 'met' : 'MISSED');

const workDir = await mkdtemp(path.join(tmpdir(), 'crm-bench-csv-'));
let postgres: RunningPostgres | undefined;
let server: { process: ChildProcess; origin: string } | undefined;
try {
  postgres = await startEmbeddedPostgres({ dataDir: workDir });
  await applyMigrations(postgres.url);
  log(`seeding ${EXPORT_ROWS.toLocaleString('en')} companies`);
  const seededAt = performance.now();
  const { big, target } = await seed(postgres.url);
  log(`seeded in ${((performance.now() - seededAt) / 1000).toFixed(1)} s`);
  const file = await importFile(workDir);
  server = await startServer(postgres.url, path.join(workDir, 'app'));
  const token = await fetch(`${server.origin}/api/v1/auth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'bench', password: PASSWORD }),
  }).then(async (res) => ((await res.json()) as { access: string }).access);
  const headers = { authorization: `Bearer ${token}` };
  const pid = server.process.pid!;

  log('export');
  const exported = await benchExport(server.origin, pid, headers, big);
  log('import');
  const listUrl = `${server.origin}/api/v1/organizations/${big}/companies/?limit=50`;
  const imported = await benchImport(server.origin, headers, target, listUrl, file);
  const importOk = imported.status.status === 'succeeded' && imported.status.created === IMPORT_ROWS;
  console.log(
    [
      `CSV targets (issue 28): one server process (npm start, its workers in-process), embedded PostgreSQL, all on this machine.`,
      '| target | measured | goal | verdict |',
      '|---|---|---|---|',
      `| export ${exported.rows.toLocaleString('en')} companies (${(exported.bytes / 1e6).toFixed(0)} MB of CSV) | ${exported.seconds.toFixed(1)} s | ≤ ${EXPORT_TARGET_S} s | ${mark(exported.seconds <= EXPORT_TARGET_S && exported.rows === EXPORT_ROWS)} |`,
      `| server RSS growth during that export (${exported.before.toFixed(0)} → peak ${exported.peak.toFixed(0)} MB, sampled every 100 ms) | ${exported.growth.toFixed(1)} MB | < ${EXPORT_RSS_TARGET_MB} MB | ${mark(exported.growth < EXPORT_RSS_TARGET_MB)} |`,
      `| import ${IMPORT_ROWS.toLocaleString('en')} companies, upload to \`succeeded\` (202 after ${imported.accepted.toFixed(1)} s; ${JSON.stringify(imported.status.created)} created) | ${imported.seconds.toFixed(1)} s | ≤ ${IMPORT_TARGET_S} s | ${mark(imported.seconds <= IMPORT_TARGET_S && importOk)} |`,
      `| list p99 (wrk -c${LIST_CONNECTIONS}, ${EXPORT_ROWS.toLocaleString('en')}-row workspace) over the ${imported.busyRequests.toLocaleString('en')} lists answered from upload to end of the import, vs idle (${LIST_SECONDS} s) | ${imported.busyP99.toFixed(1)} ms vs ${imported.idleP99.toFixed(1)} ms (${(imported.busyP99 / imported.idleP99).toFixed(2)}×, ${imported.busyErrors} errors) | ≤ 2× | ${mark(imported.busyP99 <= 2 * imported.idleP99 && imported.busyErrors === 0)} |`,
      `| the same, worst of its ${imported.windows} windows of ${LIST_SECONDS} s (median window ${imported.medianP99.toFixed(1)} ms) | ${imported.worstWindowP99.toFixed(1)} ms (${(imported.worstWindowP99 / imported.idleP99).toFixed(2)}×) | (shown) | |`,
      '',
      `list p99 of each window in order (ms): ${imported.inOrder.join(', ')}`,
    ].join('\n'),
  );
} finally {
  if (server && server.process.exitCode === null) {
    const exited = once(server.process, 'exit');
    server.process.kill('SIGTERM');
    await exited;
  }
  if (postgres) await postgres.stop();
  await rm(workDir, { recursive: true, force: true });
}
