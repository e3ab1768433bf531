// Starts Debian's PgBouncer in transaction mode in front of a PostgreSQL server (tests through it, and `make stack`).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFileSync } from 'node:child_process';
import { freePort, waitForPort } from '../../test/helpers/net.js';
import { SERVING_ROLE } from '../../src/db/serving-role.js';

export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  port: number;
  /** The same database URL, through PgBouncer. */
  through(databaseUrl: string): string;
  stop(): Promise<void>;
}

/** PostgreSQL's tools refuse root; like the embedded server, PgBouncer then runs as the `postgres` user. */
function postgresIds(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

/**
 * PgBouncer in transaction mode (what managed poolers offer) for every database of `serverUrl`'s server, with the
 * same user and password, and the serving role. Its files live in `dir`.
 */
export async function startPgBouncer(options: { serverUrl: string; dir: string; poolSize?: number }): Promise<PgBouncer> {
  const server = new URL(options.serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  await mkdir(options.dir, { recursive: true });
  const ids = postgresIds();
  const userlist = path.join(options.dir, 'userlist.txt');
  // The serving role (db/serving-role.ts) has the owner's password.
  await writeFile(userlist, `"${user}" "${password}"\n"${SERVING_ROLE}" "${password}"\n`, { mode: 0o600 });
  const config = path.join(options.dir, 'pgbouncer.ini');
  await writeFile(
    config,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${userlist}`,
      'pool_mode = transaction',
      'max_client_conn = 2000',
      `default_pool_size = ${options.poolSize ?? 40}`,
      // node-postgres and Prisma send these at connect; PgBouncer would refuse the connection otherwise.
      'ignore_startup_parameters = extra_float_digits,options,statement_timeout',
      'server_reset_query =',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  if (ids) {
    await chmod(options.dir, 0o755);
    for (const file of [options.dir, userlist, config]) await chown(file, ids.uid, ids.gid);
  }
  const child = spawn(PGBOUNCER_BIN, [config], { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}) });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await Promise.race([
      waitForPort(port, 10_000),
      once(child, 'exit').then(() => Promise.reject(new Error(`pgbouncer exited:\n${stderr}`))),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    port,
    through(databaseUrl: string) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      await Promise.race([exited, sleep(5_000).then(() => child.kill('SIGKILL'))]);
    },
  };
}
