// Entry point: config → embedded PostgreSQL when DATABASE_URL is unset → migrations → app → listen; SIGTERM drains.
import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { startEmbeddedPostgres } from './db/embedded-postgres.js';
import { applyMigrations } from './db/migrate.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  // The embedded server's own output is noise unless someone is debugging it.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        log: (msg) => verbose && process.stderr.write(`[embedded-postgres] ${msg}\n`),
      });
  config.databaseUrl ??= embedded?.url;

  let app;
  try {
    const applied = await applyMigrations(config.databaseUrl!);
    if (applied.length > 0) process.stdout.write(`Applied migrations: ${applied.join(', ')}\n`);
    app = await buildApp(config);
  } catch (error) {
    await embedded?.stop();
    throw error;
  }

  closeWithGrace({ delay: 10_000, logger: false }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down: draining in-flight requests');
    // Closing the app stops accepting connections, waits for in-flight requests, stops workers, closes the pool.
    await app.close();
    await embedded?.stop();
  });

  await app.listen({ port: config.port, host: config.host });
  const origin = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  const lines = [`Workspace CRM API listening on ${origin}`, `Swagger UI: ${origin}/docs  (OpenAPI: ${origin}/openapi.json)`];
  if (!embedded) lines.push('Database: DATABASE_URL');
  else lines.push(`Database: embedded PostgreSQL, data in ${config.dataDir}`);
  const [users, organizations] = await Promise.all([app.db.user.count(), app.db.organization.count()]);
  if (users === 0 && organizations === 0) {
    lines.push(
      config.setupToken
        ? 'First-run setup is open: POST /api/v1/setup/ with setup_token = the value of SERVICE_SETUP_TOKEN (make run keeps it in .data/setup-token) to create the first administrator and workspace.'
        : 'First-run setup is unavailable: set SERVICE_SETUP_TOKEN (at least 32 characters) and restart.',
    );
  }
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`Startup failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
