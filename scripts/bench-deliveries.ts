// The webhook burst of issue 49: 2,000 company creates from 16 clients with and without one webhook rule, a local
// receiver, and how far the deliveries lag behind; optionally side by side with an older build (BENCH_BASE_REF).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { projectRoot } from '../src/lib/project-root.js';
import { addBenchUser, log, type Server, signIn, startService, stopServer, table, treeCpuSeconds } from './bench-kit.js';

const run = promisify(execFile);
const BASE_REF = process.env.BENCH_BASE_REF;
const CREATES = Number(process.env.BENCH_CREATES ?? 2000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const DELIVERY_TIMEOUT_MS = 120_000;
/** BENCH_PG_STATS=1: after each side, its statements by total execution time (pg_stat_statements). */
const PG_STATS = process.env.BENCH_PG_STATS === '1';

async function statementStats(url: string, label: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    if (label === 'reset') {
      await client.query('SELECT pg_stat_statements_reset()');
      return;
    }
    const { rows } = await client.query<{ ms: number; calls: number; query: string }>(
      `SELECT round(total_exec_time)::int AS ms, calls::int, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) AS query
       FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`,
    );
    process.stderr.write(`${label}: statements by total time\n${rows.map((r) => `${r.ms} ms ${r.calls}x ${r.query}`).join('\n')}\n`);
  } finally {
    await client.end();
  }
}

/** Runs the migrations of the build in `cwd` against `databaseUrl`. */
const migrate = (cwd: string, databaseUrl: string) =>
  run(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], { cwd, env: { ...process.env, DATABASE_URL: databaseUrl } });

const databaseUrl = (url: string, database: string) => {
  const target = new URL(url);
  target.pathname = `/${database}`;
  return target.toString();
};

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** The local receiver: when each company's delivery arrived (by the company id in the body). */
async function startReceiver() {
  const arrived = new Map<string, number>();
  let waiter: (() => void) | undefined;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { id: string } }).data.id;
      if (!arrived.has(id)) arrived.set(id, performance.now());
      response.writeHead(204).end();
      waiter?.();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    async waitFor(count: number) {
      const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
      while (arrived.size < count) {
        if (Date.now() > deadline) throw new Error(`only ${arrived.size} of ${count} deliveries arrived`);
        await new Promise<void>((resolve) => {
          waiter = resolve;
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()),
  };
}

interface Burst {
  seconds: number;
  /** When each created company's answer arrived (performance.now()). */
  answered: Map<string, number>;
  lastAnswer: number;
}

/** `count` company creates from CLIENTS clients at once, each client sending its next as soon as one is answered. */
async function burst(origin: string, token: string, organizationId: string, label: string, count = CREATES): Promise<Burst> {
  const answered = new Map<string, number>();
  let next = 0;
  const started = performance.now();
  const client = async () => {
    while (next < count) {
      const n = next++;
      const res = await fetch(`${origin}/api/v1/organizations/${organizationId}/companies/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `${label} ${n}`, city: 'Oslo' }),
      });
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
      answered.set(((await res.json()) as { id: string }).id, performance.now());
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const lastAnswer = Math.max(...answered.values());
  return { seconds: (lastAnswer - started) / 1000, answered, lastAnswer };
}

/** CPU milliseconds of the server's and of PostgreSQL's process trees. */
interface Cpu {
  server: number;
  postgres: number;
}
const total = (cpu: Cpu) => cpu.server + cpu.postgres;

interface SideResult {
  withoutRule: { seconds: number; rps: number; cpuPerCreateMs: Cpu };
  withRule: { seconds: number; rps: number; lagMs: number; p50Ms: number; p99Ms: number; cpuPerDeliveryMs: Cpu };
}

/** One build: a fresh database, the service, a burst without a rule, then with one webhook rule. */
async function measureSide(root: string, url: string, appDir: string, postmasterPid: number, label: string): Promise<SideResult> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug, updated_at) VALUES (gen_random_uuid(), 'Bench', 'bench', now()) RETURNING id`,
  );
  const organizationId = rows[0]!.id;
  await addBenchUser(admin);
  await admin.end();
  const receiver = await startReceiver();
  let server: Server | undefined;
  try {
    server = await startService(url, appDir, randomBytes(32).toString('hex'), 1, root, {
      AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    const token = await signIn(server.origin);
    const pid = server.process.pid!;
    const cpu = async () => ({ server: await treeCpuSeconds(pid), postgres: await treeCpuSeconds(postmasterPid) });
    const since = async (start: { server: number; postgres: number }) => {
      const now = await cpu();
      return { server: now.server - start.server, postgres: now.postgres - start.postgres };
    };
    // Warm-up: the service's first requests compile and plan.
    await burst(server.origin, token, organizationId, 'warm-up', 200);

    log(`${label}: ${CREATES} creates from ${CLIENTS} clients without a rule`);
    let before = await cpu();
    const plain = await burst(server.origin, token, organizationId, 'plain');
    await sleep(500);
    const plainCpu = await since(before);

    const rule = await fetch(`${server.origin}/api/v1/organizations/${organizationId}/automations/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', trigger: 'company.created', action_type: 'webhook', action_config: { url: receiver.url } }),
    });
    if (rule.status !== 201) throw new Error(`rule: ${rule.status} ${await rule.text()}`);
    log(`${label}: ${CREATES} creates from ${CLIENTS} clients with one webhook rule`);
    if (PG_STATS) {
      await statementStats(url, `${label}, burst without a rule (and the warm-up)`);
      await statementStats(url, 'reset');
    }
    before = await cpu();
    const hooked = await burst(server.origin, token, organizationId, 'hooked');
    await receiver.waitFor(CREATES);
    await sleep(500);
    const hookedCpu = await since(before);
    const lastDelivery = Math.max(...receiver.arrived.values());
    const latencies = [...hooked.answered].map(([id, at]) => (receiver.arrived.get(id) ?? Number.NaN) - at);
    return {
      withoutRule: {
        seconds: plain.seconds,
        rps: CREATES / plain.seconds,
        cpuPerCreateMs: { server: (plainCpu.server * 1000) / CREATES, postgres: (plainCpu.postgres * 1000) / CREATES },
      },
      withRule: {
        seconds: hooked.seconds,
        rps: CREATES / hooked.seconds,
        lagMs: lastDelivery - hooked.lastAnswer,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        // Both bursts idle 0.5 s after their last answer (or delivery): what the rule adds, per delivered event.
        cpuPerDeliveryMs: {
          server: ((hookedCpu.server - plainCpu.server) * 1000) / CREATES,
          postgres: ((hookedCpu.postgres - plainCpu.postgres) * 1000) / CREATES,
        },
      },
    };
  } finally {
    if (server) await stopServer(server);
    await receiver.close();
  }
}

async function main(): Promise<void> {
  const workDir = await mkdtemp(path.join(tmpdir(), 'crm-bench-deliveries-'));
  const baseDir = path.join(workDir, 'base');
  let postgres: RunningPostgres | undefined;
  try {
    if (BASE_REF) {
      log(`building ${BASE_REF} in ${baseDir}`);
      await run('git', ['worktree', 'add', '--force', '--detach', baseDir, BASE_REF], { cwd: projectRoot });
      await symlink(path.join(projectRoot, 'node_modules'), path.join(baseDir, 'node_modules'));
      await run('npm', ['run', '--silent', 'build'], { cwd: baseDir, maxBuffer: 64 * 1024 * 1024 });
    }
    postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
    if (PG_STATS) {
      // The statements' own costs, for finding where a delivery's PostgreSQL time goes: needs a restart to load.
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
      // Statements inside functions too (graphile-worker's add_job, the job's inserts), each counted apart.
      await admin.query(`ALTER SYSTEM SET pg_stat_statements.track = 'all'`);
      await admin.end();
      await postgres.stop();
      postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
    }
    const postmasterPid = Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    const sides: [string, string][] = [
      ...(BASE_REF ? ([[`base ${BASE_REF}`, baseDir]] as [string, string][]) : []),
      ['this build', projectRoot],
    ];
    const results: [string, SideResult][] = [];
    for (const [index, [label, root]] of sides.entries()) {
      const database = `bench_deliveries_${index}`;
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.end();
      const url = databaseUrl(postgres.url, database);
      await migrate(root, url);
      if (PG_STATS) await statementStats(url, 'reset');
      results.push([label, await measureSide(root, url, path.join(workDir, `app-${index}`), postmasterPid, label)]);
      if (PG_STATS) await statementStats(url, `${label}, burst with the rule`);
    }
    const fmt = (value: number, digits = 0) => value.toFixed(digits);
    const lines = table(
      [
        'build',
        'creates/s no rule',
        'creates/s rule',
        'ratio',
        'create time s (rule)',
        'last create → last delivery ms',
        'p50 / p99 create→delivery ms',
        'CPU ms/create (server + PG)',
        'CPU ms/delivery (server + PG)',
        'delivery/create',
      ],
      results.map(([label, { withoutRule: a, withRule: b }]) => [
        label,
        fmt(a.rps),
        fmt(b.rps),
        `${fmt((b.rps / a.rps) * 100)} %`,
        fmt(b.seconds, 2),
        fmt(b.lagMs),
        `${fmt(b.p50Ms)} / ${fmt(b.p99Ms)}`,
        `${fmt(total(a.cpuPerCreateMs), 2)} (${fmt(a.cpuPerCreateMs.server, 2)} + ${fmt(a.cpuPerCreateMs.postgres, 2)})`,
        `${fmt(total(b.cpuPerDeliveryMs), 2)} (${fmt(b.cpuPerDeliveryMs.server, 2)} + ${fmt(b.cpuPerDeliveryMs.postgres, 2)})`,
        fmt(total(b.cpuPerDeliveryMs) / total(a.cpuPerCreateMs), 2),
      ]),
    );
    process.stdout.write(
      `Webhook burst: ${CREATES} company creates from ${CLIENTS} clients, without and then with one webhook rule on ` +
        'company.created (local receiver in the bench process, excluded from CPU); one server process, embedded ' +
        'PostgreSQL; CPU = server + PostgreSQL process trees (/proc); CPU per delivery = (burst with rule − burst ' +
        `without) / ${CREATES}.\n${lines.join('\n')}\n`,
    );
  } finally {
    if (postgres) await postgres.stop();
    if (BASE_REF) await run('git', ['worktree', 'remove', '--force', baseDir], { cwd: projectRoot }).catch(() => undefined);
    await rm(workDir, { recursive: true, force: true });
  }
}

await main();
