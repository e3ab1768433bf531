// Runs tap against a migrated template database (crm_template) on a throwaway PostgreSQL, or on TEST_DATABASE_URL's server.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { installJobQueue } from '../src/jobs/install.js';
import { adminQuery, databaseUrl } from '../src/db/server-admin.js';
import { ensureServingRole } from '../src/db/serving-role.js';
import { projectRoot } from '../src/lib/project-root.js';
import { startPgBouncer } from './stack/pgbouncer.js';
import { FailureCollector } from './tap-failures.js';

const SIGNAL_EXIT_CODES: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

const KILL_GRACE_MS = 5_000;

/**
 * Runs tap with the given arguments; a signal received meanwhile is passed on and turns into the exit code. tap
 * runs in its own process group: on a signal it would otherwise wait for the running test files to finish, so the
 * whole group (tap and its test processes) gets the signal, then SIGKILL after a grace period or a second signal.
 */
function runTap(args: string[], templateUrl: string, extraEnv: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const tap = spawn(path.join(projectRoot, 'node_modules', '.bin', 'tap'), args, {
      cwd: projectRoot,
      stdio: ['inherit', 'pipe', 'inherit'],
      detached: true,
      env: { ...process.env, TEST_DATABASE_URL: templateUrl, ...extraEnv },
    });
    const signalGroup = (signal: NodeJS.Signals): void => {
      try {
        if (tap.pid !== undefined) process.kill(-tap.pid, signal);
      } catch {
        // the group is already gone
      }
    };
    let signalled: NodeJS.Signals | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const forward = (signal: NodeJS.Signals): void => {
      if (signalled !== undefined) {
        signalGroup('SIGKILL');
        return;
      }
      signalled = signal;
      signalGroup(signal);
      killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
    };
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    // tap's output passes through; its closing summary is kept to restate it as a plain "N passed, N failed" line,
    // and every failure is restated after it: a CI log shows only its end, and a failure 10 MB up is lost there.
    let tail = '';
    const failures = new FailureCollector();
    tap.stdout!.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      const text = chunk.toString();
      tail = (tail + text).slice(-4096);
      failures.push(text);
    });
    tap.once('error', reject);
    tap.once('exit', (code, signal) => {
      clearTimeout(killTimer);
      process.removeListener('SIGINT', forward);
      process.removeListener('SIGTERM', forward);
      if (signalled !== undefined) signalGroup('SIGKILL'); // test processes tap left behind
      const summary = /# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?/.exec(tail);
      const restated = failures.report();
      if (restated) process.stdout.write(`\n${restated}`);
      if (summary) process.stdout.write(`\nassertions: ${summary[2]} passed, ${summary[3] ?? 0} failed\n`);
      const interruptedBy = signalled ?? signal ?? undefined;
      resolve(interruptedBy !== undefined ? (SIGNAL_EXIT_CODES[interruptedBy] ?? 1) : (code ?? 1));
    });
  });
}

async function main(): Promise<number> {
  if (!existsSync(process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server')) {
    const consequence = process.env.CI ? 'the Redis tests FAIL under CI' : 'the Redis tests are SKIPPED';
    console.error(`\n*** WARNING: redis-server is not installed (apt-get install redis-server): ${consequence} ***\n`);
  }
  const cleanups: Array<() => Promise<unknown>> = [];
  // A signal during the setup (about a second) lets it finish or fail, then skips tap; the cleanups run either way.
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted ??= signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const externalUrl = process.env.TEST_DATABASE_URL || undefined;
    // A shared server may host several runs at once: each gets its own template there, dropped afterwards.
    const template = externalUrl ? `crm_template_${randomBytes(4).toString('hex')}` : 'crm_template';
    let server: string;
    if (externalUrl) {
      server = externalUrl;
    } else {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'crm-test-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const embedded = await startEmbeddedPostgres({ dataDir });
      cleanups.push(embedded.stop);
      server = embedded.url;
    }
    const templateUrl = databaseUrl(server, template);
    await adminQuery(server, `CREATE DATABASE "${template}"`);
    if (externalUrl) {
      cleanups.push(async () => {
        await adminQuery(server, `ALTER DATABASE "${template}" WITH IS_TEMPLATE false`);
        await adminQuery(server, `DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
      });
    }
    const applied = await applyMigrations(templateUrl);
    // Installed into the template too, so that no test file pays for the job queue's migrations.
    await installJobQueue(templateUrl);
    // The apps under test serve workspace requests as the serving role, as the embedded installation does.
    await ensureServingRole(templateUrl);
    // No session may stay on a template while it is copied; refusing connections makes a stray one fail loudly.
    await adminQuery(server, `ALTER DATABASE "${template}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
    const { hostname, port } = new URL(server);
    console.error(`test database: template ${template} (${applied.length} migrations) on ${hostname}:${port}`);

    // TEST_VIA_PGBOUNCER=1: the apps under test reach the database through PgBouncer in transaction mode (their
    // DATABASE_URL), with DATABASE_DIRECT_URL for what needs a session (test/helpers/app.ts).
    const extraEnv: Record<string, string> = {};
    if (process.env.TEST_VIA_PGBOUNCER === '1') {
      const dir = await mkdtemp(path.join(tmpdir(), 'crm-pgbouncer-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const bouncer = await startPgBouncer({ serverUrl: server, dir, poolSize: 60 });
      cleanups.push(bouncer.stop);
      extraEnv.TEST_PGBOUNCER_PORT = String(bouncer.port);
      console.error(`through PgBouncer (transaction mode) on 127.0.0.1:${bouncer.port}`);
    }

    if (interrupted !== undefined) return SIGNAL_EXIT_CODES[interrupted] ?? 1;
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    return await runTap(process.argv.slice(2), templateUrl, extraEnv);
  } catch (error) {
    if (interrupted !== undefined) return SIGNAL_EXIT_CODES[interrupted] ?? 1;
    console.error(error instanceof Error ? error.message : error);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: unknown) => console.error(`cleanup failed: ${(error as Error).message}`));
    }
  }
}

process.exit(await main());
