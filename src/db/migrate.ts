// Applies prisma/migrations with `pg` alone, keeping Prisma's own bookkeeping so `prisma migrate deploy|status` agree.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { migrationsDir as defaultMigrationsDir } from '../lib/project-root.js';

export interface ApplyMigrationsOptions {
  migrationsDir?: string;
  log?: (msg: string) => void;
}

/** Anything that runs a query: a pg.Pool, pg.Client or pool client. */
export interface QueryRunner {
  query(text: string): Promise<{ rows: unknown[] }>;
}

/** The lock id Prisma's schema engine takes, so this runner and `prisma migrate deploy` exclude each other. */
const PRISMA_ADVISORY_LOCK = 72707369;

/** Prisma's DDL for its history table, column for column. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/** Names of the migration folders, in the order Prisma applies them. */
async function listMigrations(dir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    throw new Error(`Cannot read the migrations folder ${dir}: ${(error as Error).message}`, { cause: error });
  }
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => a.localeCompare(b));
}

/** host:port/database of a connection string, for messages that must not carry the password. */
function describeTarget(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname}${url.port === '' ? '' : `:${url.port}`}${url.pathname}`;
  } catch {
    return 'the database (unparsable URL)';
  }
}

async function connect(connectionString: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString });
  // A server going away later surfaces as a failed query; without a listener it would crash the process instead.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`Cannot connect to PostgreSQL at ${describeTarget(connectionString)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return client;
}

function failureLog(error: unknown): string {
  const { message, code, position } = error as pg.DatabaseError;
  return [message, code && `SQLSTATE ${code}`, position && `at character ${position}`].filter(Boolean).join('\n');
}

/**
 * Applies, in name order, every migration folder not yet recorded as finished, each as one transaction; returns
 * the names applied. Refuses (like Prisma's P3009) while a failed migration is recorded.
 */
export async function applyMigrations(connectionString: string, options: ApplyMigrationsOptions = {}): Promise<string[]> {
  const dir = options.migrationsDir ?? defaultMigrationsDir;
  const log = options.log ?? (() => {});
  const names = await listMigrations(dir);
  const client = await connect(connectionString);
  try {
    // Session-level lock: concurrent starters wait here, then find the migrations already applied.
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<MigrationRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at, logs FROM "_prisma_migrations" ORDER BY started_at',
    );
    const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
    if (failed) {
      throw new Error(
        `Migration ${failed.migration_name} failed earlier and blocks further migrations (Prisma P3009). ` +
          `Repair the database by hand, then mark it with \`prisma migrate resolve --rolled-back ${failed.migration_name}\` ` +
          `(or --applied). Recorded error: ${failed.logs ?? 'none'}`,
      );
    }
    const finished = new Map(
      rows.filter((row) => row.finished_at !== null && row.rolled_back_at === null).map((row) => [row.migration_name, row]),
    );

    const applied: string[] = [];
    for (const name of names) {
      let sql: string;
      try {
        sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      } catch (error) {
        throw new Error(`Migration ${name} has no readable migration.sql: ${(error as Error).message}`, { cause: error });
      }
      const checksum = createHash('sha256').update(sql).digest('hex');
      const done = finished.get(name);
      if (done) {
        if (done.checksum !== checksum) log(`migration ${name} was modified after it was applied`);
        continue;
      }

      const id = randomUUID();
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
        [id, checksum, name],
      );
      log(`applying migration ${name}`);
      try {
        // No parameters = simple query protocol: PostgreSQL runs the whole file as one implicit transaction.
        await client.query(sql);
      } catch (error) {
        await client.query('UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1', [id, failureLog(error)]);
        throw new Error(`Migration ${name} failed and was rolled back: ${(error as Error).message}`, { cause: error });
      }
      await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
      applied.push(name);
    }
    return applied;
  } finally {
    // Ending the session also releases the advisory lock.
    await client.end().catch(() => {});
  }
}

/**
 * Migration folders not recorded as finished in the database (all of them when the history table does not exist
 * yet). Takes a connection string or something that runs queries (e.g. the app's pg.Pool).
 */
export async function pendingMigrations(database: QueryRunner | string, migrationsDir: string = defaultMigrationsDir): Promise<string[]> {
  const names = await listMigrations(migrationsDir);
  const client = typeof database === 'string' ? await connect(database) : database;
  try {
    // Checked first rather than catching "relation does not exist", which would abort a caller's transaction.
    const { rows: tables } = await client.query(`SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS "exists"`);
    if (!(tables[0] as { exists: boolean }).exists) return names;
    const { rows } = await client.query(
      'SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const finished = new Set((rows as Array<{ migration_name: string }>).map((row) => row.migration_name));
    return names.filter((name) => !finished.has(name));
  } finally {
    if (typeof database === 'string') await (client as pg.Client).end().catch(() => {});
  }
}
