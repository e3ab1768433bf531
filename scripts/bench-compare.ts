// Side by side: this build against an older one (BENCH_BASE_REF) on the same million rows, list, search and create
// cells alternating between the two, the median of BENCH_ROUNDS rounds, and the plan of one list on each.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { setOrganizationStatement } from '../src/db/organization-setting.js';
import { listQuery } from '../src/db/page-query.js';
import { SERVING_ROLE } from '../src/db/serving-role.js';
import { projectRoot } from '../src/lib/project-root.js';
import { companyPage } from '../src/modules/companies/record.js';
import {
  cursorsAt,
  FRESH_COMPANIES,
  log,
  type Measured,
  measure,
  median,
  type Scenario,
  type Seeded,
  seed,
  type Server,
  signIn,
  startService,
  stopServer,
  table,
  watchPostmaster,
} from './bench-kit.js';

const run = promisify(execFile);
const BASE_REF = process.env.BENCH_BASE_REF;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const MIN_RATIO = Number(process.env.BENCH_MIN_RATIO ?? 0.97);
/** Only the cells whose names start with one of these comma-separated prefixes (development, as in make bench). */
const ONLY = process.env.BENCH_ONLY?.split(',')
  .map((prefix) => prefix.trim())
  .filter(Boolean);
/** The clients of every cell: the search matrix's (issue 22: 20 clients asking back to back). */
const CLIENTS = 20;

type Side = 'base' | 'ours';
interface Target {
  server: Server;
  token: string;
  url: string;
}

/** Runs a script of the build in `cwd` against `databaseUrl` (its own migrations). */
const migrate = (cwd: string, databaseUrl: string) =>
  run(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], { cwd, env: { ...process.env, DATABASE_URL: databaseUrl } });

/** `url` with another database. */
const databaseUrl = (url: string, database: string) => {
  const target = new URL(url);
  target.pathname = `/${database}`;
  return target.toString();
};

/**
 * The plan of the company list's first page as each side runs it: the base as the owner, this build as the serving
 * role with the workspace set, as its requests do. The policy's condition must be met by the same index, not by a
 * filter after it.
 */
async function listPlans(urls: Record<Side, string>, organizationId: string): Promise<string[]> {
  const query = listQuery(organizationId, companyPage, { order: { sort: 'created_at', descending: true }, limit: 50 });
  const output: string[] = [];
  for (const side of ['base', 'ours'] as const) {
    const client = new pg.Client({ connectionString: urls[side] });
    await client.connect();
    try {
      await client.query('BEGIN');
      if (side === 'ours') {
        await client.query(`SET LOCAL ROLE ${SERVING_ROLE}`);
        await client.query(setOrganizationStatement(organizationId));
      }
      // This build's list query names columns later migrations added (custom_fields): the base may not have them.
      const missing = await client.query({ text: query.text, values: query.values }).then(
        () => undefined,
        (error: Error) => error.message,
      );
      if (missing !== undefined) {
        output.push(`Plan of the company list's first page, ${side}: not comparable (${missing}).`, '');
        await client.query('ROLLBACK');
        continue;
      }
      const { rows } = await client.query<{ 'QUERY PLAN': string }>({
        text: `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) ${query.text}`,
        values: query.values,
      });
      await client.query('ROLLBACK');
      output.push(
        `Plan of the company list's first page, ${side === 'base' ? `base (${BASE_REF}, owner)` : `this build (${SERVING_ROLE}, workspace set)`}:`,
      );
      output.push(...rows.map((row) => `    ${row['QUERY PLAN']}`), '');
    } finally {
      await client.end();
    }
  }
  return output;
}

async function main(): Promise<void> {
  if (!BASE_REF) throw new Error('set BENCH_BASE_REF to the commit to compare with');
  // BENCH_DIR (development only) keeps the built base and the seeded cluster there for the next run.
  const keptDir = process.env.BENCH_DIR ? path.resolve(process.env.BENCH_DIR) : undefined;
  const workDir = keptDir ?? (await mkdtemp(path.join(tmpdir(), 'crm-bench-compare-')));
  const baseDir = path.join(workDir, 'base');
  const seededFile = path.join(workDir, 'seeded.json');
  const reuse = keptDir !== undefined && existsSync(seededFile);
  let postgres: RunningPostgres | undefined;
  const servers: Server[] = [];
  try {
    if (!reuse) {
      log(`building ${BASE_REF} in ${baseDir}`);
      await run('git', ['worktree', 'add', '--force', '--detach', baseDir, BASE_REF], { cwd: projectRoot });
      await symlink(path.join(projectRoot, 'node_modules'), path.join(baseDir, 'node_modules'));
      await run('npm', ['run', '--silent', 'build'], { cwd: baseDir, maxBuffer: 64 * 1024 * 1024 });
    }
    postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
    watchPostmaster(Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]));
    const urls: Record<Side, string> = { base: databaseUrl(postgres.url, 'bench_base'), ours: databaseUrl(postgres.url, 'bench_ours') };
    let seeded: Seeded;
    if (reuse) {
      seeded = JSON.parse(await readFile(seededFile, 'utf8')) as Seeded;
      // The kept copy takes the migrations this build added since it was made.
      await migrate(projectRoot, urls.ours);
    } else {
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      await admin.query('CREATE DATABASE bench_base');
      // One seeding for both: the base's schema is seeded, copied, and the copy migrated by this build, so both sides
      // hold the same rows and statistics.
      await migrate(baseDir, urls.base);
      seeded = await seed(urls.base);
      log(`seeded in ${seeded.seconds.toFixed(0)} s`);
      await admin.query('CREATE DATABASE bench_ours TEMPLATE bench_base');
      await admin.end();
      await migrate(projectRoot, urls.ours);
      await writeFile(seededFile, JSON.stringify(seeded));
    }

    const organizationId = seeded.organizationId;
    const [afterFresh] = await cursorsAt(urls.base, organizationId, [FRESH_COMPANIES]);
    const small = new pg.Client({ connectionString: urls.base });
    await small.connect();
    const { rows } = await small.query<{ id: string }>(`SELECT id FROM organizations WHERE slug = 'bench-small-1'`);
    await small.end();
    const org = `/api/v1/organizations/${organizationId}`;
    const jwtSecret = randomBytes(32).toString('hex');
    const targets = {} as Record<Side, Target>;
    for (const side of ['base', 'ours'] as const) {
      const server = await startService(
        urls[side],
        path.join(workDir, `${side}-data`),
        jwtSecret,
        1,
        side === 'base' ? baseDir : projectRoot,
      );
      servers.push(server);
      targets[side] = { server, token: await signIn(server.origin), url: urls[side] };
    }
    const search = (term: string, table = 'companies') => `${org}/${table}/?limit=50&search=${encodeURIComponent(term)}`;
    const allCells: Array<Omit<Scenario, 'minRatio'>> = [
      { name: 'company list', path: `${org}/companies/?limit=50` },
      { name: 'company list, sort=name', path: `${org}/companies/?limit=50&sort=name` },
      { name: 'company list, lifecycle_stage', path: `${org}/companies/?limit=50&lifecycle_stage=customer` },
      { name: 'contact list', path: `${org}/contacts/?limit=50` },
      { name: 'search common "dra" (10 %)', path: search('dra') },
      { name: 'search 1 % "draymar" (none among the newest 50,000)', path: search('draymar') },
      { name: 'search 0.05 % "halfpermille"', path: search('halfpermille') },
      { name: 'search one letter "k" (none among the newest)', path: search('k') },
      { name: 'search digits "555-00012"', path: search('555-00012') },
      { name: 'search "50%_off"', path: search('50%_off') },
      { name: 'search "zürich"', path: search('zürich') },
      { name: 'search "draymar", deep cursor', path: `${search('draymar')}&cursor=${encodeURIComponent(afterFresh!)}` },
      { name: 'contact search "draymar"', path: search('draymar', 'contacts') },
      {
        name: 'company create',
        path: `/api/v1/organizations/${rows[0]!.id}/companies/`,
        method: 'POST',
        body: { name: 'Bench Created', email: 'bench-{n}@created.example' },
      },
    ];
    const cells = ONLY ? allCells.filter((cell) => ONLY.some((prefix) => cell.name.startsWith(prefix))) : allCells;
    const results = new Map<string, Record<Side, Measured[]>>(cells.map((cell) => [cell.name, { base: [], ours: [] }]));
    for (let round = 0; round < ROUNDS; round++) {
      // Which side goes first alternates with the rounds, so that neither always runs after the other's load.
      const order: Side[] = round % 2 === 0 ? ['base', 'ours'] : ['ours', 'base'];
      for (const cell of cells) {
        log(`round ${round + 1}/${ROUNDS}: ${cell.name}`);
        for (const side of order) {
          const target = targets[side];
          const measured = await measure(target.server, target.token, cell, SECONDS, round === 0 ? 3 : 1, CLIENTS);
          if (measured.errors > 0) throw new Error(`${cell.name} on ${side}: ${measured.errors} errors`);
          results.get(cell.name)![side].push(measured);
        }
      }
    }
    const lines: string[][] = [];
    const verdicts: string[] = [];
    for (const cell of cells) {
      const { base, ours } = results.get(cell.name)!;
      const ratio = median(ours.map((m, i) => m.rps / base[i]!.rps));
      const cpu = (side: Measured[]) =>
        `${median(side.map((m) => m.cpu.server)).toFixed(0)} / ${median(side.map((m) => m.cpu.postgres)).toFixed(0)}`;
      lines.push([
        cell.name,
        median(base.map((m) => m.rps)).toFixed(0),
        median(ours.map((m) => m.rps)).toFixed(0),
        `${(ratio * 100).toFixed(1)} %`,
        median(base.map((m) => m.p99)).toFixed(1),
        median(ours.map((m) => m.p99)).toFixed(1),
        cpu(base),
        cpu(ours),
      ]);
      verdicts.push(
        `${ratio >= MIN_RATIO ? 'met   ' : 'MISSED'} ${cell.name}: ${(ratio * 100).toFixed(1)} % of ${BASE_REF} (>= ${MIN_RATIO * 100} %)`,
      );
    }
    const output = [
      `This build against ${BASE_REF}, on copies of one seeded database (a workspace of ${(1_050_000).toLocaleString('en')} companies and ` +
        `1,000,000 contacts beside nine of 100,000), ${CLIENTS} connections, ${SECONDS} s per cell and side, ${ROUNDS} rounds ` +
        "alternating which side goes first; each column is the median of the rounds, the ratio the median of the rounds' ratios:",
      ...table(
        ['cell', 'base req/s', 'req/s', 'ratio', 'base p99 ms', 'p99 ms', 'base CPU µs/req (server / PG)', 'CPU µs/req (server / PG)'],
        lines,
      ),
      '',
      ...(await listPlans(urls, organizationId)),
      ...verdicts,
    ];
    process.stdout.write(`${output.join('\n')}\n`);
  } finally {
    for (const server of servers) await stopServer(server);
    if (postgres) await postgres.stop();
    if (!keptDir) {
      await run('git', ['worktree', 'remove', '--force', baseDir], { cwd: projectRoot }).catch(() => undefined);
      await rm(workDir, { recursive: true, force: true });
    }
  }
}

await main();
