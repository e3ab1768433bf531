// The production topology on one machine: embedded PostgreSQL primary and streaming replica, PgBouncer, Redis, service
// instances behind HAProxy (Debian's packages). Started by `make stack`, and by the rolling-restart test.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmbeddedPostgres, type RunningPostgres } from '../../src/db/embedded-postgres.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { installJobQueue } from '../../src/jobs/install.js';
import { projectRoot } from '../../src/lib/project-root.js';
import { freePort, waitForPort } from '../../test/helpers/net.js';
import { startPgBouncer, type PgBouncer } from './pgbouncer.js';
import { startReplica, type Replica } from './replica.js';

export const HAPROXY_BIN = '/usr/sbin/haproxy';
export const REDIS_BIN = '/usr/bin/redis-server';
/** SIGTERM → readiness fails for this long before the instance stops accepting: HAProxy checks every 500 ms. */
const SHUTDOWN_DELAY_MS = 1500;

/** One service process behind the load balancer; it can be stopped (SIGTERM, drains) and started again on its port. */
export interface Instance {
  name: string;
  port: number;
  start(): Promise<void>;
  /** SIGTERM, and the exit code once it has drained. */
  stop(): Promise<number | null>;
  output(): string;
}

export interface Stack {
  origin: string;
  setupToken: string;
  /** The instances' environment (secrets included), for starting another instance beside them. */
  env: NodeJS.ProcessEnv;
  primary: RunningPostgres;
  replica: Replica;
  bouncer: PgBouncer;
  instances: Instance[];
  /** Resolves once HAProxy sends requests to the instance again (its checks passed `rise` times). */
  waitUntilServing(name: string): Promise<void>;
  stop(): Promise<void>;
}

function spawnLogged(command: string, args: string[], env: NodeJS.ProcessEnv) {
  let output = '';
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  return { child, output: () => output };
}

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = await exited;
  clearTimeout(timer);
  return code;
}

/** Waits until the instance answers /readyz with 200 (it has applied migrations and listens). */
async function waitReady(origin: string, output: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`instance exited early (${child.exitCode}):\n${output()}`);
    if (
      (await fetch(`${origin}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) === 200
    )
      return;
    await sleep(100);
  }
  throw new Error(`instance not ready within 60 s:\n${output()}`);
}

/** A service process (the built server) on `port` with `env`; not started yet. */
export function serviceInstance(name: string, port: number, env: NodeJS.ProcessEnv): Instance {
  const serverJs = path.join(projectRoot, 'dist', 'src', 'server.js');
  let current: ReturnType<typeof spawnLogged> | undefined;
  return {
    name,
    port,
    async start() {
      const node = path.join(projectRoot, 'node_modules', '.bin', 'node');
      current = spawnLogged(node, ['--max-old-space-size=1024', serverJs], { ...env, PORT: String(port) });
      await waitReady(`http://127.0.0.1:${port}`, current.output, current.child);
    },
    stop: () => stopChild(current?.child),
    output: () => current?.output() ?? '',
  };
}

function haproxyConfig(frontPort: number, instances: Array<{ name: string; port: number }>, statsSocket: string): string {
  return [
    'global',
    '  maxconn 4096',
    // What HAProxy thinks of each server, for `waitUntilServing` (read-only level).
    `  stats socket ${statsSocket} mode 600 level user`,
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    // Also the longest silence of an open change stream (`GET …/events/` as text/event-stream), which sends a comment
    // line every 10 seconds: a stream stays open through HAProxy for as long as its client and instance keep it.
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout http-keep-alive 10s',
    // A connection refused by a stopping instance is tried again on the other (redispatch); a GET that got no
    // answer is retried too; a write never is once sent (it may have been applied).
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response response-timeout',
    // One request per server connection: no idle keep-alive connection to an instance that is about to close.
    '  option http-server-close',
    '  option forwardfor',
    'frontend api',
    `  bind 127.0.0.1:${frontPort}`,
    // The API's JSON answers are compressed here, at the edge (the service compresses only its document and its
    // exports: docs/integrators.md, Compression), for reads only: an answer to a write may hold a token or secret
    // beside what the caller sent, and its compressed length would tell it (BREACH). Answers already compressed pass
    // as they are.
    '  http-request del-header accept-encoding if !METH_GET !METH_HEAD',
    '  compression algo gzip',
    '  compression type application/json application/problem+json',
    '  default_backend instances',
    'backend instances',
    '  balance roundrobin',
    '  http-request disable-l7-retry if !METH_GET !METH_HEAD',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 500ms fall 1 rise 2',
    // A loaded machine may answer a check late: only a wrong answer (a draining instance's 503), not a slow one,
    // takes a server out at once.
    '  timeout check 2s',
    ...instances.map(({ name, port }) => `  server ${name} 127.0.0.1:${port} check`),
    '',
  ].join('\n');
}

/**
 * Starts every part under `dir` (the databases' data is kept across runs; the replica is made again each time) and
 * answers once HAProxy serves. `instances` service processes, each WEB_CONCURRENCY=1.
 */
export async function startStack(options: {
  dir: string;
  instances?: number;
  port?: number;
  log?: (line: string) => void;
  /** More environment for the instances (a load test raises the request budgets). */
  env?: NodeJS.ProcessEnv;
}): Promise<Stack> {
  const log = options.log ?? (() => {});
  const dir = path.resolve(options.dir);
  await mkdir(dir, { recursive: true });
  const serverJs = path.join(projectRoot, 'dist', 'src', 'server.js');
  if (!existsSync(serverJs)) throw new Error('dist/src/server.js is missing: build first (make stack does)');
  for (const [bin, pkg] of [
    ['/usr/sbin/pgbouncer', 'pgbouncer'],
    [HAPROXY_BIN, 'haproxy'],
    [REDIS_BIN, 'redis-server'],
  ]) {
    if (!existsSync(bin as string)) throw new Error(`${bin} is missing: apt-get install ${pkg}`);
  }
  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    cleanups.length = 0;
  };
  try {
    log('starting PostgreSQL (primary)');
    const primary = await startEmbeddedPostgres({ dataDir: path.join(dir, 'primary') });
    cleanups.push(primary.stop);
    await applyMigrations(primary.url);
    await installJobQueue(primary.url);
    log('making the streaming replica');
    await rm(path.join(dir, 'replica'), { recursive: true, force: true });
    // The replication slot of an earlier run would hold WAL forever: only the new replica's slot stays.
    await dropOldSlots(primary.url);
    const replica = await startReplica({
      primaryUrl: primary.url,
      primaryDataDir: path.join(dir, 'primary'),
      dir: path.join(dir, 'replica'),
    });
    cleanups.push(replica.stop);
    log('starting PgBouncer and Redis');
    const bouncer = await startPgBouncer({ serverUrl: primary.url, dir: path.join(dir, 'pgbouncer') });
    cleanups.push(bouncer.stop);
    const redisPort = await freePort();
    const redis = spawnLogged(
      REDIS_BIN,
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      process.env,
    );
    cleanups.push(() => stopChild(redis.child, 'SIGKILL'));
    await waitForPort(redisPort);

    // Generated once into the stack's directory, so a restarted stack keeps its sessions and stored SMTP passwords.
    const secret = async (name: string, bytes: number, encoding: BufferEncoding) => {
      const file = path.join(dir, name);
      const existing = await readFile(file, 'utf8').catch(() => null);
      if (existing) return existing.trim();
      const value = randomBytes(bytes).toString(encoding);
      await writeFile(file, value, { mode: 0o600 });
      return value;
    };
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      DATA_DIR: path.join(dir, 'instance-data'),
      DATABASE_URL: bouncer.through(primary.url),
      DATABASE_DIRECT_URL: primary.url,
      DATABASE_REPLICA_URL: replica.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      JWT_SECRET: await secret('jwt-secret', 48, 'base64url'),
      SERVICE_SETUP_TOKEN: await secret('setup-token', 32, 'base64url'),
      EMAIL_ENCRYPTION_KEY: await secret('email-encryption-key', 32, 'base64'),
      TRUST_PROXY: '127.0.0.1',
      WEB_CONCURRENCY: '1',
      SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
      LOG_LEVEL: 'warn',
      ...options.env,
    };
    const instances: Instance[] = [];
    for (let n = 1; n <= (options.instances ?? 2); n++) {
      const name = `app${n}`;
      const port = await freePort();
      const instance = serviceInstance(name, port, env);
      log(`starting instance ${name} on 127.0.0.1:${port}`);
      await instance.start();
      cleanups.push(() => instance.stop());
      instances.push(instance);
    }

    const frontPort = options.port ?? (await freePort());
    const config = path.join(dir, 'haproxy.cfg');
    // In the system's temporary folder: a Unix socket's path must stay short (108 bytes), whatever `dir` is.
    const statsSocket = path.join(tmpdir(), `crm-stack-haproxy-${frontPort}.sock`);
    await rm(statsSocket, { force: true });
    cleanups.push(() => rm(statsSocket, { force: true }));
    await writeFile(config, haproxyConfig(frontPort, instances, statsSocket));
    const haproxy = spawnLogged(HAPROXY_BIN, ['-db', '-f', config], process.env);
    cleanups.push(() => stopChild(haproxy.child, 'SIGUSR1'));
    await Promise.race([
      waitForPort(frontPort),
      once(haproxy.child, 'exit').then(() => Promise.reject(new Error(`haproxy exited:\n${haproxy.output()}`))),
    ]);
    const origin = `http://127.0.0.1:${frontPort}`;
    const waitUntilServing = (name: string) => waitForServer(statsSocket, name);
    for (const instance of instances) await waitUntilServing(instance.name);
    return { origin, setupToken: env.SERVICE_SETUP_TOKEN as string, env, primary, replica, bouncer, instances, waitUntilServing, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One command to HAProxy's stats socket, and its whole answer. */
function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const connection = createConnection(socket, () => connection.end(`${command}\n`));
    connection.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
  });
}

/** Polls `show stat` until the server `name` of the backend is UP (a loaded machine may take seconds), at most 60 s. */
async function waitForServer(socket: string, name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const rows = (await haproxyCommand(socket, 'show stat').catch(() => '')).split('\n');
    // CSV: pxname, svname, …, status (the 18th field).
    const row = rows.map((line) => line.split(',')).find((fields) => fields[0] === 'instances' && fields[1] === name);
    last = row?.[17] ?? 'unknown';
    if (last === 'UP') return;
    await sleep(100);
  }
  throw new Error(`HAProxy did not take ${name} into service within 60 s (status ${last})`);
}

async function dropOldSlots(primaryUrl: string): Promise<void> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: primaryUrl });
  await client.connect();
  try {
    await client.query(
      `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'replica\\_%' AND NOT active`,
    );
  } finally {
    await client.end();
  }
}
