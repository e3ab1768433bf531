// What the benchmarks share: the seeded data (a million companies and contacts in one workspace beside nine small
// ones), starting and stopping servers, wrk runs with their CPU cost per request, and the tables they print.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { ensureServingRole, servingRoleUrl } from '../src/db/serving-role.js';
import { encodeCursor } from '../src/lib/pagination.js';
import { hashPassword } from '../src/lib/passwords.js';
import { projectRoot } from '../src/lib/project-root.js';
import { wrk } from './wrk.js';

export const BIG_COMPANIES = 1_000_000;
export const BIG_CONTACTS = 1_000_000;
/** The big workspace's neighbours (issue 22: nine of 100,000 rows), whose rows share every index with it. */
export const SMALL_WORKSPACES = 9;
export const SMALL_COMPANIES = 100_000;
export const SMALL_CONTACTS = 10_000;
/** The newest companies of the big workspace, seeded apart: none of them holds any search term of the matrix. */
export const FRESH_COMPANIES = 50_000;
export const CONNECTIONS = 50;
export const DURATION_S = 10;
/** Both servers get it before each scenario: the service has more code for V8 to compile than the baseline. */
export const WARMUP_S = 5;
/** A search matrix cell: single requests on the idle server, then a short run under CONNECTIONS connections. */
export const CELL_IDLE_REQUESTS = 5;
/** The pause before a cell's idle requests (see `idleMs`). */
export const IDLE_SETTLE_MS = 2_000;
export const CELL_DURATION_S = 3;
export const PASSWORD = 'bench-password-not-secret';
export const MAX_RSS_MB = 250;

// The load generator is wrk (Debian's package; `make bench` installs it), through scripts/wrk.ts: a C program whose one
// thread costs a small part of a core, where autocannon, a Node program, took most of one of the two cores the servers
// and PostgreSQL share. A body's `{n}` becomes a value unique to each request (scripts/wrk.ts), for creates whose
// fields must not repeat (a company's email).

/**
 * 100 distinct made-up words (10 stems × 10 endings): company names, emails and websites take the word of
 * `i % 100`, so searching one word matches about 1% of the companies.
 */
export const STEMS = ['kor', 'vel', 'mun', 'dra', 'sil', 'tep', 'bax', 'gor', 'lin', 'pru'];
export const ENDINGS = ['anth', 'ebrook', 'ivale', 'oria', 'usco', 'entix', 'aldo', 'ymar', 'oquin', 'etra'];
export const WORDS = STEMS.flatMap((stem) => ENDINGS.map((ending) => stem + ending));
export const sqlArray = (values: string[]) => `ARRAY[${values.map((v) => `'${v}'`).join(',')}]`;

export const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

export function freePort(): Promise<number> {
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
export function insertCompanies(organizationId: string, first: number, count: number): string {
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
export function insertFreshCompanies(organizationId: string): string {
  return `
    INSERT INTO companies (id, organization_id, name, email, phone_number, website, lifecycle_stage, created_at, updated_at)
    SELECT gen_random_uuid(), '${organizationId}', 'Freshmoor Group ' || i, 'info' || i || '@freshmoor.example',
           '+1-556-' || lpad(i::text, 7, '0'), 'https://www.freshmoor' || i || '.example', 'lead', ts, ts
    FROM generate_series(1, ${FRESH_COMPANIES}) AS i, LATERAL (SELECT now() + make_interval(secs => i) AS ts) AS v`;
}

/** `count` contacts of one organization, spread over its companies `first..` in steps of `step`. */
export function insertContacts(organizationId: string, firstCompany: number, step: number, count: number): string {
  return `
    INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, phone_number, department, job_title,
                          created_at, updated_at)
    SELECT gen_random_uuid(), '${organizationId}', md5('company-' || (${firstCompany} + (j - 1) * ${step}))::uuid,
           initcap(w), 'Person' || j, 'person' || j || '@' || w || '.example', '+44-20-' || lpad(j::text, 7, '0'),
           'Sales', 'Manager', ts, ts
    FROM generate_series(1, ${count}) AS j,
         LATERAL (SELECT (${sqlArray(WORDS)})[1 + j % 100] AS w, now() - make_interval(secs => j) AS ts) AS v`;
}

export interface Seeded {
  organizationId: string;
  seconds: number;
}

/**
 * Loads the data with the non-unique indexes of companies/contacts dropped and rebuilt afterwards (as a bulk load
 * should; unique ones back foreign keys and stay), then VACUUMs and ANALYZEs. The index definitions are read back from the migrated database, so they
 * stay the ones
 * the migrations create.
 */
export async function seed(
  url: string,
  companiesNeeded = true,
  /** Changes to the loaded rows before the indexes are rebuilt (cheaper than updating indexed rows). */
  shape?: (client: pg.Client, organizationId: string) => Promise<void>,
): Promise<Seeded> {
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
    if (shape) await shape(client, big);
    log(`rebuilding ${indexes.length} indexes`);
    for (const index of indexes) await client.query(index.definition);
    // VACUUM as well: after a million inserts autovacuum would otherwise process the table during the measurements.
    await client.query('VACUUM (ANALYZE)');

    await addBenchUser(client);
    // The seeding and the VACUUM leave the buffers dirty: write them out now rather than during the measurements.
    await client.query('CHECKPOINT');
    return { organizationId: big, seconds: (Date.now() - started) / 1000 };
  } finally {
    await client.end();
  }
}

/** The user the benches sign in as (`signIn`): an owner of every workspace of the database. */
export async function addBenchUser(client: pg.Client): Promise<void> {
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
}

/** The positions (as list cursors) of the big workspace's companies at these ranks, newest first (1 = newest). */
export async function cursorsAt(url: string, organizationId: string, ranks: number[], table = 'companies'): Promise<string[]> {
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

export interface Server {
  process: ChildProcess;
  origin: string;
  output: string[];
}

export const serverEnv = (databaseUrl: string, port: number, jwtSecret: string) => ({
  PATH: process.env.PATH,
  NODE_ENV: 'production',
  DATABASE_URL: databaseUrl,
  // Workspace requests as the serving role, which row-level security binds, as in production (`startService` makes
  // it); a build before row-level security ignores the variable.
  DATABASE_SERVING_URL: servingRoleUrl(databaseUrl),
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
export async function startProcess(
  command: string,
  env: NodeJS.ProcessEnv,
  port: number,
  readyPath: string,
  cwd = projectRoot,
): Promise<Server> {
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
export async function startService(
  databaseUrl: string,
  dataDir: string,
  jwtSecret: string,
  processes: number,
  root = projectRoot,
  extraEnv: Record<string, string> = {},
): Promise<Server> {
  await ensureServingRole(databaseUrl);
  const entry = path.join(root, 'dist', 'src', 'server.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const port = await freePort();
  const { scripts } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const env = { ...serverEnv(databaseUrl, port, jwtSecret), DATA_DIR: dataDir, WEB_CONCURRENCY: String(processes), ...extraEnv };
  return startProcess(scripts.start, env, port, '/readyz', root);
}

/** The baseline (scripts/bench-baseline.ts), on the same database and JWT secret, with `processes` processes. */
export async function startBaseline(databaseUrl: string, jwtSecret: string, processes = 1): Promise<Server> {
  const port = await freePort();
  return startProcess(
    'exec node --import tsx scripts/bench-baseline.ts',
    { ...serverEnv(databaseUrl, port, jwtSecret), WEB_CONCURRENCY: String(processes) },
    port,
    '/api/v1/auth/me/',
  );
}

export async function stopServer(server: Server): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) return;
  const exited = once(server.process, 'exit');
  server.process.kill('SIGTERM');
  const timer = setTimeout(() => server.process.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** The kernel's clock ticks per second (`getconf CLK_TCK`), the unit of /proc's CPU times. */
export const ticksPerSecond = Number((await promisify(execFile)('getconf', ['CLK_TCK'])).stdout.trim()) || 100;

/** A process's direct children (PostgreSQL's backends, the cluster's server processes). */
export const childrenOf = (pid: number) =>
  readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').then(
    (text) => text.split(' ').filter(Boolean).map(Number),
    () => [] as number[],
  );

/**
 * CPU time (user + system, in seconds) of a process and of its children: the running ones, and the ones that ended
 * (cutime and cstime, which the kernel adds up when the parent reaps them; backends end while the bench runs).
 */
export async function treeCpuSeconds(pid: number): Promise<number> {
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
export async function machineBusySeconds(): Promise<number> {
  const [, ...values] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).map(Number);
  const total = values.slice(0, 8).reduce((sum, v) => sum + v, 0);
  return (total - values[3]! - values[4]!) / ticksPerSecond;
}

/** The kernel's peak resident set (VmHWM) of the process and of each of its children (cluster workers), in MB. */
export async function peakRssMb(pid: number): Promise<number> {
  let peak = 0;
  for (const id of [pid, ...(await childrenOf(pid))]) {
    const status = await readFile(`/proc/${id}/status`, 'utf8').catch(() => '');
    peak = Math.max(peak, Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024);
  }
  return peak;
}

export async function signIn(origin: string): Promise<string> {
  const res = await fetch(`${origin}/api/v1/auth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'bench', password: PASSWORD }),
  });
  if (!res.ok) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access: string }).access;
}

export interface Scenario {
  name: string;
  path: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  /** The issue's target: the service's throughput as a share of the baseline's. */
  minRatio: number;
}

export interface Measured {
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
/** Tells `measure` whose process tree is PostgreSQL's. */
export function watchPostmaster(pid: number) {
  postmasterPid = pid;
}

export async function measure(
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
export function combined(a: Measured, b: Measured): Measured {
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
export async function measurePair(service: Server, baseline: Server, token: string, scenario: Omit<Scenario, 'minRatio'>) {
  const half = DURATION_S / 2;
  const firstOurs = await measure(service, token, scenario, half);
  const firstTheirs = await measure(baseline, token, scenario, half);
  const ours = combined(firstOurs, await measure(service, token, scenario, half, 0));
  const theirs = combined(firstTheirs, await measure(baseline, token, scenario, half, 0));
  return { ours, theirs };
}

/** The median of `values` (the mean of the middle two for an even count). */
export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export function table(header: string[], lines: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...lines.map(format)];
}
export const mark = (met: boolean) => (met ? 'met   ' : 'MISSED');
/** Concurrent clients of the search and sort cells (issue 22: 20 clients asking back to back). */
export const SEARCH_CLIENTS = 20;
/** A full first page: what a client that wants 50 records waits for. */
export const FULL_PAGE = 50;

export interface Flow {
  ms: number;
  requests: number;
  records: number;
  ok: boolean;
}

/**
 * What a client does for one full page: GET `pathname`, then follow `Link: rel="next"` until it holds FULL_PAGE
 * records or no link is left, counting every request. The time is the whole flow's.
 */
export async function fullPage(server: Server, token: string, pathname: string): Promise<Flow> {
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
export async function idleFlow(server: Server, token: string, pathname: string): Promise<Flow & { cold: number }> {
  await sleep(IDLE_SETTLE_MS);
  const first = await fullPage(server, token, pathname);
  let slowest: Flow | undefined;
  for (let n = 0; n < CELL_IDLE_REQUESTS; n++) {
    const flow = await fullPage(server, token, pathname);
    if (!slowest || flow.ms > slowest.ms) slowest = { ...flow, ok: flow.ok && (slowest?.ok ?? true) };
  }
  return { ...slowest!, ok: slowest!.ok && first.ok, cold: first.ms };
}
