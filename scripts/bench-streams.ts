// The change feed under load (issue 49): 1,000 open streams on one instance (100 in each of 10 workspaces), company
// creates at a steady 100 a second in total, and how long each event takes to reach every stream, plus the memory
// the streams hold.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../src/db/embedded-postgres.js';
import { projectRoot } from '../src/lib/project-root.js';
import { addBenchUser, childrenOf, log, type Server, signIn, startService, stopServer, table, treeCpuSeconds } from './bench-kit.js';

const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? 10);
/** Streams per workspace: the default EVENT_STREAMS_PER_WORKSPACE. */
const STREAMS = Number(process.env.BENCH_STREAMS_PER_WORKSPACE ?? 100);
/** Creates per second, in total, spread round-robin over the workspaces. */
const RATE = Number(process.env.BENCH_EVENTS_PER_SECOND ?? 100);
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 30);
/** After the last create, how long the streams get to receive its event. */
const DRAIN_MS = 5_000;

const percentile = (values: Float64Array | number[], p: number) => {
  const sorted = Float64Array.from(values).sort();
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** Resident memory (VmRSS) of the server process and its children, in MB. */
async function rssMb(pid: number): Promise<number> {
  let kb = 0;
  for (const id of [pid, ...(await childrenOf(pid))]) {
    const status = await readFile(`/proc/${id}/status`, 'utf8').catch(() => '');
    kb += Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  }
  return kb / 1024;
}

async function post(origin: string, token: string, pathname: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${origin}${pathname}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST ${pathname} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** Arrival times (performance.now()) of each company's event, per stream. */
type Arrivals = Map<string, number>;

/**
 * Opens one stream as a browser's EventSource would (a ticket in the query, no Authorization header) over a plain
 * HTTP request, reading the SSE body; resolves once the stream's first comment arrived.
 */
function openStream(origin: string, organizationId: string, ticket: string, arrivals: Arrivals): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}/api/v1/organizations/${organizationId}/events/?ticket=${encodeURIComponent(ticket)}`,
      { headers: { accept: 'text/event-stream' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        let buffered = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          const now = performance.now();
          if (!opened) {
            opened = true;
            resolve(req);
          }
          buffered += chunk;
          const frames = buffered.split('\n\n');
          buffered = frames.pop() ?? '';
          for (const frame of frames) {
            const data = frame.split('\n').find((line) => line.startsWith('data: '));
            if (!data) continue;
            const id = (JSON.parse(data.slice(6)) as { data: { id: string } }).data.id;
            if (!arrivals.has(id)) arrivals.set(id, now);
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  const workDir = await mkdtemp(path.join(tmpdir(), 'crm-bench-streams-'));
  let postgres: RunningPostgres | undefined;
  let server: Server | undefined;
  const requests: ClientRequest[] = [];
  try {
    postgres = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'cluster') });
    const postmasterPid = Number((await readFile(path.join(workDir, 'cluster', 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: postgres.url },
    });
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    const { rows } = await admin.query<{ id: string }>(
      `INSERT INTO organizations (id, name, slug, updated_at)
       SELECT gen_random_uuid(), 'Bench ' || n, 'bench-' || n, now() FROM generate_series(1, $1) AS n RETURNING id`,
      [WORKSPACES],
    );
    const organizations = rows.map((row) => row.id);
    await addBenchUser(admin);
    await admin.end();

    server = await startService(postgres.url, path.join(workDir, 'app'), randomBytes(32).toString('hex'), 1);
    const token = await signIn(server.origin);
    const pid = server.process.pid!;
    // Warm-up: a few creates and a list in each workspace compile and plan what the run uses.
    for (const organizationId of organizations) {
      await post(server.origin, token, `/api/v1/organizations/${organizationId}/companies/`, { name: 'warm-up' });
    }
    await sleep(1_000);
    const rssBefore = await rssMb(pid);

    log(`opening ${WORKSPACES * STREAMS} streams (${STREAMS} in each of ${WORKSPACES} workspaces) with tickets`);
    const streams: Array<{ organizationId: string; arrivals: Arrivals }> = [];
    const openStarted = performance.now();
    for (const organizationId of organizations) {
      const opening: Promise<ClientRequest>[] = [];
      for (let i = 0; i < STREAMS; i += 1) {
        const { ticket } = (await post(server.origin, token, `/api/v1/organizations/${organizationId}/events/tickets/`, {})) as {
          ticket: string;
        };
        const arrivals: Arrivals = new Map();
        streams.push({ organizationId, arrivals });
        opening.push(openStream(server.origin, organizationId, ticket, arrivals));
      }
      requests.push(...(await Promise.all(opening)));
    }
    const openSeconds = (performance.now() - openStarted) / 1000;
    await sleep(2_000);
    const rssAfter = await rssMb(pid);

    log(`${RATE} creates a second for ${SECONDS} s, round-robin over the workspaces`);
    const sent = new Map<string, { organizationId: string; sentAt: number; answeredAt: number }>();
    const cpuBefore = { server: await treeCpuSeconds(pid), postgres: await treeCpuSeconds(postmasterPid) };
    const total = RATE * SECONDS;
    const started = performance.now();
    const inFlight: Promise<void>[] = [];
    let failures = 0;
    for (let n = 0; n < total; n += 1) {
      // Open loop: each create leaves at its own time whatever the answers before it.
      const due = started + (n * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const organizationId = organizations[n % organizations.length]!;
      const sentAt = performance.now();
      inFlight.push(
        post(server.origin, token, `/api/v1/organizations/${organizationId}/companies/`, { name: `stream ${n}` }).then(
          (company) => {
            sent.set(company.id as string, { organizationId, sentAt, answeredAt: performance.now() });
          },
          (error: unknown) => {
            failures += 1;
            if (failures === 1) log(`first failed create: ${String(error)}`);
          },
        ),
      );
    }
    await Promise.all(inFlight);
    const sendSeconds = (performance.now() - started) / 1000;
    await sleep(DRAIN_MS);
    const cpuAfter = { server: await treeCpuSeconds(pid), postgres: await treeCpuSeconds(postmasterPid) };

    // Every (stream, event of its workspace) pair: from the create's answer, and from its request, to the stream.
    const fromAnswer: number[] = [];
    const fromRequest: number[] = [];
    let missing = 0;
    for (const { organizationId, arrivals } of streams) {
      for (const [id, create] of sent) {
        if (create.organizationId !== organizationId) continue;
        const at = arrivals.get(id);
        if (at === undefined) {
          missing += 1;
          continue;
        }
        fromAnswer.push(at - create.answeredAt);
        fromRequest.push(at - create.sentAt);
      }
    }
    const fmt = (value: number, digits = 0) => value.toFixed(digits);
    const cpuMs = (key: 'server' | 'postgres') => ((cpuAfter[key] - cpuBefore[key]) * 1000) / sent.size;
    const lines = table(
      [
        'streams',
        'open s',
        'RSS MB before / after (+ per stream kB)',
        'creates (failed)',
        'creates/s',
        'deliveries (missing)',
        'p50 / p99 / max from answer ms',
        'p50 / p99 / max from request ms',
        'CPU ms per event (server + PG)',
      ],
      [
        [
          String(streams.length),
          fmt(openSeconds, 1),
          `${fmt(rssBefore)} / ${fmt(rssAfter)} (+${fmt(((rssAfter - rssBefore) * 1024) / streams.length)})`,
          `${sent.size} (${failures})`,
          fmt(sent.size / sendSeconds, 1),
          `${fromAnswer.length} (${missing})`,
          `${fmt(percentile(fromAnswer, 50))} / ${fmt(percentile(fromAnswer, 99))} / ${fmt(percentile(fromAnswer, 100))}`,
          `${fmt(percentile(fromRequest, 50))} / ${fmt(percentile(fromRequest, 99))} / ${fmt(percentile(fromRequest, 100))}`,
          `${fmt(cpuMs('server') + cpuMs('postgres'), 2)} (${fmt(cpuMs('server'), 2)} + ${fmt(cpuMs('postgres'), 2)})`,
        ],
      ],
    );
    process.stdout.write(
      `Change streams: ${streams.length} open (${STREAMS} in each of ${WORKSPACES} workspaces, opened with tickets as ` +
        `EventSource would), ${RATE} company creates a second in total for ${SECONDS} s; one server process, embedded ` +
        'PostgreSQL; latency per (stream, event) pair; CPU of the server and PostgreSQL process trees over the run ' +
        `(+${DRAIN_MS / 1000} s drain) per create.\n${lines.join('\n')}\n`,
    );
  } finally {
    for (const req of requests) req.destroy();
    if (server) await stopServer(server);
    if (postgres) await postgres.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}

await main();
