// Entry point: config → embedded PostgreSQL when DATABASE_URL is unset → migrations (ours, then the job queue's) → app
// → listen; SIGTERM drains.
// With WEB_CONCURRENCY > 1 this process does the first steps once and then supervises that many server processes
// (node:cluster) sharing the port; SIGTERM drains them all before the embedded database stops.
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import closeWithGrace from 'close-with-grace';
import pg from 'pg';
import { ConfigError, loadConfig, sessionDatabaseUrl, withDatabaseUrl, type Config } from './config.js';
import { buildApp } from './app.js';
import { startEmbeddedPostgres, type RunningPostgres } from './db/embedded-postgres.js';
import { applyMigrations } from './db/migrate.js';
import { ensureServingRole, servingRoleUrl } from './db/serving-role.js';
import { ensureDevelopmentSecrets } from './development-secrets.js';
import { installJobQueue } from './jobs/install.js';

/** How long a drain may take before close-with-grace (one process) or the supervisor (several) gives up. */
const DRAIN_MS = 10_000;
/**
 * After SIGTERM, how long at least every answer carries `Connection: close` before the listener closes (longer when
 * SHUTDOWN_DELAY_MS says so). A client's kept-alive connection is then ended by the answer to its next request, and
 * the client reconnects to another process or instance; closed at once, the idle ones were reset under the request
 * a busy client was just sending (six of eight clients' connections, in the restart probe).
 */
const KEEPALIVE_HANDOFF_MS = 500;

/** How long a process keeps serving after SIGTERM before it stops accepting connections. */
const handoffMs = (config: Config) => Math.max(config.shutdownDelayMs, KEEPALIVE_HANDOFF_MS);

/** The start-up lines: where the API listens, its database and, on an empty installation, how setup starts. */
function banner(config: Config, embedded: RunningPostgres | undefined, counts: { users: number; organizations: number }): string {
  const origin = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  const processes = config.webConcurrency > 1 ? ` (${config.webConcurrency} processes)` : '';
  const lines = [`Workspace CRM API listening on ${origin}${processes}`, `Swagger UI: ${origin}/docs  (OpenAPI: ${origin}/openapi.json)`];
  if (!embedded) lines.push('Database: DATABASE_URL');
  else lines.push(`Database: embedded PostgreSQL, data in ${config.dataDir}`);
  if (counts.users === 0 && counts.organizations === 0) {
    lines.push(
      config.setupToken
        ? 'First-run setup is open: POST /api/v1/setup/ with setup_token = the value of SERVICE_SETUP_TOKEN ' +
            '(make run keeps it in .data/setup-token) to create the first administrator and workspace.'
        : 'First-run setup is unavailable: set SERVICE_SETUP_TOKEN (at least 32 characters) and restart.',
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Builds the app and listens; a signal closes it (in-flight requests, workers, pool), then `after` runs. A server
 * process of several leaves SIGINT, which a terminal sends the whole group, to its supervisor: the drain is asked
 * for once (a second signal would make close-with-grace exit at once).
 *
 * SIGTERM often arrives twice: a supervisor signals the whole process group (systemd's control-group kill, a
 * container runtime) and `npm start` forwards the same signal to its child. A repeated SIGTERM therefore never cuts
 * the drain short; only a second SIGINT (an impatient terminal) or the drain's own time limit ends it early.
 */
async function serve(config: Config, after: () => Promise<void>) {
  const app = await buildApp(config);
  if (cluster.isWorker) process.on('SIGINT', () => {});
  const grace = closeWithGrace(
    { delay: DRAIN_MS + handoffMs(config), logger: false, skip: cluster.isWorker ? ['SIGINT', 'SIGTERM'] : ['SIGTERM'] },
    async ({ signal, manual, err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error');
      else app.log.info({ signal: signal ?? (manual ? 'SIGTERM' : undefined) }, 'shutting down: draining in-flight requests');
      if (!err) {
        // Out of the load balancer's rotation (readiness fails) and keep-alive connections handed off, then stop
        // accepting connections.
        app.lifecycle.draining = true;
        await new Promise((resolve) => setTimeout(resolve, handoffMs(config)));
      }
      // Stop accepting before anything drains. Fastify closes the listener only after its preClose hooks, which wait
      // for the job runners; until then each new connection got a 503 and its client, reconnecting, could land here
      // again (a loaded CI host lost 50 requests so). Without this process's listener, the kernel hands new
      // connections to the other server processes sharing the port. Fastify's own close later finds it closed, which
      // it accepts, and still waits for the open connections.
      if (app.server.listening) app.server.close();
      await app.close();
      await after();
    },
  );
  let terminating = false;
  process.on('SIGTERM', () => {
    if (terminating) return;
    terminating = true;
    void grace.close();
  });
  await app.listen({ port: config.port, host: config.host });
  return app;
}

/** A crash loop: this many server processes dying within CRASH_WINDOW_MS stops the instance instead of replacing them. */
const CRASH_LOOP_DEATHS = 5;
const CRASH_WINDOW_MS = 60_000;

/**
 * Forks the server processes and waits for all of them to listen. SIGTERM or SIGINT is passed on as SIGTERM to
 * each; the database stops after the last has exited. A process that exits on its own (a signal, a crash, the OOM
 * killer) is replaced at once while the others keep serving; only a crash loop (CRASH_LOOP_DEATHS deaths within a
 * minute) stops the instance, for the host's supervisor to see.
 */
async function supervise(config: Config, embedded: RunningPostgres | undefined): Promise<void> {
  const workers: Worker[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    const alive = workers.filter((worker) => !worker.isDead());
    for (const worker of alive) worker.process.kill('SIGTERM');
    const timer = setTimeout(
      () => {
        for (const worker of alive) worker.process.kill('SIGKILL');
      },
      DRAIN_MS + handoffMs(config) + 2_000,
    );
    await Promise.all(alive.map((worker) => (worker.isDead() ? undefined : once(worker, 'exit'))));
    clearTimeout(timer);
    await embedded?.stop();
    process.exit(code);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stopAll(0));
  // The processes read the same environment, plus the database this process started.
  const env = embedded ? { DATABASE_URL: embedded.url, DATABASE_SERVING_URL: servingRoleUrl(embedded.url) } : {};
  const deaths: number[] = [];
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    const now = Date.now();
    deaths.push(now);
    while ((deaths[0] ?? now) <= now - CRASH_WINDOW_MS) deaths.shift();
    if (deaths.length >= CRASH_LOOP_DEATHS) {
      process.stderr.write(
        `Server process ${worker.process.pid} exited (${signal ?? code}): ${deaths.length} exits within ${CRASH_WINDOW_MS / 1000} s, ` +
          'a crash loop: stopping the instance.\n',
      );
      void stopAll(1);
      return;
    }
    const index = workers.indexOf(worker);
    const replacement = cluster.fork(env);
    workers.splice(index === -1 ? workers.length : index, index === -1 ? 0 : 1, replacement);
    process.stderr.write(
      `Server process ${worker.process.pid} exited (${signal ?? code}): started ${replacement.process.pid} in its place.\n`,
    );
    replacement.once('listening', () => process.stderr.write(`Server process ${replacement.process.pid} is serving.\n`));
  });
  // The kernel hands connections to the processes (each accepts on the shared socket), not this process: in Node's
  // round robin a connection on its way to a process that dies is neither answered nor closed (the primary keeps
  // its copy open, waiting for an acceptance that never comes), so its client hangs; from the kernel's queue it goes
  // to a live process, and one the dead process had accepted is reset.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  for (let n = 0; n < config.webConcurrency; n++) workers.push(cluster.fork(env));
  await Promise.all(workers.map((worker) => once(worker, 'listening')));
  const client = new pg.Client({ connectionString: config.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ users: number; organizations: number }>(
      'SELECT (SELECT count(*)::int FROM users) AS users, (SELECT count(*)::int FROM organizations) AS organizations',
    );
    process.stdout.write(banner(config, embedded, rows[0] ?? { users: 0, organizations: 0 }));
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(ensureDevelopmentSecrets(process.env));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  if (cluster.isWorker) {
    await serve(config, async () => {});
    return;
  }

  // The embedded server's own output is noise unless someone is debugging it.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        log: (msg) => verbose && process.stderr.write(`[embedded-postgres] ${msg}\n`),
      });

  try {
    // Migrations and the job queue's schema need a session: PostgreSQL itself, not a transaction pooler.
    const databaseUrl = embedded?.url ?? sessionDatabaseUrl(config);
    if (!databaseUrl) throw new Error('no database: DATABASE_URL is unset and the embedded PostgreSQL did not start');
    const applied = await applyMigrations(databaseUrl);
    if (applied.length > 0) process.stdout.write(`Applied migrations: ${applied.join(', ')}\n`);
    // The job queue's own schema, once here rather than in each server process.
    await installJobQueue(databaseUrl, (msg) => process.stdout.write(`${msg}\n`));
    // On the embedded database the service makes its own serving role, which row-level security binds.
    if (embedded) await ensureServingRole(embedded.url);
    // A new frozen config with the embedded database's URLs: the one loaded at boot is never changed.
    const runtimeConfig = embedded ? withDatabaseUrl(config, embedded.url, servingRoleUrl(embedded.url)) : config;
    if (runtimeConfig.webConcurrency > 1) return await supervise(runtimeConfig, embedded);
    const app = await serve(runtimeConfig, async () => {
      await embedded?.stop();
    });
    const [users, organizations] = await Promise.all([app.db.user.count(), app.db.organization.count()]);
    process.stdout.write(banner(runtimeConfig, embedded, { users, organizations }));
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`Startup failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
