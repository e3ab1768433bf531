// Load benchmark: seeds 1,000,000 companies into a throwaway embedded PostgreSQL, starts the built server and a bare
// baseline server (scripts/bench-baseline.ts) on it, drives both with wrk, interleaved, and prints req/s,
// latency, errors, peak RSS and the service/baseline ratio; then the search matrix, sorted pages and index sizes, the
// write cost of those indexes against main before them, and the WEB_CONCURRENCY=2 gain.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { encodeCursor } from '../src/lib/pagination.js';
import { hashPassword } from '../src/lib/passwords.js';
import { projectRoot } from '../src/lib/project-root.js';
import { wrk } from './wrk.js';

const BIG_COMPANIES = 1_000_000;
const BIG_CONTACTS = 1_000_000;
/** The big workspace's neighbours (issue 22: nine of 100,000 rows), whose rows share every index with it. */
const SMALL_WORKSPACES = 9;
const SMALL_COMPANIES = 100_000;
const SMALL_CONTACTS = 10_000;
/** The newest companies of the big workspace, seeded apart: none of them holds any search term of the matrix. */
const FRESH_COMPANIES = 50_000;
const CONNECTIONS = 50;
const DURATION_S = 10;
/** Both servers get it before each scenario: the service has more code for V8 to compile than the baseline. */
const WARMUP_S = 5;
/** A search matrix cell: single requests on the idle server, then a short run under CONNECTIONS connections. */
const CELL_IDLE_REQUESTS = 5;
/** The pause before a cell's idle requests (see `idleMs`). */
const IDLE_SETTLE_MS = 2_000;
const CELL_DURATION_S = 3;
const PASSWORD = 'bench-password-not-secret';
const MAX_RSS_MB = 250;

// The load generator is wrk (Debian's package; `make bench` installs it), through scripts/wrk.ts: a C program whose one
// thread costs a small part of a core, where autocannon, a Node program, took most of one of the two cores the servers
// and PostgreSQL share. A body's `{n}` becomes a value unique to each request (scripts/wrk.ts), for creates whose
// fields must not repeat (a company's email).

/**
 * 100 distinct made-up words (10 stems × 10 endings): company names, emails and websites take the word of
 * `i % 100`, so searching one word matches about 1% of the companies.
 */
const STEMS = ['kor', 'vel', 'mun', 'dra', 'sil', 'tep', 'bax', 'gor', 'lin', 'pru'];
const ENDINGS = ['anth', 'ebrook', 'ivale', 'oria', 'usco', 'entix', 'aldo', 'ymar', 'oquin', 'etra'];
const WORDS = STEMS.flatMap((stem) => ENDINGS.map((ending) => stem + ending));
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
           initcap(w) || ' ' || (ARRAY['Labs','Group','Systems','Foods','Logistics'])[1 + i % 5] || ' ' || i ||
             CASE WHEN i % 2000 = 0 THEN ' Halfpermille' ELSE '' END || CASE WHEN i % 20000 = 0 THEN ' Qj' ELSE '' END ||
             CASE WHEN i % 5000 = 7 THEN ' 50%_off' ELSE '' END || CASE WHEN i % 1000 = 3 THEN ' Zürich' ELSE '' END ||
             CASE WHEN i > ${BIG_COMPANIES} * 99 / 100 AND i <= ${BIG_COMPANIES} AND i % 100 = 0 THEN ' Oldtail' ELSE '' END,
           'info' || i || '@' || w || '.example',
           '+1-555-' || lpad(i::text, 7, '0'),
           'https://www.' || w || i || '.example',
           (ARRAY['lead','prospect','customer','inactive'])[1 + i % 4]::lifecycle_stage,
           ts, ts
    FROM generate_series(${first}, ${first + count - 1}) AS i,
         LATERAL (SELECT (${sqlArray(WORDS)})[1 + i % 100] AS w, now() - make_interval(secs => i) AS ts) AS v`;
}

/** FRESH_COMPANIES companies newer than every other, whose fields hold none of the matrix's terms. */
function insertFreshCompanies(organizationId: string): string {
  return `
    INSERT INTO companies (id, organization_id, name, email, phone_number, website, lifecycle_stage, created_at, updated_at)
    SELECT gen_random_uuid(), '${organizationId}', 'Freshmoor Group ' || i, 'info' || i || '@freshmoor.example',
           '+1-556-' || lpad(i::text, 7, '0'), 'https://www.freshmoor' || i || '.example', 'lead', ts, ts
    FROM generate_series(1, ${FRESH_COMPANIES}) AS i, LATERAL (SELECT now() + make_interval(secs => i) AS ts) AS v`;
}

/** `count` contacts of one organization, spread over its companies `first..` in steps of `step`. */
function insertContacts(organizationId: string, firstCompany: number, step: number, count: number): string {
  return `
    INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, phone_number, department, job_title,
                          created_at, updated_at)
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
 * should; unique ones back foreign keys and stay), then VACUUMs and ANALYZEs. The index definitions are read back from the migrated database, so they
 * stay the ones
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
    if (companiesNeeded) {
      log(`seeding ${(BIG_COMPANIES + FRESH_COMPANIES).toLocaleString('en')} companies and ${BIG_CONTACTS.toLocaleString('en')} contacts`);
      await client.query(insertCompanies(big, 1, BIG_COMPANIES));
      await client.query(insertFreshCompanies(big));
      await client.query(insertContacts(big, 1, BIG_COMPANIES / BIG_CONTACTS, BIG_CONTACTS));
      for (const [n, organizationId] of small.entries()) {
        const first = BIG_COMPANIES + 1 + n * SMALL_COMPANIES;
        await client.query(insertCompanies(organizationId, first, SMALL_COMPANIES));
        await client.query(insertContacts(organizationId, first, SMALL_COMPANIES / SMALL_CONTACTS, SMALL_CONTACTS));
      }
    }
    log(`rebuilding ${indexes.length} indexes`);
    for (const index of indexes) await client.query(index.definition);
    // VACUUM as well: after a million inserts autovacuum would otherwise process the table during the measurements.
    await client.query('VACUUM (ANALYZE)');

    const { rows: users } = await client.query<{ id: string }>(
      `INSERT INTO users (id, username, email, password_hash, updated_at)
       VALUES (gen_random_uuid(), 'bench', 'bench@example.test', $1, now()) RETURNING id`,
      [await hashPassword(PASSWORD)],
    );
    await client.query(
      `INSERT INTO memberships (id, organization_id, user_id, role, updated_at)
       SELECT gen_random_uuid(), id, $1, 'owner', now() FROM organizations`,
      [users[0]!.id],
    );
    // The seeding and the VACUUM leave the buffers dirty: write them out now rather than during the measurements.
    await client.query('CHECKPOINT');
    return { organizationId: big, seconds: (Date.now() - started) / 1000 };
  } finally {
    await client.end();
  }
}

/** The positions (as list cursors) of the big workspace's companies at these ranks, newest first (1 = newest). */
async function cursorsAt(url: string, organizationId: string, ranks: number[], table = 'companies'): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const cursors: string[] = [];
    for (const rank of ranks) {
      const { rows } = await client.query<{ created_at: Date; id: string }>(
        `SELECT created_at, id FROM ${table} WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
        [organizationId, rank - 1],
      );
      cursors.push(encodeCursor({ createdAt: rows[0]!.created_at, id: rows[0]!.id }));
    }
    return cursors;
  } finally {
    await client.end();
  }
}

interface Server {
  process: ChildProcess;
  origin: string;
  output: string[];
}

const serverEnv = (databaseUrl: string, port: number, jwtSecret: string) => ({
  PATH: process.env.PATH,
  NODE_ENV: 'production',
  DATABASE_URL: databaseUrl,
  HOST: '127.0.0.1',
  PORT: String(port),
  JWT_SECRET: jwtSecret,
  ACCESS_TOKEN_TTL: '3600',
  LOG_LEVEL: 'warn',
  // The throughput scenarios drive one workspace as hard as they can: its request budget is measured on its own below.
  RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000000',
  // A pool size given to the bench goes to the service and the baseline alike.
  ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
});

/** Starts `command` (through /bin/sh, whose `exec` makes its PID the server's) and waits until `readyPath` answers. */
async function startProcess(command: string, env: NodeJS.ProcessEnv, port: number, readyPath: string, cwd = projectRoot): Promise<Server> {
  const child = spawn('/bin/sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 50) output.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} exited (${child.exitCode}):\n${output.join('')}`);
    const status = await fetch(`${origin}${readyPath}`).then(
      (res) => res.status,
      () => 0,
    );
    if (status > 0 && status < 500) return { process: child, origin, output };
    if (Date.now() > deadline) throw new Error(`${command} did not become ready:\n${output.join('')}`);
    await sleep(100);
  }
}

/** The service by `npm start`'s own command line (with its node flags), with `processes` server processes, built in `root`. */
async function startService(
  databaseUrl: string,
  dataDir: string,
  jwtSecret: string,
  processes: number,
  root = projectRoot,
  extraEnv: Record<string, string> = {},
): Promise<Server> {
  const entry = path.join(root, 'dist', 'src', 'server.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const port = await freePort();
  const { scripts } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const env = { ...serverEnv(databaseUrl, port, jwtSecret), DATA_DIR: dataDir, WEB_CONCURRENCY: String(processes), ...extraEnv };
  return startProcess(scripts.start, env, port, '/readyz', root);
}

/** The baseline (scripts/bench-baseline.ts), on the same database and JWT secret, with `processes` processes. */
async function startBaseline(databaseUrl: string, jwtSecret: string, processes = 1): Promise<Server> {
  const port = await freePort();
  return startProcess(
    'exec node --import tsx scripts/bench-baseline.ts',
    { ...serverEnv(databaseUrl, port, jwtSecret), WEB_CONCURRENCY: String(processes) },
    port,
    '/api/v1/auth/me/',
  );
}

async function stopServer(server: Server): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) return;
  const exited = once(server.process, 'exit');
  server.process.kill('SIGTERM');
  const timer = setTimeout(() => server.process.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** The kernel's clock ticks per second (`getconf CLK_TCK`), the unit of /proc's CPU times. */
const ticksPerSecond = Number((await promisify(execFile)('getconf', ['CLK_TCK'])).stdout.trim()) || 100;

/** A process's direct children (PostgreSQL's backends, the cluster's server processes). */
const childrenOf = (pid: number) =>
  readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').then(
    (text) => text.split(' ').filter(Boolean).map(Number),
    () => [] as number[],
  );

/**
 * CPU time (user + system, in seconds) of a process and of its children: the running ones, and the ones that ended
 * (cutime and cstime, which the kernel adds up when the parent reaps them; backends end while the bench runs).
 */
async function treeCpuSeconds(pid: number): Promise<number> {
  // The fields after the command name, which may hold spaces.
  const statOf = async (id: number) => {
    const stat = await readFile(`/proc/${id}/stat`, 'utf8').catch(() => '');
    return stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
  };
  // utime and stime are the 12th and 13th of those fields, cutime and cstime the 14th and 15th.
  const own = await statOf(pid);
  let ticks = (own[11] || 0) + (own[12] || 0) + (own[13] || 0) + (own[14] || 0);
  for (const id of await childrenOf(pid)) {
    const child = await statOf(id);
    ticks += (child[11] || 0) + (child[12] || 0);
  }
  return ticks / ticksPerSecond;
}

/** The machine's busy CPU time (everything but idle and I/O wait, all cores), in seconds. */
async function machineBusySeconds(): Promise<number> {
  const [, ...values] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).map(Number);
  const total = values.slice(0, 8).reduce((sum, v) => sum + v, 0);
  return (total - values[3]! - values[4]!) / ticksPerSecond;
}

/** The kernel's peak resident set (VmHWM) of the process and of each of its children (cluster workers), in MB. */
async function peakRssMb(pid: number): Promise<number> {
  let peak = 0;
  for (const id of [pid, ...(await childrenOf(pid))]) {
    const status = await readFile(`/proc/${id}/status`, 'utf8').catch(() => '');
    peak = Math.max(peak, Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024);
  }
  return peak;
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
  /** The issue's target: the service's throughput as a share of the baseline's. */
  minRatio: number;
}

interface Measured {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  rssMb: number;
  /** CPU per request in µs, measured over the run: the server's processes, PostgreSQL's, wrk's. */
  cpu: { server: number; postgres: number; wrk: number };
  /** The machine's busy cores during the run (all processes, this script and anything else included). */
  busyCores: number;
}

/** The embedded PostgreSQL's postmaster, whose children are the backends serving both servers. */
let postmasterPid = 0;

async function measure(
  server: Server,
  token: string,
  scenario: Omit<Scenario, 'minRatio'>,
  seconds = DURATION_S,
  warmup = WARMUP_S,
  connections = CONNECTIONS,
): Promise<Measured> {
  const options = {
    url: server.origin + scenario.path,
    connections,
    method: scenario.method ?? 'GET',
    headers: { authorization: `Bearer ${token}` },
    ...(scenario.body ? { body: JSON.stringify(scenario.body) } : {}),
  };
  if (warmup > 0) await wrk({ ...options, seconds: warmup });
  const cpuNow = () => Promise.all([treeCpuSeconds(server.process.pid!), treeCpuSeconds(postmasterPid), machineBusySeconds()]);
  const before = await cpuNow();
  const result = await wrk({ ...options, seconds });
  const after = await cpuNow();
  const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(result.requests, 1);
  if (result.errors + result.non2xx > 0) {
    log(`${scenario.name} on ${server.origin}: ${result.non2xx} answers not 2xx, ${result.errors} socket errors of ${result.requests}`);
  }
  if (server.process.exitCode !== null || server.process.signalCode !== null) {
    throw new Error(`the server exited (${server.process.exitCode ?? server.process.signalCode}) during "${scenario.name}"`);
  }
  return {
    requests: result.requests,
    seconds: result.duration_us / 1e6,
    rps: result.requests / (result.duration_us / 1e6),
    p50: result.p50_us / 1000,
    p99: result.p99_us / 1000,
    errors: result.errors + result.non2xx,
    rssMb: await peakRssMb(server.process.pid!),
    cpu: { server: perRequest(after[0] - before[0]), postgres: perRequest(after[1] - before[1]), wrk: perRequest(result.cpuSeconds) },
    busyCores: (after[2] - before[2]) / (result.duration_us / 1e6),
  };
}

/**
 * Two runs of one server as one: throughput, CPU per request and busy cores over both; the median weighted by
 * requests; the larger p99 (the exact one of both together is not known) and peak RSS.
 */
function combined(a: Measured, b: Measured): Measured {
  const requests = a.requests + b.requests;
  const seconds = a.seconds + b.seconds;
  const byRequests = (x: number, y: number) => (x * a.requests + y * b.requests) / Math.max(requests, 1);
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50: byRequests(a.p50, b.p50),
    p99: Math.max(a.p99, b.p99),
    errors: a.errors + b.errors,
    rssMb: Math.max(a.rssMb, b.rssMb),
    cpu: {
      server: byRequests(a.cpu.server, b.cpu.server),
      postgres: byRequests(a.cpu.postgres, b.cpu.postgres),
      wrk: byRequests(a.cpu.wrk, b.cpu.wrk),
    },
    busyCores: (a.busyCores * a.seconds + b.busyCores * b.seconds) / seconds,
  };
}

/**
 * A scenario on the service and the baseline, interleaved: each warmed up, then half the run's time on the service,
 * half on the baseline, and again, so that a machine that slows down or speeds up for a while (these are shared
 * machines) weighs on both sides alike rather than on whichever ran then.
 */
async function measurePair(service: Server, baseline: Server, token: string, scenario: Omit<Scenario, 'minRatio'>) {
  const half = DURATION_S / 2;
  const firstOurs = await measure(service, token, scenario, half);
  const firstTheirs = await measure(baseline, token, scenario, half);
  const ours = combined(firstOurs, await measure(service, token, scenario, half, 0));
  const theirs = combined(firstTheirs, await measure(baseline, token, scenario, half, 0));
  return { ours, theirs };
}

const FLOOD_BUDGET_PER_MINUTE = 600;
const FLOOD_RATE = 1000;
const FLOOD_CONNECTIONS = 10;
/** The neighbour's requests per second: its idle and flooded phases together stay within its own budget of 600 a minute. */
const NEIGHBOUR_RATE = 8;
const BUDGET_SECONDS = 20;

interface Latencies {
  count: number;
  p50: number;
  p99: number;
}

/** `rate` requests per second, one at a time, for `seconds`: their latencies (ms) and how many did not answer 200. */
async function sample(url: string, token: string, rate: number, seconds: number): Promise<{ latencies: Latencies; errors: number }> {
  const times: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  for (let next = performance.now(); next < end; next += 1000 / rate) {
    await sleep(Math.max(0, next - performance.now()));
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    times.push(performance.now() - started);
    if (res.status !== 200) errors += 1;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { latencies: { count: times.length, p50: at(0.5), p99: at(0.99) }, errors };
}

/** Two small workspaces of the bench user: B's list sampled idle, then while A is flooded past its budget. */
async function budgetRun(server: Server, databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client
    .query<{ id: string }>(`SELECT id FROM organizations WHERE slug IN ('bench-small-1', 'bench-small-2') ORDER BY slug`)
    .finally(() => client.end());
  const [flooded, neighbour] = rows.map((row) => `${server.origin}/api/v1/organizations/${row.id}/companies/?limit=50`) as [string, string];
  const token = await signIn(server.origin);
  // Warm-up of the list path on workspace A, whose budget the flood spends anyway.
  await sample(flooded, token, 5, 2);
  const idle = await sample(neighbour, token, NEIGHBOUR_RATE, BUDGET_SECONDS);
  const [flood, beside] = await Promise.all([
    wrk({
      url: flooded,
      connections: FLOOD_CONNECTIONS,
      seconds: BUDGET_SECONDS,
      method: 'GET',
      headers: { authorization: `Bearer ${token}` },
      delayMs: (FLOOD_CONNECTIONS * 1000) / FLOOD_RATE,
    }),
    sample(neighbour, token, NEIGHBOUR_RATE, BUDGET_SECONDS),
  ]);
  return { idle: idle.latencies, flooded: beside.latencies, flood, neighbourErrors: idle.errors + beside.errors };
}

function table(header: string[], lines: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...lines.map(format)];
}
const mark = (met: boolean) => (met ? 'met   ' : 'MISSED');

/**
 * Development knobs (the official figures use neither): BENCH_DIR keeps the seeded cluster in that folder and reuses
 * it on the next run (seeding is skipped); BENCH_ONLY runs only the parts whose names start with one of its
 * comma-separated prefixes (scenario names, "search" for the matrix, "pipeline" for issue 27's deals and tasks,
 * "WEB_CONCURRENCY").
 */
const keptDir = process.env.BENCH_DIR ? path.resolve(process.env.BENCH_DIR) : undefined;
const only = process.env.BENCH_ONLY?.split(',')
  .map((prefix) => prefix.trim())
  .filter(Boolean);
const selected = (name: string) => !only || only.some((prefix) => name.startsWith(prefix));
/**
 * BENCH_ONLY=pipeline and BENCH_ONLY=write-cost (which seeds its own databases) need none of the million-row workspaces:
 * they are then left empty (seeding takes minutes).
 */
const companiesNeeded = !only || only.some((prefix) => !'pipeline'.startsWith(prefix) && !'write-cost'.startsWith(prefix));

/** Concurrent clients of the search and sort cells (issue 22: 20 clients asking back to back). */
const SEARCH_CLIENTS = 20;
/** A full first page: what a client that wants 50 records waits for. */
const FULL_PAGE = 50;

interface Flow {
  ms: number;
  requests: number;
  records: number;
  ok: boolean;
}

/**
 * What a client does for one full page: GET `pathname`, then follow `Link: rel="next"` until it holds FULL_PAGE
 * records or no link is left, counting every request. The time is the whole flow's.
 */
async function fullPage(server: Server, token: string, pathname: string): Promise<Flow> {
  const started = performance.now();
  let url: string | undefined = server.origin + pathname;
  let requests = 0;
  let records = 0;
  let ok = true;
  while (url && records < FULL_PAGE) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    requests += 1;
    ok &&= res.ok;
    records += ((await res.json()) as unknown[]).length;
    const next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    url = next ? server.origin + next : undefined;
  }
  return { ms: performance.now() - started, requests, records, ok };
}

/**
 * The slowest of CELL_IDLE_REQUESTS full-page flows, one after the other, on an otherwise idle server, after one flow
 * whose time is reported apart (`cold`). It first lets the server settle: the previous cell's loaded run has just
 * ended, and the collection of its garbage and the closing of its sockets would otherwise land on the first flow
 * (measured: about 25–35 ms on the first, 2–3 ms on the others). The flow before the timed ones reads the cell's pages
 * into PostgreSQL's buffers: the bench starts its database afresh, and a cell's first flow copied its heap pages from
 * the operating system's cache (a term in 0.05 % of the rows: 160 ms, then 8–10 ms), which on a running
 * installation its earlier searches have done; the issue's own figures are warm ones too.
 */
async function idleFlow(server: Server, token: string, pathname: string): Promise<Flow & { cold: number }> {
  await sleep(IDLE_SETTLE_MS);
  const first = await fullPage(server, token, pathname);
  let slowest: Flow | undefined;
  for (let n = 0; n < CELL_IDLE_REQUESTS; n++) {
    const flow = await fullPage(server, token, pathname);
    if (!slowest || flow.ms > slowest.ms) slowest = { ...flow, ok: flow.ok && (slowest?.ok ?? true) };
  }
  return { ...slowest!, ok: slowest!.ok && first.ok, cold: first.ms };
}

/** Issue 27's pipeline workspace: deals and tasks, "my" share of the tasks, and the idle target of both reads. */
const PIPELINE_DEALS = 100_000;
const PIPELINE_TASKS = 100_000;
const MY_TASK_SHARE = 5;
const PIPELINE_TARGET_MS = 25;
const PIPELINE_WARMUP_REQUESTS = 20;

/**
 * Seeds a workspace of PIPELINE_DEALS deals (every stage, three currencies, dense positions per stage) and PIPELINE_TASKS
 * tasks (one in MY_TASK_SHARE assigned to the bench user, half of all completed, due times spread over ±90 days, some
 * none), then measures on the idle server the slowest of CELL_IDLE_REQUESTS pipeline summaries and first pages of
 * "my open tasks, soonest due" (open and overdue, sort=due_at, 50 tasks).
 */
async function pipelineBench(url: string, service: Server, token: string) {
  const started = Date.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let organizationId: string;
  try {
    await client.query('SET synchronous_commit = off');
    // A kept cluster (BENCH_DIR) holds the previous run's pipeline workspace: seed it afresh.
    await client.query(`DELETE FROM organizations WHERE slug = 'bench-pipeline'`);
    organizationId = (
      await client.query<{ id: string }>(
        `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Bench Pipeline', 'bench-pipeline', now()) RETURNING id`,
      )
    ).rows[0]!.id;
    const { rows: users } = await client.query<{ id: string }>(`SELECT id FROM users WHERE username = 'bench'`);
    const me = users[0]!.id;
    await client.query(
      `INSERT INTO memberships (id, organization_id, user_id, role, updated_at) VALUES (gen_random_uuid(), $1, $2, 'owner', now())`,
      [organizationId, me],
    );
    await client.query(
      `INSERT INTO companies (id, organization_id, name, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'Pipeline ' || n, now(), now() FROM generate_series(1, 100) n`,
      [organizationId],
    );
    log(`seeding ${PIPELINE_DEALS.toLocaleString('en')} deals and ${PIPELINE_TASKS.toLocaleString('en')} tasks`);
    await client.query(
      `WITH c AS (SELECT array_agg(id) AS ids FROM companies WHERE organization_id = $1)
       INSERT INTO deals (id, organization_id, company_id, title, value, currency, tax_rate, amount_includes_tax, stage,
         position, lost_reason, created_at, updated_at)
       SELECT gen_random_uuid(), $1, c.ids[1 + n % 100], 'Deal ' || n, (n % 100000) / 7.0, (ARRAY['EUR','USD','GBP'])[1 + n % 3],
         (ARRAY[0, 7, 24])[1 + n % 3], n % 2 = 0, (ARRAY['lead','qualified','proposal','negotiation','won','lost'])[1 + n % 6]::deal_stage,
         n / 6, CASE WHEN n % 6 = 5 THEN 'bench' END, now() - n * interval '1 second', now()
       FROM generate_series(0, $2 - 1) n, c`,
      [organizationId, PIPELINE_DEALS],
    );
    await client.query(
      `WITH c AS (SELECT array_agg(id) AS ids FROM companies WHERE organization_id = $1)
       INSERT INTO tasks (id, organization_id, company_id, title, assigned_to, workflow_status, completed_at, due_at,
         created_at, updated_at)
       SELECT gen_random_uuid(), $1, c.ids[1 + n % 100], 'Task ' || n,
         CASE WHEN n % $4 = 0 THEN $3::uuid ELSE gen_random_uuid() END,
         CASE WHEN n % 2 = 0 THEN 'completed' ELSE 'todo' END::task_workflow_status,
         CASE WHEN n % 2 = 0 THEN now() END,
         CASE WHEN n % 11 = 0 THEN NULL ELSE now() + ((n * 7919) % 180 - 90) * interval '1 day' + (n % 86400) * interval '1 second' END,
         now() - n * interval '1 second', now()
       FROM generate_series(0, $2 - 1) n, c`,
      [organizationId, PIPELINE_TASKS, me, MY_TASK_SHARE],
    );
    // The totals rows were updated once per seeded deal in one transaction (no pruning meanwhile): without a VACUUM
    // the summary would read thousands of their dead versions, which autovacuum clears in a running service.
    await client.query('VACUUM (ANALYZE) deals, tasks, deal_pipeline_totals');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
  const seconds = (Date.now() - started) / 1000;
  const org = `/api/v1/organizations/${organizationId}`;
  const cells: Array<[string, string]> = [
    ['pipeline summary', `${org}/deals/pipeline/`],
    ['my open tasks, soonest due (50)', `${org}/tasks/?assigned_to=me&effective_status=open&effective_status=overdue&sort=due_at&limit=50`],
  ];
  const rows: string[][] = [];
  const verdicts: string[] = [];
  let errors = 0;
  for (const [name, pathname] of cells) {
    log(name);
    // The first requests of a route on a fresh process compile its Prisma query and warm the JIT: reported apart, as
    // the cold first request, not as the idle figure (the other cells' idle requests follow their loaded runs).
    const cold = await fullPage(service, token, pathname);
    for (let n = 0; n < PIPELINE_WARMUP_REQUESTS; n++) await fullPage(service, token, pathname);
    const flow = await idleFlow(service, token, pathname);
    if (!flow.ok || !cold.ok) errors += 1;
    rows.push([name, flow.ms.toFixed(1), cold.ms.toFixed(1), String(flow.records)]);
    verdicts.push(`${mark(flow.ok && flow.ms <= PIPELINE_TARGET_MS)} ${name}: <= ${PIPELINE_TARGET_MS} ms idle (${flow.ms.toFixed(1)} ms)`);
  }
  const output = [
    `Pipeline workspace (issue 27): ${PIPELINE_DEALS.toLocaleString('en')} deals and ${PIPELINE_TASKS.toLocaleString('en')} tasks ` +
      `(${(PIPELINE_TASKS / MY_TASK_SHARE).toLocaleString('en')} the bench user's, half of them open), seeded in ${seconds.toFixed(1)} s; ` +
      `the slowest of ${CELL_IDLE_REQUESTS} requests on the idle server after ${PIPELINE_WARMUP_REQUESTS} warm-up requests`,
    ...table(['read', 'ms', 'cold first ms', 'records'], rows),
    '',
  ];
  return { output, verdicts, errors };
}

/** Sizes of the search and sort indexes of companies and contacts, per million rows of their table. */
async function indexSizes(url: string): Promise<string[][]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; table: string; bytes: string; rows: string }>(`
      SELECT i.indexrelid::regclass::text AS name, t.relname AS table, pg_relation_size(i.indexrelid) AS bytes,
             (SELECT count(*) FROM companies WHERE t.relname = 'companies') + (SELECT count(*) FROM contacts WHERE t.relname = 'contacts') AS rows
      FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
      WHERE t.relname IN ('companies', 'contacts')
        AND (i.indexrelid::regclass::text LIKE '%search_text%' OR i.indexrelid::regclass::text LIKE '%name%' OR i.indexrelid::regclass::text LIKE '%updated_at%')
      ORDER BY 1`);
    return rows.map((row) => [
      row.name,
      Number(row.rows).toLocaleString('en'),
      ((Number(row.bytes) / 1024 / 1024) * (1e6 / Math.max(Number(row.rows), 1))).toFixed(0),
    ]);
  } finally {
    await client.end();
  }
}

/**
 * Issue 22's matrix (term kinds × layouts, companies and contacts; each cell: a client's full first page, its request
 * count, idle and under SEARCH_CLIENTS clients), the walk through every page of a 1 % term, issue 23's sorted first
 * pages, and the index sizes. Under load every cell is driven by wrk on its first page's URL: the idle flows show
 * each takes one request, so that request is the whole page a client waits for.
 */
async function searchBench(url: string, service: Server, token: string, organizationId: string, afterFresh: string, deep: string) {
  const org = `/api/v1/organizations/${organizationId}`;
  const output: string[] = [];
  const verdicts: string[] = [];
  let errors = 0;
  const terms = [
    ['common (1 %)', WORDS[37]!],
    ['rare (0.05 %)', 'halfpermille'],
    ['absent', 'qqzzqq'],
    ['one letter', 'k'],
    ['two letters, common', 'or'],
    ['two letters, rare', 'qj'],
    ['two letters, absent', 'qx'],
    ['digits with -', '555-0012'],
    ['% and _', '50%_'],
    ['non-ASCII (0.1 %)', 'ZÜRICH'],
    ['non-ASCII, absent', 'ß'],
  ] as const;
  const search = (collection: string, term: string, cursor?: string) =>
    `${org}/${collection}/?limit=${FULL_PAGE}&search=${encodeURIComponent(term)}${cursor ? `&cursor=${cursor}` : ''}`;
  const cells: Array<{ name: string; path: string }> = [];
  for (const [kind, term] of terms) {
    cells.push({ name: `${kind} "${term}", spread evenly`, path: search('companies', term, afterFresh) });
    cells.push({ name: `${kind} "${term}", absent from the newest 50k`, path: search('companies', term) });
    cells.push({ name: `${kind} "${term}", deep page (row 500,000)`, path: search('companies', term, deep) });
  }
  cells.push({ name: 'only in the oldest 1 % "oldtail", first page', path: search('companies', 'oldtail') });
  cells.push({ name: 'only in the oldest 1 % "oldtail", deep page', path: search('companies', 'oldtail', deep) });
  // Contacts: every term kind their seed holds (none of them is rare by design: `person4242` matches 111 rows, and
  // the non-ASCII and `%`/`_` terms match none), first page and deep page.
  const [contactDeep] = await cursorsAt(url, organizationId, [500_000], 'contacts');
  for (const [kind, term] of [
    ['common (1 %)', WORDS[37]!],
    ['rare (0.01 %)', 'person4242'],
    ['absent', 'qqzzqq'],
    ['one letter', 'k'],
    ['two letters, common', 'or'],
    ['two letters, absent', 'qx'],
    ['digits with -', '44-20-00123'],
    ['% and _, absent', '50%_'],
    ['non-ASCII, absent', 'ZÜRICH'],
  ] as const) {
    cells.push({ name: `contacts (1M): ${kind} "${term}", first page`, path: search('contacts', term) });
    cells.push({ name: `contacts (1M): ${kind} "${term}", deep page (row 500,000)`, path: search('contacts', term, contactDeep) });
  }
  /** A cell's idle flows, then its load: the table row (and the errors, counted). */
  const measureCell = async (cell: { name: string; path: string }) => {
    const idle = await idleFlow(service, token, cell.path);
    const loaded = await measure(service, token, cell, CELL_DURATION_S, 1, SEARCH_CLIENTS);
    const cellErrors = loaded.errors + (idle.ok ? 0 : 1);
    errors += cellErrors;
    const cpu = ((loaded.cpu.server + loaded.cpu.postgres) / 1000).toFixed(2);
    const row = [cell.name, String(idle.records), String(idle.requests), idle.cold.toFixed(1), idle.ms.toFixed(1)];
    return { idle, loaded, row: [...row, loaded.p50.toFixed(1), loaded.p99.toFixed(1), cpu, String(cellErrors)] };
  };
  const cellHeader = ['cell', 'records', 'requests', 'first ms', 'idle ms', 'p50 ms', 'p99 ms', 'CPU ms/page', 'errors'];
  log('search: warm-up');
  await measure(service, token, { name: 'search warm-up', path: search('companies', WORDS[0]!) }, WARMUP_S, 0);

  // The throughput scenarios' creates ('Bench Created', none of the matrix's terms) are the big workspace's newest rows:
  // with them, "absent from the newest 50k" would be absent from 50k and as many more. Those two far cells are measured
  // on that wider layout first (reported, not a target), then the creates are deleted, so the matrix measures its own.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const wider: string[][] = [];
  try {
    const created = Number(
      (
        await client.query<{ n: string }>(`SELECT count(*) AS n FROM companies WHERE organization_id = $1 AND name = 'Bench Created'`, [
          organizationId,
        ])
      ).rows[0]!.n,
    );
    if (created > 0) {
      const newest = (FRESH_COMPANIES + created).toLocaleString('en');
      for (const term of [WORDS[37]!, 'k']) {
        log(`search: "${term}", absent from the newest ${newest} (the creates kept)`);
        const cell = { name: `"${term}", absent from the newest ${newest}`, path: search('companies', term) };
        wider.push((await measureCell(cell)).row);
      }
      await client.query(`DELETE FROM companies WHERE organization_id = $1 AND name = 'Bench Created'`, [organizationId]);
      await client.query('VACUUM (ANALYZE) companies');
    }
  } finally {
    await client.end();
  }
  if (wider.length > 0) {
    output.push(
      "The far cells on a wider layout: the throughput scenarios' creates kept (reported, not a target; they are deleted before the matrix):",
      ...table(cellHeader, wider),
      '',
    );
  }
  const rows: string[][] = [];
  let worstIdle = 0;
  let worstP99 = 0;
  let mostRequests = 0;
  for (const cell of cells) {
    log(`search: ${cell.name}`);
    const { idle, loaded, row } = await measureCell(cell);
    worstIdle = Math.max(worstIdle, idle.ms);
    worstP99 = Math.max(worstP99, loaded.p99);
    mostRequests = Math.max(mostRequests, idle.requests);
    rows.push(row);
  }
  output.push(
    `Search matrix: a client's full first page (${FULL_PAGE} records, or all there are), following links and counting every ` +
      `request; first: the cell's first flow, which reads its pages into PostgreSQL's buffers; idle: the slowest of the ` +
      `${CELL_IDLE_REQUESTS} flows after it; then ${CELL_DURATION_S} s of ${SEARCH_CLIENTS} clients asking ` +
      'back to back (wrk on the first page: one request is the whole flow); CPU ms/page: server and PostgreSQL per page:',
    ...table(cellHeader, rows),
    '',
  );
  verdicts.push(`${mark(mostRequests === 1)} every search cell: a full first page in one request (most: ${mostRequests})`);
  verdicts.push(`${mark(worstIdle <= 25)} every search cell: a full first page on an idle server <= 25 ms (worst ${worstIdle.toFixed(1)})`);
  verdicts.push(`${mark(worstP99 <= 100)} every search cell: p99 <= 100 ms under ${SEARCH_CLIENTS} clients (worst ${worstP99.toFixed(1)})`);

  // Every page of a 1 % term, as a client exporting its results by hand would walk them: twice, the first walk reading
  // the term's pages (about a million rows' worth) into PostgreSQL's buffers, as the matrix's first flows do; the
  // second is judged, the first reported beside it.
  const walk = async (collection: string) => {
    const walkStarted = performance.now();
    let pages = 0;
    let records = 0;
    let next: string | undefined = service.origin + search(collection, WORDS[37]!);
    while (next) {
      const res = await fetch(next, { headers: { authorization: `Bearer ${token}` } });
      if (!res.ok) errors += 1;
      records += ((await res.json()) as unknown[]).length;
      pages += 1;
      const link = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
      next = link ? service.origin + link : undefined;
    }
    return { ms: performance.now() - walkStarted, pages, records };
  };
  for (const collection of ['companies', 'contacts']) {
    log(`search: every page of a 1 % term (${collection})`);
    await sleep(IDLE_SETTLE_MS);
    const first = await walk(collection);
    await sleep(IDLE_SETTLE_MS);
    const { ms, pages, records } = await walk(collection);
    output.push(
      `every page of "${WORDS[37]!}" (1 %) in ${collection}: ${records.toLocaleString('en')} records in ${pages} pages, ` +
        `${ms.toFixed(0)} ms (the first walk: ${first.ms.toFixed(0)} ms)`,
    );
    verdicts.push(`${mark(ms <= 2000)} every page of a 1 % term in ${collection} <= 2 s (${ms.toFixed(0)} ms, ${pages} pages)`);
  }
  output.push('');

  // Issue 23: the first page of each sort, on 1M companies and 1M contacts.
  const sortRows: string[][] = [];
  let worstSorted = 0;
  for (const collection of ['companies', 'contacts']) {
    for (const sort of ['-created_at', 'created_at', '-updated_at', 'updated_at', 'name', '-name']) {
      const cell = { name: `${collection} sort=${sort}`, path: `${org}/${collection}/?limit=${FULL_PAGE}&sort=${sort}` };
      log(`sort: ${cell.name}`);
      const idle = await idleFlow(service, token, cell.path);
      const loaded = await measure(service, token, cell, CELL_DURATION_S, 1, SEARCH_CLIENTS);
      errors += loaded.errors + (idle.ok ? 0 : 1);
      worstSorted = Math.max(worstSorted, idle.ms);
      sortRows.push([cell.name, idle.ms.toFixed(1), loaded.rps.toFixed(0), loaded.p50.toFixed(1), loaded.p99.toFixed(1)]);
    }
  }
  output.push(
    `Sorted first pages (limit ${FULL_PAGE}; idle: slowest of ${CELL_IDLE_REQUESTS} after a first flow; then ${CELL_DURATION_S} s under ${SEARCH_CLIENTS} clients):`,
    ...table(['list', 'idle ms', 'req/s', 'p50 ms', 'p99 ms'], sortRows),
    '',
  );
  verdicts.push(`${mark(worstSorted <= 25)} every sorted first page at 1M rows <= 25 ms idle (worst ${worstSorted.toFixed(1)})`);
  output.push('Search and sort indexes:', ...table(['index', 'rows of its table', 'MB per million rows'], await indexSizes(url)), '');
  return { output, verdicts, errors };
}

/** Interleaved runs (base, this build, base, …) of each side of a write cost: on a shared machine one pair varied ±15 %. */
const WRITE_COST_ROUNDS = 4;

/** A build the write cost is measured against, and the share of its create throughput this build must keep. */
interface WriteCostBase {
  ref: string;
  /** What the base is, for the table's title. */
  label: string;
  /** What this build adds to it, for the verdict. */
  adds: string;
  minRatio: number;
}

/**
 * The bases of the write cost: main just before issue 22's search and sort indexes (which may cost at most 15 %), and
 * main just before issue 27 landed (its profiles, timeline and customer codes: within 10 %), which already held issue
 * 22's indexes. Each is found by the migration it added; BENCH_BASE_REF measures against that commit alone.
 */
async function writeCostBases(): Promise<WriteCostBase[]> {
  if (process.env.BENCH_BASE_REF) {
    return [{ ref: process.env.BENCH_BASE_REF, label: 'BENCH_BASE_REF', adds: 'with what came after BENCH_BASE_REF', minRatio: 0.85 }];
  }
  const run = promisify(execFile);
  const landing = async (migration: string, firstParent: boolean) => {
    const { stdout } = await run(
      'git',
      ['log', ...(firstParent ? ['--first-parent'] : []), '--reverse', '--format=%H', '--', `prisma/migrations/${migration}`],
      { cwd: projectRoot },
    );
    const commit = stdout.split('\n')[0]?.trim();
    if (!commit) throw new Error(`cannot find the commit that added ${migration}: set BENCH_BASE_REF`);
    return commit;
  };
  return [
    {
      ref: `${await landing('20261125080213_crm_search_indexes', false)}^`,
      label: 'main before issue 22',
      adds: 'with the search and sort indexes (issue 22)',
      minRatio: 0.85,
    },
    {
      // Issue 27 came to main in a merge: its first parent is main as it was before.
      ref: `${await landing('20261125083334_crm_profiles_archive_activity', true)}^1`,
      label: 'main before issue 27',
      adds: 'with the CRM profiles, timeline and customer codes (issue 27)',
      minRatio: 0.9,
    },
  ];
}

async function writeCostBench(url: string, workDir: string, jwtSecret: string, against: WriteCostBase) {
  const output: string[] = [];
  const verdicts: string[] = [];
  let errors = 0;
  const run = promisify(execFile);
  const { ref } = against;
  const baseDir = path.join(workDir, 'write-cost-base');
  log(`write cost: building ${ref} in ${baseDir}`);
  await rm(baseDir, { recursive: true, force: true });
  await run('git', ['worktree', 'add', '--force', '--detach', baseDir, ref], { cwd: projectRoot });
  const servers: Server[] = [];
  try {
    await symlink(path.join(projectRoot, 'node_modules'), path.join(baseDir, 'node_modules'));
    await run('npm', ['run', '--silent', 'build'], { cwd: baseDir, maxBuffer: 64 * 1024 * 1024 });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const databases: Record<'base' | 'ours', string> = { base: '', ours: '' };
    try {
      for (const side of ['base', 'ours'] as const) {
        await admin.query(`DROP DATABASE IF EXISTS bench_write_${side}`);
        await admin.query(`CREATE DATABASE bench_write_${side}`);
        const target = new URL(url);
        target.pathname = `/bench_write_${side}`;
        databases[side] = target.toString();
      }
    } finally {
      await admin.end();
    }
    await run(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: baseDir,
      env: { ...process.env, DATABASE_URL: databases.base },
    });
    await run(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: databases.ours },
    });
    const targets: Record<'base' | 'ours', { server: Server; token: string; org: string; company: string }> = {} as never;
    for (const side of ['base', 'ours'] as const) {
      const client = new pg.Client({ connectionString: databases[side] });
      await client.connect();
      let organizationId: string;
      try {
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Bench writes', 'bench-writes', now()) RETURNING id`,
        );
        organizationId = rows[0]!.id;
        const { rows: users } = await client.query<{ id: string }>(
          `INSERT INTO users (id, username, email, password_hash, updated_at)
           VALUES (gen_random_uuid(), 'bench', 'bench@example.test', $1, now()) RETURNING id`,
          [await hashPassword(PASSWORD)],
        );
        await client.query(
          `INSERT INTO memberships (id, organization_id, user_id, role, updated_at) VALUES (gen_random_uuid(), $1, $2, 'owner', now())`,
          [organizationId, users[0]!.id],
        );
      } finally {
        await client.end();
      }
      const dir = side === 'base' ? baseDir : projectRoot;
      const server = await startService(databases[side], path.join(workDir, `write-cost-${side}-data`), jwtSecret, 1, dir);
      servers.push(server);
      const token = await signIn(server.origin);
      const res = await fetch(`${server.origin}/api/v1/organizations/${organizationId}/companies/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Contacts home' }),
      });
      const company = (await res.json()) as { id: string };
      targets[side] = { server, token, org: `/api/v1/organizations/${organizationId}`, company: company.id };
    }
    const rows: string[][] = [];
    for (const kind of ['company', 'contact'] as const) {
      const scenario = (side: 'base' | 'ours') => ({
        name: `${kind} create`,
        method: 'POST' as const,
        path: `${targets[side].org}/${kind === 'company' ? 'companies' : 'contacts'}/`,
        body:
          kind === 'company'
            ? {
                name: 'Bench Created Zürich Labs',
                email: 'bench-{n}@created.example',
                phone_number: '+1-555-0100',
                website: 'https://created.example',
              }
            : { company_id: targets[side].company, first_name: 'Bench', last_name: 'Created', email: 'bench@created.example' },
      });
      log(`write cost: ${kind} create, base and ours, interleaved`);
      const half = DURATION_S / 2;
      let base = await measure(targets.base.server, targets.base.token, scenario('base'), half, WARMUP_S, SEARCH_CLIENTS);
      let ours = await measure(targets.ours.server, targets.ours.token, scenario('ours'), half, WARMUP_S, SEARCH_CLIENTS);
      for (let round = 1; round < WRITE_COST_ROUNDS; round++) {
        base = combined(base, await measure(targets.base.server, targets.base.token, scenario('base'), half, 0, SEARCH_CLIENTS));
        ours = combined(ours, await measure(targets.ours.server, targets.ours.token, scenario('ours'), half, 0, SEARCH_CLIENTS));
      }
      errors += base.errors + ours.errors;
      const ratio = ours.rps / base.rps;
      rows.push([
        `${kind} create`,
        base.rps.toFixed(0),
        ours.rps.toFixed(0),
        `${(ratio * 100).toFixed(0)} %`,
        base.p99.toFixed(1),
        ours.p99.toFixed(1),
        `${base.cpu.server.toFixed(0)} / ${base.cpu.postgres.toFixed(0)}`,
        `${ours.cpu.server.toFixed(0)} / ${ours.cpu.postgres.toFixed(0)}`,
      ]);
      verdicts.push(
        `${mark(ratio >= against.minRatio)} ${kind} create ${against.adds} >= ${against.minRatio * 100} % of ${against.label} (${(ratio * 100).toFixed(0)} %)`,
      );
    }
    output.push(
      `Write cost: this build against ${ref} (${against.label}), each on its own database, ` +
        `${SEARCH_CLIENTS} connections, interleaved ${DURATION_S / 2} s runs, ${WRITE_COST_ROUNDS} of each:`,
      ...table(
        ['scenario', `base req/s`, 'req/s', 'ratio', 'base p99 ms', 'p99 ms', 'base CPU µs/req (server / PG)', 'CPU µs/req (server / PG)'],
        rows,
      ),
      '',
    );
  } finally {
    for (const server of servers) await stopServer(server);
    await run('git', ['worktree', 'remove', '--force', baseDir], { cwd: projectRoot }).catch(() => undefined);
  }
  return { output, verdicts, errors };
}

async function main(): Promise<void> {
  const reuse = keptDir !== undefined && existsSync(path.join(keptDir, 'seeded.json'));
  const workDir = keptDir ?? (await mkdtemp(path.join(tmpdir(), 'crm-bench-')));
  let postgres: RunningPostgres | undefined;
  const servers = new Set<Server>();
  const cleanup = async () => {
    for (const server of servers) await stopServer(server);
    if (postgres) await postgres.stop();
    if (!keptDir) await rm(workDir, { recursive: true, force: true });
  };
  const onSignal = () => {
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const started = async (start: Promise<Server>) => {
    const server = await start;
    servers.add(server);
    return server;
  };
  const stopped = async (server: Server) => {
    await stopServer(server);
    servers.delete(server);
  };
  try {
    // The cluster goes straight into the temporary folder: startEmbeddedPostgres opens it to PostgreSQL's user (root runs).
    postgres = await startEmbeddedPostgres({ dataDir: workDir });
    postmasterPid = Number((await readFile(path.join(workDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
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
    const jwtSecret = randomBytes(32).toString('hex');
    const appDir = path.join(workDir, 'app');
    const [afterFresh, deep] =
      selected('search') && companiesNeeded ? await cursorsAt(postgres.url, seeded.organizationId, [FRESH_COMPANIES, 500_000]) : [];
    const service = await started(startService(postgres.url, appDir, jwtSecret, 1));
    // Only the throughput scenarios compare with the baseline: a run of other parts (BENCH_ONLY) does not start it.
    let baseline: Server | undefined;
    const token = await signIn(service.origin);
    const org = `/api/v1/organizations/${seeded.organizationId}`;
    const output: string[] = [
      `Seeding: ${seeded.seconds.toFixed(1)} s (1 workspace with ${(BIG_COMPANIES + FRESH_COMPANIES).toLocaleString('en')} companies ` +
        `(the newest ${FRESH_COMPANIES.toLocaleString('en')} match no search term) and ${BIG_CONTACTS.toLocaleString('en')} contacts, ` +
        `${SMALL_WORKSPACES} small workspaces)`,
      `wrk: 1 thread, ${CONNECTIONS} connections; each scenario after a ${WARMUP_S} s warm-up of each server, interleaved: ` +
        `service ${DURATION_S / 2} s, baseline ${DURATION_S / 2} s, twice (p99: the larger of the two); server LOG_LEVEL=warn; ` +
        "peak RSS is the largest VmHWM of the server's processes; CPU µs/req is a process tree's CPU time (/proc) over the " +
        'requests served',
      '',
    ];
    const verdicts: string[] = [];
    let errors = 0;
    let peakRss = 0;

    const scenarios: Scenario[] = [
      { name: 'company list (limit 50)', path: `${org}/companies/?limit=50`, minRatio: 0.85 },
      { name: 'contact list (limit 50)', path: `${org}/contacts/?limit=50`, minRatio: 0.85 },
      { name: 'GET /auth/me/', path: '/api/v1/auth/me/', minRatio: 0.85 },
      {
        name: 'company create',
        path: `${org}/companies/`,
        method: 'POST',
        body: { name: 'Bench Created', email: 'bench-{n}@created.example' },
        minRatio: 0.8,
      },
    ];
    const rows: string[][] = [];
    /** The company list with one process each, which the WEB_CONCURRENCY=2 runs are compared with. */
    let singleList: { service: Measured; baseline: Measured } | undefined;
    for (const scenario of scenarios.filter((s) => selected(s.name))) {
      log(`${scenario.name}: service and baseline, interleaved`);
      baseline ??= await started(startBaseline(postgres.url, jwtSecret));
      const { ours, theirs } = await measurePair(service, baseline, token, scenario);
      if (scenario.name.startsWith('company list')) singleList = { service: ours, baseline: theirs };
      const ratio = ours.rps / theirs.rps;
      errors += ours.errors + theirs.errors;
      peakRss = Math.max(peakRss, ours.rssMb);
      rows.push([
        scenario.name,
        ours.rps.toFixed(0),
        theirs.rps.toFixed(0),
        `${(ratio * 100).toFixed(0)} %`,
        ours.p50.toFixed(1),
        ours.p99.toFixed(1),
        theirs.p99.toFixed(1),
        ours.cpu.server.toFixed(0),
        theirs.cpu.server.toFixed(0),
        ours.cpu.postgres.toFixed(0),
        String(ours.errors + theirs.errors),
        ours.rssMb.toFixed(0),
      ]);
      verdicts.push(
        `${mark(ratio >= scenario.minRatio)} ${scenario.name}: >= ${scenario.minRatio * 100} % of the baseline ` +
          `(${(ratio * 100).toFixed(0)} %)`,
      );
    }
    if (rows.length > 0) {
      output.push(
        ...table(
          [
            'scenario',
            'req/s',
            'baseline req/s',
            'ratio',
            'p50 ms',
            'p99 ms',
            'baseline p99 ms',
            'CPU µs/req',
            'baseline CPU µs/req',
            'PostgreSQL CPU µs/req',
            'errors',
            'peak RSS MB',
          ],
          rows,
        ),
        '',
      );
    }
    if (baseline) await stopped(baseline);

    if (selected('search')) {
      const result = await searchBench(postgres.url, service, token, seeded.organizationId, afterFresh!, deep!);
      errors += result.errors;
      output.push(...result.output);
      verdicts.push(...result.verdicts);
    }
    if (selected('pipeline')) {
      const result = await pipelineBench(postgres.url, service, token);
      errors += result.errors;
      output.push(...result.output);
      verdicts.push(...result.verdicts);
    }
    if (selected('write-cost')) {
      for (const base of await writeCostBases()) {
        const result = await writeCostBench(postgres.url, workDir, jwtSecret, base);
        errors += result.errors;
        output.push(...result.output);
        verdicts.push(...result.verdicts);
      }
    }
    await stopped(service);

    if (selected('WEB_CONCURRENCY') && singleList !== undefined) {
      log('company list with WEB_CONCURRENCY=2');
      const two = await started(startService(postgres.url, appDir, jwtSecret, 2));
      const measured = await measure(two, await signIn(two.origin), scenarios[0]!);
      await stopped(two);
      // The same for the baseline: what a second process can gain at all on this machine, where both processes share
      // its cores with PostgreSQL and wrk.
      log('company list, baseline with 2 processes');
      const twoBaselines = await started(startBaseline(postgres.url, jwtSecret, 2));
      const measuredBaseline = await measure(twoBaselines, token, scenarios[0]!);
      await stopped(twoBaselines);
      errors += measured.errors + measuredBaseline.errors;
      peakRss = Math.max(peakRss, measured.rssMb);
      const gain = measured.rps / singleList.service.rps;
      const baselineGain = measuredBaseline.rps / singleList.baseline.rps;
      // What a second process can use at most is what the first one left idle: throughput cannot grow beyond the
      // machine's cores over the cores the one-process run kept busy (the servers, PostgreSQL and wrk all scale with it).
      const cores = availableParallelism();
      const ceiling = cores / singleList.service.busyCores;
      const baselineCeiling = cores / singleList.baseline.busyCores;
      const split = (run: Measured) =>
        `server ${((run.cpu.server * run.rps) / 1e6).toFixed(2)}, PostgreSQL ${((run.cpu.postgres * run.rps) / 1e6).toFixed(2)}, ` +
        `wrk ${((run.cpu.wrk * run.rps) / 1e6).toFixed(2)}`;
      output.push(
        `company list with WEB_CONCURRENCY=2: ${measured.rps.toFixed(0)} req/s, p99 ${measured.p99.toFixed(1)} ms, ` +
          `${gain.toFixed(2)}× one process (${singleList.service.rps.toFixed(0)} req/s); peak RSS per process ${measured.rssMb.toFixed(0)} MB`,
        `baseline with 2 processes: ${measuredBaseline.rps.toFixed(0)} req/s, ${baselineGain.toFixed(2)}× its one process ` +
          `(${singleList.baseline.rps.toFixed(0)} req/s)`,
        `the one-process runs kept ${singleList.service.busyCores.toFixed(2)} (service) and ${singleList.baseline.busyCores.toFixed(2)} ` +
          `(baseline) of the machine's ${cores} cores busy (${split(singleList.service)}; baseline ${split(singleList.baseline)}): ` +
          `more processes can gain at most ${ceiling.toFixed(2)}× and ${baselineCeiling.toFixed(2)}× here`,
        '',
      );
      // Not a target any more (issue 22 retired "two processes >= 1.3× one"): on 2 cores shared with PostgreSQL and wrk
      // the gain is bounded by the idle share the ceiling above prints.
      output.push(
        `(WEB_CONCURRENCY=2 gain ${gain.toFixed(2)}× against a ceiling of ${ceiling.toFixed(2)}× here: reported, not a target)`,
        '',
      );
    }
    if (selected('budget')) {
      log('request budgets: a neighbour idle, then beside a paced flood');
      const budgeted = await started(
        startService(postgres.url, appDir, jwtSecret, 1, projectRoot, { RATE_LIMIT_WORKSPACE_PER_MINUTE: String(FLOOD_BUDGET_PER_MINUTE) }),
      );
      const result = await budgetRun(budgeted, postgres.url);
      await stopped(budgeted);
      errors += result.neighbourErrors;
      const ratio = result.flooded.p99 / result.idle.p99;
      output.push(
        `Request budgets (RATE_LIMIT_WORKSPACE_PER_MINUTE=${FLOOD_BUDGET_PER_MINUTE}): workspace A flooded by wrk, paced to at most ` +
          `${FLOOD_RATE}/s (${FLOOD_CONNECTIONS} connections, each waiting ${(FLOOD_CONNECTIONS * 1000) / FLOOD_RATE} ms before a request), ` +
          `${BUDGET_SECONDS} s; workspace B's company list (limit 50) sampled ${NEIGHBOUR_RATE}/s, one at a time, ${BUDGET_SECONDS} s idle ` +
          'then during the flood (the same run, so only the ratio is compared):',
        ...table(
          ['neighbour (workspace B)', 'requests', 'p50 ms', 'p99 ms'],
          [
            ['idle', String(result.idle.count), result.idle.p50.toFixed(1), result.idle.p99.toFixed(1)],
            ['beside the flood', String(result.flooded.count), result.flooded.p50.toFixed(1), result.flooded.p99.toFixed(1)],
          ],
        ),
        `flood (workspace A): ${result.flood.requests} requests, ${(result.flood.requests / (result.flood.duration_us / 1e6)).toFixed(0)} req/s, ` +
          `${((result.flood.non2xx / Math.max(result.flood.requests, 1)) * 100).toFixed(1)} % answered 429 (non-2xx), ` +
          `${result.flood.errors} socket errors`,
        '',
      );
      verdicts.push(
        `${mark(ratio <= 1.5)} request budgets: the neighbour's list p99 beside a flood <= 1.5× its idle p99 (${ratio.toFixed(2)}×: ` +
          `${result.flooded.p99.toFixed(1)} vs ${result.idle.p99.toFixed(1)} ms)`,
      );
    }
    verdicts.push(`${mark(errors === 0)} zero errors (${errors})`);
    verdicts.push(`${mark(peakRss <= MAX_RSS_MB)} peak RSS per server process <= ${MAX_RSS_MB} MB (${peakRss.toFixed(0)})`);
    console.log([...output, 'Targets:', ...verdicts.map((line) => `  ${line}`)].join('\n'));
  } catch (error) {
    for (const server of servers) process.stderr.write(server.output.join(''));
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
