// Load benchmark: seeds 1,000,000 companies into a throwaway embedded PostgreSQL, starts the built server on it and
// drives the main endpoints with autocannon, then prints req/s, latency, errors and the server's peak RSS.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { hashPassword } from '../src/lib/passwords.js';
import { projectRoot } from '../src/lib/project-root.js';

const BIG_COMPANIES = 1_000_000;
const BIG_CONTACTS = 100_000;
const SMALL_WORKSPACES = 20;
const SMALL_COMPANIES = 500;
const SMALL_CONTACTS = 100;
const CONNECTIONS = 50;
const DURATION_S = 20;
const WARMUP_S = 5;
const PASSWORD = 'bench-password-not-secret';
const MAX_RSS_MB = 300;

/** The part of autocannon's API used here (the package ships no types). */
interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * 100 distinct made-up words (10 stems × 10 endings): company names, emails and websites take the word of
 * `i % 100`, so searching one word matches about 1% of the companies.
 */
const STEMS = ['kor', 'vel', 'mun', 'dra', 'sil', 'tep', 'bax', 'gor', 'lin', 'pru'];
const ENDINGS = ['anth', 'ebrook', 'ivale', 'oria', 'usco', 'entix', 'aldo', 'ymar', 'oquin', 'etra'];
const WORDS = STEMS.flatMap((stem) => ENDINGS.map((ending) => stem + ending));
const SEARCH_TERM = WORDS[37]!;
const sqlArray = (values: string[]) => `ARRAY[${values.map((v) => `'${v}'`).join(',')}]`;

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Companies `first..first+count-1` (ids derived from the number, so contacts can point at them) of one
 * organization, created one second apart, newest first by number.
 */
function insertCompanies(organizationId: string, first: number, count: number): string {
  return `
    INSERT INTO companies (id, organization_id, name, email, phone_number, website, lifecycle_stage, created_at, updated_at)
    SELECT md5('company-' || i)::uuid, '${organizationId}',
           initcap(w) || ' ' || (ARRAY['Labs','Group','Systems','Foods','Logistics'])[1 + i % 5] || ' ' || i,
           'info' || i || '@' || w || '.example',
           '+1-555-' || lpad(i::text, 7, '0'),
           'https://www.' || w || i || '.example',
           (ARRAY['lead','prospect','customer','inactive'])[1 + i % 4]::lifecycle_stage,
           ts, ts
    FROM generate_series(${first}, ${first + count - 1}) AS i,
         LATERAL (SELECT (${sqlArray(WORDS)})[1 + i % 100] AS w, now() - make_interval(secs => i) AS ts) AS v`;
}

/** `count` contacts of one organization, spread over its companies `first..` in steps of `step`. */
function insertContacts(organizationId: string, firstCompany: number, step: number, count: number): string {
  return `
    INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, phone_number, department, job_title, created_at, updated_at)
    SELECT gen_random_uuid(), '${organizationId}', md5('company-' || (${firstCompany} + (j - 1) * ${step}))::uuid,
           initcap(w), 'Person' || j, 'person' || j || '@' || w || '.example', '+44-20-' || lpad(j::text, 7, '0'),
           'Sales', 'Manager', ts, ts
    FROM generate_series(1, ${count}) AS j,
         LATERAL (SELECT (${sqlArray(WORDS)})[1 + j % 100] AS w, now() - make_interval(secs => j) AS ts) AS v`;
}

interface Seeded {
  organizationId: string;
  seconds: number;
}

/**
 * Loads the data with the non-unique indexes of companies/contacts dropped and rebuilt afterwards (as a bulk load
 * should; unique ones back foreign keys and stay), then ANALYZEs. The index definitions are read back from the migrated database, so they stay the ones
 * the migrations create.
 */
async function seed(url: string): Promise<Seeded> {
  const started = Date.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET synchronous_commit = off; SET maintenance_work_mem = '512MB'`);
    const { rows: indexes } = await client.query<{ name: string; definition: string }>(`
      SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
      WHERE i.tablename IN ('companies', 'contacts')
        AND i.indexdef NOT LIKE 'CREATE UNIQUE INDEX%'`);
    for (const index of indexes) await client.query(`DROP INDEX "${index.name}"`);

    const organizations: string[] = [];
    for (let n = 0; n <= SMALL_WORKSPACES; n++) {
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), $1, $2, now()) RETURNING id`,
        [n === 0 ? 'Bench Big' : `Bench Small ${n}`, n === 0 ? 'bench-big' : `bench-small-${n}`],
      );
      organizations.push(rows[0]!.id);
    }
    const [big, ...small] = organizations as [string, ...string[]];
    log(`seeding ${BIG_COMPANIES.toLocaleString('en')} companies and ${BIG_CONTACTS.toLocaleString('en')} contacts`);
    await client.query(insertCompanies(big, 1, BIG_COMPANIES));
    await client.query(insertContacts(big, 1, BIG_COMPANIES / BIG_CONTACTS, BIG_CONTACTS));
    for (const [n, organizationId] of small.entries()) {
      const first = BIG_COMPANIES + 1 + n * SMALL_COMPANIES;
      await client.query(insertCompanies(organizationId, first, SMALL_COMPANIES));
      await client.query(insertContacts(organizationId, first, SMALL_COMPANIES / SMALL_CONTACTS, SMALL_CONTACTS));
    }
    log(`rebuilding ${indexes.length} indexes`);
    for (const index of indexes) await client.query(index.definition);
    await client.query('ANALYZE');

    const { rows: users } = await client.query<{ id: string }>(
      `INSERT INTO users (id, username, email, password_hash, updated_at) VALUES (gen_random_uuid(), 'bench', 'bench@example.test', $1, now()) RETURNING id`,
      [await hashPassword(PASSWORD)],
    );
    await client.query(
      `INSERT INTO memberships (id, organization_id, user_id, role, updated_at) SELECT gen_random_uuid(), id, $1, 'owner', now() FROM organizations`,
      [users[0]!.id],
    );
    return { organizationId: big, seconds: (Date.now() - started) / 1000 };
  } finally {
    await client.end();
  }
}

/** Share of the big workspace's companies the search term matches (the benchmark promises about 1%). */
async function searchShare(url: string, organizationId: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ share: number }>(
      `SELECT avg((search_text LIKE $2)::int)::float AS share FROM companies WHERE organization_id = $1`,
      [organizationId, `%${SEARCH_TERM}%`],
    );
    return rows[0]!.share;
  } finally {
    await client.end();
  }
}

interface Server {
  process: ChildProcess;
  origin: string;
  output: string[];
}

async function startServer(databaseUrl: string, dataDir: string): Promise<Server> {
  const entry = path.join(projectRoot, 'dist', 'src', 'server.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const port = await freePort();
  // Started by `npm start`'s own command line (with its node flags); its `exec` makes the shell's PID the server's.
  const { scripts } = JSON.parse(await readFile(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const child = spawn('/bin/sh', ['-c', scripts.start], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      JWT_SECRET: randomBytes(32).toString('hex'),
      ACCESS_TOKEN_TTL: '3600',
      LOG_LEVEL: 'warn',
    },
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 50) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output.join('')}`);
    const ready = await fetch(`${origin}/readyz`).then((res) => res.ok, () => false);
    if (ready) return { process: child, origin, output };
    if (Date.now() > deadline) throw new Error(`the server did not become ready:\n${output.join('')}`);
    await sleep(100);
  }
}

async function stopServer(server: Server): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) return;
  const exited = once(server.process, 'exit');
  server.process.kill('SIGTERM');
  const timer = setTimeout(() => server.process.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** The kernel's peak resident set of the process (VmHWM), in MB. */
async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

async function signIn(origin: string): Promise<string> {
  const res = await fetch(`${origin}/api/v1/auth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'bench', password: PASSWORD }),
  });
  if (!res.ok) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access: string }).access;
}

interface Scenario {
  name: string;
  path: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  /** The issue's targets for this scenario (every scenario must also answer without errors). */
  target?: { minRps?: number; maxP99Ms?: number };
}

interface Row {
  scenario: Scenario;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  rssMb: number;
}

async function run(server: Server, token: string, scenario: Scenario): Promise<Row> {
  const options = {
    url: server.origin + scenario.path,
    connections: CONNECTIONS,
    method: scenario.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(scenario.body ? { 'content-type': 'application/json' } : {}) },
    ...(scenario.body ? { body: JSON.stringify(scenario.body) } : {}),
  };
  log(`${scenario.name}: warm-up ${WARMUP_S} s, then ${DURATION_S} s`);
  await autocannon({ ...options, duration: WARMUP_S });
  const result = await autocannon({ ...options, duration: DURATION_S });
  return {
    scenario,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    rssMb: await peakRssMb(server.process.pid!),
  };
}

/** One line per target of the issue: met or missed, with the measured value. */
function verdicts(rows: Row[]): string[] {
  const mark = (met: boolean) => (met ? 'met   ' : 'MISSED');
  const lines: string[] = [];
  for (const { scenario, rps, p99 } of rows) {
    const { minRps, maxP99Ms } = scenario.target ?? {};
    if (minRps !== undefined) lines.push(`${mark(rps >= minRps)} ${scenario.name}: >= ${minRps} req/s (${rps.toFixed(0)})`);
    if (maxP99Ms !== undefined) lines.push(`${mark(p99 <= maxP99Ms)} ${scenario.name}: p99 <= ${maxP99Ms} ms (${p99.toFixed(1)})`);
  }
  const errors = rows.reduce((sum, row) => sum + row.errors, 0);
  lines.push(`${mark(errors === 0)} zero errors (${errors})`);
  const rss = Math.max(...rows.map((row) => row.rssMb));
  lines.push(`${mark(rss <= MAX_RSS_MB)} server peak RSS <= ${MAX_RSS_MB} MB (${rss.toFixed(0)})`);
  return lines;
}

function printTable(rows: Row[], seeded: Seeded, share: number): void {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'peak RSS MB'];
  const lines = rows.map((r) => [r.scenario.name, r.rps.toFixed(0), r.p50.toFixed(1), r.p99.toFixed(1), String(r.errors), r.rssMb.toFixed(0)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(
    [
      `Seeding: ${seeded.seconds.toFixed(1)} s (1 workspace with ${BIG_COMPANIES.toLocaleString('en')} companies and ` +
        `${BIG_CONTACTS.toLocaleString('en')} contacts, ${SMALL_WORKSPACES} small workspaces)`,
      `autocannon: ${CONNECTIONS} connections, ${DURATION_S} s after a ${WARMUP_S} s warm-up; server LOG_LEVEL=warn; ` +
        `search "${SEARCH_TERM}" matches ${(share * 100).toFixed(2)}% of the companies; peak RSS is the server's VmHWM so far`,
      '',
      format(header),
      format(widths.map((w) => '-'.repeat(w))),
      ...lines.map(format),
      '',
      'Targets:',
      ...verdicts(rows).map((line) => `  ${line}`),
    ].join('\n'),
  );
}

/**
 * Development knobs (the official figures use neither): BENCH_DIR keeps the seeded cluster in that folder and reuses
 * it on the next run (seeding is skipped); BENCH_ONLY runs only the scenarios whose names start with one of its
 * comma-separated prefixes.
 */
const keptDir = process.env.BENCH_DIR ? path.resolve(process.env.BENCH_DIR) : undefined;
const only = process.env.BENCH_ONLY?.split(',').map((prefix) => prefix.trim()).filter(Boolean);

async function main(): Promise<void> {
  const reuse = keptDir !== undefined && existsSync(path.join(keptDir, 'seeded.json'));
  const workDir = keptDir ?? (await mkdtemp(path.join(tmpdir(), 'crm-bench-')));
  let postgres: RunningPostgres | undefined;
  let server: Server | undefined;
  const cleanup = async () => {
    if (server) await stopServer(server);
    if (postgres) await postgres.stop();
    if (!keptDir) await rm(workDir, { recursive: true, force: true });
  };
  const onSignal = () => {
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    // The cluster goes straight into the temporary folder: startEmbeddedPostgres opens it to PostgreSQL's user (root runs).
    postgres = await startEmbeddedPostgres({ dataDir: workDir });
    await applyMigrations(postgres.url);
    let seeded: Seeded;
    if (reuse) {
      seeded = JSON.parse(await readFile(path.join(workDir, 'seeded.json'), 'utf8')) as Seeded;
      log(`reusing the data seeded in ${workDir}`);
    } else {
      seeded = await seed(postgres.url);
      log(`seeded in ${seeded.seconds.toFixed(1)} s`);
      if (keptDir) await writeFile(path.join(workDir, 'seeded.json'), JSON.stringify(seeded));
    }
    const share = await searchShare(postgres.url, seeded.organizationId);
    server = await startServer(postgres.url, path.join(workDir, 'app'));
    const token = await signIn(server.origin);
    const org = `/api/v1/organizations/${seeded.organizationId}`;
    const scenarios: Scenario[] = [
      { name: 'company list (limit 50)', path: `${org}/companies/?limit=50`, target: { minRps: 2000, maxP99Ms: 50 } },
      { name: 'company search (~1%)', path: `${org}/companies/?limit=50&search=${SEARCH_TERM}`, target: { maxP99Ms: 100 } },
      { name: 'company create', path: `${org}/companies/`, method: 'POST', body: { name: 'Bench Created', email: 'bench@created.example' } },
      { name: 'contact list (limit 50)', path: `${org}/contacts/?limit=50`, target: { minRps: 2000, maxP99Ms: 50 } },
      { name: 'GET /auth/me/', path: '/api/v1/auth/me/' },
    ];
    const rows: Row[] = [];
    for (const scenario of scenarios.filter((s) => !only || only.some((prefix) => s.name.startsWith(prefix)))) rows.push(await run(server, token, scenario));
    printTable(rows, seeded, share);
  } catch (error) {
    if (server) process.stderr.write(server.output.join(''));
    throw error;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await cleanup();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
