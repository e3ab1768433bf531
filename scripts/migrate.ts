// Applies pending migrations to DATABASE_URL, or to the embedded PostgreSQL in DATA_DIR (default .data).
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { applyMigrations } from '../src/db/migrate.js';

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
  const applied = await withDatabase((url) => applyMigrations(url, { log: (msg) => console.log(msg) }));
  console.log(applied.length === 0 ? 'no pending migrations' : `applied ${applied.length} migration(s)`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
