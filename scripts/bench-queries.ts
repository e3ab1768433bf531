// Issue 46's query cells on a million companies and a million contacts with a spread of owners, stages, countries and
// industries: the idle full first page and the p99 under 20 clients of each, through POST …/query/ and a saved view,
// with the CPU per page and the size of every index of the two tables.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { projectRoot } from '../src/lib/project-root.js';
import { syncCustomFieldIndex } from '../src/modules/custom-fields/index-job.js';
import {
  FULL_PAGE,
  IDLE_SETTLE_MS,
  log,
  measure,
  type Scenario,
  seed,
  SEARCH_CLIENTS,
  type Server,
  signIn,
  startService,
  stopServer,
  table,
  watchPostmaster,
} from './bench-kit.js';

const run = promisify(execFile);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IDLE_FLOWS = 5;
/**
 * Requests before the idle pages: a running service has served each of its paths many times, and the first few
 * requests of a path not served before (V8 compiling its code, each pool connection's first plan of the statement)
 * take 2–4 times a warm one.
 */
const IDLE_WARMUPS = 3;
/** The owners the big workspace's records are spread over (a sales team). */
const OWNERS = 25;

/**
 * A number 0–999 fixed by a row's id and a salt: the spread of each attribute is independent of the others and of
 * the creation order.
 */
const draw = (salt: string) => `(('x' || substr(md5(id::text || '${salt}'), 1, 7))::bit(28)::int % 1000)`;

/** `CASE` over cumulative thresholds (per mille) of `draw(salt)`: each value with its share; past the last, `rest`. */
function spread(salt: string, shares: Array<[string, number]>, rest: string): string {
  const arms = shares.map(([value], n) => {
    const below = shares.slice(0, n + 1).reduce((sum, [, share]) => sum + share, 0);
    return `WHEN ${draw(salt)} < ${below} THEN ${value}`;
  });
  return `CASE ${arms.join(' ')} ELSE ${rest} END`;
}

/** Countries as a B2B CRM in Europe and North America holds them: a few large, a long tail (0.5 % each), 4 % unknown. */
const COUNTRIES: Array<[string, number]> = [
  ["'US'", 280],
  ["'GB'", 110],
  ["'DE'", 95],
  ["'FR'", 70],
  ["'CA'", 50],
  ["'NL'", 40],
  ["'AU'", 35],
  ["'ES'", 30],
  ["'IT'", 30],
  ["'SE'", 25],
  ["'CH'", 25],
  ["'IN'", 25],
  ["'BR'", 20],
  ["'JP'", 20],
  ...['AT', 'BE', 'DK', 'FI', 'NO', 'PL', 'PT', 'IE', 'CZ', 'MX', 'SG', 'NZ', 'ZA', 'AR', 'IL', 'KR', 'GR', 'HU', 'RO', 'EE'].map(
    (code): [string, number] => [`'${code}'`, 5],
  ),
];
const INDUSTRIES: Array<[string, number]> = [
  ["'Software'", 220],
  ["'Manufacturing'", 130],
  ["'Retail'", 100],
  ["'Financial services'", 90],
  ["'Healthcare'", 80],
  ["'Logistics'", 60],
  ["'Education'", 50],
  ["'Media'", 40],
  ["'Energy'", 30],
  ["'Hospitality'", 25],
  ["'Agriculture'", 15],
  ["'Aerospace'", 10],
];
const STAGES: Array<[string, number]> = [
  ["'lead'::lifecycle_stage", 450],
  ["'prospect'::lifecycle_stage", 250],
  ["'customer'::lifecycle_stage", 180],
];

/** Owners by share: the first few carry most records, as in a team with a few senior account executives. */
const ownerShares = (owners: string[]): Array<[string, number]> =>
  owners.slice(0, -1).map((id, n): [string, number] => [`'${id}'::uuid`, n < 5 ? 100 : 25]);

/**
 * Spreads the big workspace's records (the report states the spread), on the loaded rows before their indexes are
 * rebuilt; answers the owners.
 */
async function shape(client: pg.Client, organizationId: string): Promise<string[]> {
  const { rows: users } = await client.query<{ id: string }>(
    `INSERT INTO users (id, username, email, password_hash, updated_at)
     SELECT gen_random_uuid(), 'owner' || n, 'owner' || n || '@bench.example', 'x', now() FROM generate_series(1, ${OWNERS}) AS n
     RETURNING id`,
  );
  const owners = users.map((user) => user.id);
  await client.query(
    `INSERT INTO memberships (id, organization_id, user_id, role, updated_at)
     SELECT gen_random_uuid(), $1, id, 'member', now() FROM unnest($2::uuid[]) AS id`,
    [organizationId, owners],
  );
  const owner = spread('owner', ownerShares(owners), `'${owners.at(-1)}'::uuid`);
  const custom = await customFields(client, organizationId);
  log('spreading owners, stages, countries, industries, change times and custom values over the companies');
  // The search text does not change (none of its fields does): its trigger is not worth a million calls.
  await client.query('ALTER TABLE companies DISABLE TRIGGER USER');
  await client.query(
    `UPDATE companies SET assigned_to = ${owner}, lifecycle_stage = ${spread('stage', STAGES, "'inactive'::lifecycle_stage")},
       country = ${spread('country', COUNTRIES, 'NULL')}, industry = ${spread('industry', INDUSTRIES, 'NULL')},
       updated_at = created_at + make_interval(secs => ${draw('updated')} * 30000), custom_fields = ${custom}
     WHERE organization_id = $1`,
    [organizationId],
  );
  await client.query('ALTER TABLE companies ENABLE TRIGGER USER');
  log('spreading owners over the contacts');
  await client.query('ALTER TABLE contacts DISABLE TRIGGER USER');
  await client.query(`UPDATE contacts SET assigned_to = ${owner} WHERE organization_id = $1`, [organizationId]);
  await client.query('ALTER TABLE contacts ENABLE TRIGGER USER');
  // The updates left a dead copy of every row: rewrite the tables (the bench measures a compact table, as after a load).
  await client.query('VACUUM FULL companies');
  await client.query('VACUUM FULL contacts');
  return owners;
}

/**
 * Issue 47's ten company custom fields of mixed types, each set on every company of the big workspace: `plan` (a
 * select of ten options, 10 % each), `seats` (a number 0–99,999, uniform: a range of 1,000 holds 1 %), `renewal_on`
 * (a date over 1,000 days from 2025-01-01: ten days hold 1 %) and seven more. Returns the SQL of the `custom_fields`
 * map, the definitions inserted.
 */
async function customFields(client: pg.Client, organizationId: string): Promise<string> {
  const fields: Array<[key: string, type: string, options: string[], value: string]> = [
    ['plan', 'select', PLANS, `'p' || (${draw('plan')} / 100)`],
    ['seats', 'number', [], `(('x' || substr(md5(id::text || 'seats'), 1, 7))::bit(28)::int % 100000)`],
    ['renewal_on', 'date', [], `to_char(date '2025-01-01' + ${draw('renewal')}, 'YYYY-MM-DD')`],
    ['arr', 'decimal', [], `(${draw('arr')} * 1250.5)::text`],
    ['active', 'boolean', [], `${draw('active')} < 700`],
    ['serial', 'text', [], `'SN-' || substr(md5(id::text), 1, 10)`],
    ['signed_at', 'datetime', [], `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`],
    [
      'region',
      'select',
      ['emea', 'amer', 'apac', 'latam', 'other'],
      `(ARRAY['emea','amer','apac','latam','other'])[${draw('region')} / 200 + 1]`,
    ],
    ['portal', 'url', [], `'https://portal.example/' || substr(md5(id::text || 'portal'), 1, 8)`],
    [
      'tags',
      'multi_select',
      ['vip', 'partner', 'churn-risk'],
      `CASE WHEN ${draw('tags')} < 100 THEN '["vip"]'::jsonb ELSE '[]'::jsonb END`,
    ],
  ];
  for (const [position, [key, type, options]] of fields.entries()) {
    await client.query(
      `INSERT INTO custom_field_definitions (id, organization_id, object, key, label, type, options, position, updated_at)
       VALUES (gen_random_uuid(), $1, 'company', $2, $2, $3, $4::jsonb, $5, now())`,
      [organizationId, key, type, JSON.stringify(options.map((value) => ({ value, label: value }))), position],
    );
  }
  return `jsonb_build_object(${fields.map(([key, , , value]) => `'${key}', ${value}`).join(', ')})`;
}
const PLANS = Array.from({ length: 10 }, (_, n) => `p${n}`);

/** The big workspace and its owners (in the order `shape` made them) of a kept cluster. */
async function seededBefore(url: string): Promise<{ organizationId: string; seconds: number; owners: string[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: orgs } = await client.query<{ id: string }>(`SELECT id FROM organizations WHERE slug = 'bench-big'`);
    const { rows: users } = await client.query<{ id: string }>(
      `SELECT id FROM users WHERE username LIKE 'owner%' ORDER BY substr(username, 6)::int`,
    );
    return { organizationId: orgs[0]!.id, seconds: 0, owners: users.map((user) => user.id) };
  } finally {
    await client.end();
  }
}

/** A cluster kept from before issue 47's cells gets their custom fields and values (once: the update rewrites the table). */
async function addCustomValues(url: string, organizationId: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT 1 FROM custom_field_definitions WHERE organization_id = $1 LIMIT 1', [organizationId]);
    if (rows.length > 0) return;
    log('adding ten custom values to every company of the big workspace (a kept cluster from before them)');
    await client.query(`SET maintenance_work_mem = '512MB'`);
    await client.query('ALTER TABLE companies DISABLE TRIGGER USER');
    await client.query(`UPDATE companies SET custom_fields = ${await customFields(client, organizationId)} WHERE organization_id = $1`, [
      organizationId,
    ]);
    await client.query('ALTER TABLE companies ENABLE TRIGGER USER');
    await client.query('VACUUM FULL companies');
    await client.query('VACUUM (ANALYZE) companies');
  } finally {
    await client.end();
  }
}

/**
 * The indexes of the big workspace's ordered custom fields, as their job builds them when a field is created through
 * the API (the bench inserts its definitions directly); then the statistics. Idempotent: a valid index is kept.
 */
async function buildCustomFieldIndexes(url: string, organizationId: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM custom_field_definitions WHERE organization_id = $1', [
      organizationId,
    ]);
    log('building the custom fields indexes (the job of each ordered field)');
    for (const { id } of rows) await syncCustomFieldIndex({ pool }, id);
    await pool.query('ANALYZE companies');
  } finally {
    await pool.end();
  }
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** The idle full first page: one request (a query answers `limit` records in one), the slowest of IDLE_FLOWS after IDLE_WARMUPS. */
async function idlePage(server: Server, token: string, cell: Omit<Scenario, 'minRatio'>) {
  await sleep(IDLE_SETTLE_MS);
  const once = async () => {
    const started = performance.now();
    const res = await fetch(server.origin + cell.path, {
      method: cell.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, ...(cell.body ? { 'content-type': 'application/json' } : {}) },
      body: cell.body ? JSON.stringify(cell.body) : undefined,
    });
    const answer = (await res.json()) as unknown[] | { results: unknown[] };
    if (!res.ok) throw new Error(`${cell.name}: ${res.status} ${JSON.stringify(answer)}`);
    const records = Array.isArray(answer) ? answer.length : answer.results.length;
    return { ms: performance.now() - started, records };
  };
  const cold = await once();
  for (let n = 1; n < IDLE_WARMUPS; n++) await once();
  let slowest = 0;
  for (let n = 0; n < IDLE_FLOWS; n++) slowest = Math.max(slowest, (await once()).ms);
  return { ms: slowest, cold: cold.ms, records: cold.records };
}

async function main(): Promise<void> {
  // BENCH_KEEP_DIR keeps the seeded cluster there and reuses it on the next run (migrations still apply), so an index
  // can be tried without seeding again.
  const keep = process.env.BENCH_KEEP_DIR;
  const workDir = keep ? path.resolve(keep) : await mkdtemp(path.join(tmpdir(), 'crm-bench-queries-'));
  const reused = keep !== undefined && (await exists(path.join(workDir, 'cluster', 'postgres', 'PG_VERSION')));
  let postgres: RunningPostgres | undefined;
  let server: Server | undefined;
  try {
    postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
    watchPostmaster(Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]));
    const target = new URL(postgres.url);
    target.pathname = '/bench_queries';
    const url = target.toString();
    if (!reused) {
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      await admin.query('CREATE DATABASE bench_queries');
      await admin.end();
    }
    await run(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: url },
    });
    let owners: string[] = [];
    const seeded = reused
      ? await seededBefore(url).then(async (before) => {
          owners = before.owners;
          await addCustomValues(url, before.organizationId);
          return before;
        })
      : await seed(url, true, async (client, organizationId) => {
          owners = await shape(client, organizationId);
        });
    await buildCustomFieldIndexes(url, seeded.organizationId);
    log(`seeded and spread in ${((Date.now() - performance.timeOrigin) / 1000).toFixed(0)} s`);

    server = await startService(url, path.join(workDir, 'data'), randomBytes(32).toString('hex'), 1);
    const token = await signIn(server.origin);
    const org = `/api/v1/organizations/${seeded.organizationId}`;
    const query = (table: string, body: object) => ({
      path: `${org}/${table}/query/`,
      method: 'POST' as const,
      body: { limit: FULL_PAGE, ...body },
    });
    const nameContains = { filter: { field: 'name', op: 'contains', value: 'halfpermille' } };
    const created = await fetch(`${server.origin}${org}/views/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `Halfpermille ${randomBytes(3).toString('hex')}`,
        object: 'companies',
        visibility: 'workspace',
        ...nameContains,
      }),
    });
    if (!created.ok) throw new Error(`view: ${created.status} ${await created.text()}`);
    const view = (await created.json()) as { id: string };
    const and = (...conditions: object[]) => ({ and: conditions });
    const eq = (field: string, value: unknown) => ({ field, op: 'eq', value });
    const cells: Array<Omit<Scenario, 'minRatio'>> = [
      {
        name: 'owner (10 %) + stage customer, sort name',
        ...query('companies', { filter: and(eq('assigned_to', owners[1]), eq('lifecycle_stage', 'customer')), sort: [{ field: 'name' }] }),
      },
      {
        name: 'owner (2.5 %) + stage customer, sort name',
        ...query('companies', { filter: and(eq('assigned_to', owners[10]), eq('lifecycle_stage', 'customer')), sort: [{ field: 'name' }] }),
      },
      {
        name: 'country DE + stage prospect, sort -updated_at',
        ...query('companies', {
          filter: and(eq('country', 'DE'), eq('lifecycle_stage', 'prospect')),
          sort: [{ field: 'updated_at', direction: 'desc' }],
        }),
      },
      {
        name: 'country EE (0.5 %) + stage prospect, sort -updated_at',
        ...query('companies', {
          filter: and(eq('country', 'EE'), eq('lifecycle_stage', 'prospect')),
          sort: [{ field: 'updated_at', direction: 'desc' }],
        }),
      },
      { name: 'industry is_empty', ...query('companies', { filter: { field: 'industry', op: 'is_empty' } }) },
      {
        name: 'contacts of customers, sort name',
        ...query('contacts', { filter: eq('company.lifecycle_stage', 'customer'), sort: [{ field: 'name' }] }),
      },
      { name: 'name contains 0.05 % term', ...query('companies', nameContains) },
      { name: 'the same through a saved view', path: `${org}/companies/?limit=${FULL_PAGE}&view=${view.id}` },
      { name: 'custom select eq (10 %)', ...query('companies', { filter: eq('custom.plan', 'p3') }) },
      {
        name: 'custom number range (1 %)',
        ...query('companies', {
          filter: and({ field: 'custom.seats', op: 'gte', value: 40000 }, { field: 'custom.seats', op: 'lt', value: 41000 }),
        }),
      },
      {
        name: 'custom number range (0.1 %)',
        ...query('companies', {
          filter: and({ field: 'custom.seats', op: 'gte', value: 70000 }, { field: 'custom.seats', op: 'lt', value: 70100 }),
        }),
      },
      {
        name: 'custom date range (1 %)',
        ...query('companies', {
          filter: and(
            { field: 'custom.renewal_on', op: 'gte', value: '2025-06-01' },
            { field: 'custom.renewal_on', op: 'lt', value: '2025-06-11' },
          ),
        }),
      },
      { name: 'sort by custom number', ...query('companies', { sort: [{ field: 'custom.seats' }] }) },
      { name: 'sort by custom number, descending', ...query('companies', { sort: [{ field: 'custom.seats', direction: 'desc' }] }) },
      { name: 'company list (reference)', path: `${org}/companies/?limit=${FULL_PAGE}` },
    ];
    const only = process.env.BENCH_ONLY?.split(',').filter(Boolean);
    const lines: string[][] = [];
    for (const cell of only ? cells.filter((c) => only.some((prefix) => c.name.startsWith(prefix))) : cells) {
      log(cell.name);
      // A cell that fails (a first page slower than the pool's wait for a connection answers 503) is reported as such,
      // and the others still run: one slow plan must not hide the rest of the table.
      const line = await idlePage(server, token, cell).then(
        async (idle) => {
          const loaded = await measure(server!, token, cell, SECONDS, 2, SEARCH_CLIENTS);
          return [
            cell.name,
            String(idle.records),
            idle.cold.toFixed(1),
            idle.ms.toFixed(1),
            loaded.p50.toFixed(1),
            loaded.p99.toFixed(1),
            loaded.rps.toFixed(0),
            `${loaded.cpu.server.toFixed(0)} / ${loaded.cpu.postgres.toFixed(0)}`,
            String(loaded.errors),
          ];
        },
        (error: Error) => [cell.name, 'failed', error.message.slice(0, 80), '', '', '', '', '', ''],
      );
      log(line.join(' | '));
      lines.push(line);
      // Let the requests a loaded run left queued finish before the next cell's idle page.
      await sleep(5_000);
    }
    const sizes = new pg.Client({ connectionString: url });
    await sizes.connect();
    const { rows: indexes } = await sizes.query<{ table: string; name: string; mb: string }>(
      `SELECT tablename AS table, indexname AS name, round(pg_relation_size(format('%I', indexname)::regclass) / 1048576.0, 1)::text AS mb
       FROM pg_indexes WHERE tablename IN ('companies', 'contacts') ORDER BY tablename, indexname`,
    );
    const { rows: custom } = await sizes.query<{ bytes: string }>(
      `SELECT round(avg(pg_column_size(custom_fields)))::text AS bytes FROM companies WHERE organization_id = $1`,
      [seeded.organizationId],
    );
    await sizes.end();
    const output = [
      `Query cells on a workspace of 1,050,000 companies and 1,000,000 contacts (nine more of 100,000), spread over ${OWNERS} ` +
        'owners (five at 10 % each, the rest 2.5 %), stages lead 45 / prospect 25 / customer 18 / inactive 12 %, 34 countries ' +
        `(US 28 %, …, twenty at 0.5 %, 4 % none), 12 industries (15 % none). Idle: the slowest of ${IDLE_FLOWS} full first pages ` +
        `after ${IDLE_WARMUPS} warm-ups (cold: the first); loaded: ${SEARCH_CLIENTS} clients, ${SECONDS} s. Each company of the big ` +
        `workspace holds 10 custom values (custom_fields: ${custom[0]?.bytes} bytes a row on average):`,
      ...table(['cell', 'records', 'cold ms', 'idle ms', 'p50 ms', 'p99 ms', 'req/s', 'CPU µs/page (server / PG)', 'errors'], lines),
      '',
      'Indexes of companies and contacts (all workspaces: 1.95M companies, 1.09M contacts):',
      ...table(
        ['table', 'index', 'MB'],
        indexes.map((index) => [index.table, index.name, index.mb]),
      ),
    ];
    process.stdout.write(`${output.join('\n')}\n`);
  } finally {
    if (server) await stopServer(server);
    if (postgres) await postgres.stop();
    if (!keep) await rm(workDir, { recursive: true, force: true });
  }
}

await main();
