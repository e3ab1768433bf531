// Applies pending migrations and the job queue's schema to DATABASE_URL, or to the embedded PostgreSQL in DATA_DIR (default .data).
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';
import { installJobQueue } from '../src/jobs/install.js';

async function withDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  if (process.env.DATABASE_URL) return fn(process.env.DATABASE_URL);
  const embedded = await startEmbeddedPostgres({ dataDir: process.env.DATA_DIR || '.data' });
  try {
    return await fn(embedded.url);
  } finally {
    await embedded.stop();
  }
}

try {
  const applied = await withDatabase(async (url) => {
    const names = await applyMigrations(url, { log: (msg) => console.log(msg) });
    await installJobQueue(url, (msg) => console.log(msg));
    return names;
  });
  console.log(applied.length === 0 ? 'no pending migrations' : `applied ${applied.length} migration(s)`);
  console.log('job queue schema (graphile_worker) up to date');
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
