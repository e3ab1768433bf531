// Load benchmark: seeds 1,000,000 companies into a throwaway embedded PostgreSQL, starts the built server and a bare
// baseline server (scripts/bench-baseline.ts) on it, drives both with wrk, interleaved, and prints req/s,
// latency, errors, peak RSS and the service/baseline ratio; then the search matrix, sorted pages and index sizes, the
// write cost of those indexes against main before them, and the WEB_CONCURRENCY=2 gain.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { hashPassword } from '../src/lib/passwords.js';
import { projectRoot } from '../src/lib/project-root.js';
import { wrk } from './wrk.js';
import {
  BIG_COMPANIES,
  BIG_CONTACTS,
  CELL_DURATION_S,
  CELL_IDLE_REQUESTS,
  combined,
  CONNECTIONS,
  cursorsAt,
  DURATION_S,
  FRESH_COMPANIES,
  FULL_PAGE,
  fullPage,
  IDLE_SETTLE_MS,
  idleFlow,
  log,
  mark,
  MAX_RSS_MB,
  measure,
  type Measured,
  measurePair,
  PASSWORD,
  type Scenario,
  SEARCH_CLIENTS,
  seed,
  type Seeded,
  type Server,
  signIn,
  SMALL_WORKSPACES,
  startBaseline,
  startService,
  stopServer,
  table,
  WARMUP_S,
  watchPostmaster,
  WORDS,
} from './bench-kit.js';

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
    watchPostmaster(Number((await readFile(path.join(workDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]));
    await applyMigrations(postgres.url);
    let seeded: Seeded;
    if (reuse) {
      seeded = JSON.parse(await readFile(path.join(workDir, 'seeded.json'), 'utf8')) as Seeded;
      log(`reusing the data seeded in ${workDir}`);
    } else {
      seeded = await seed(postgres.url, companiesNeeded);
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
