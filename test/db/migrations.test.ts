// Checks that prisma/migrations match schema.prisma and that the pg-only runner applies them as Prisma would.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { applyMigrations, pendingMigrations } from '../../src/db/migrate.js';
import { migrationsDir, projectRoot } from '../../src/lib/project-root.js';
import { createTestDatabase } from '../helpers/database.js';

const run = promisify(execFile);

/** Environment for the CLIs under test: tap's NODE_OPTIONS loader would slow every Node process they start. */
function cliEnv(databaseUrl: string): NodeJS.ProcessEnv {
  return { ...process.env, NODE_OPTIONS: '', DATABASE_URL: databaseUrl };
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

async function migrationNames(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

const fresh = await createTestDatabase({ empty: true });
t.teardown(fresh.drop);

t.test('schema.prisma and prisma/migrations agree', async (t) => {
  try {
    await run(process.execPath, ['scripts/schema-engine.mjs', 'diff-check'], {
      cwd: projectRoot,
      env: cliEnv(fresh.url),
    });
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    t.fail(
      code === 2
        ? `schema.prisma changed without a migration (npm run migration:create -- <name>); missing SQL:\n${stdout}`
        : `diff-check failed (exit ${code}): ${stderr}`,
    );
  }
});

t.test('applyMigrations applies every migration once, recorded as Prisma does', async (t) => {
  const expected = await migrationNames(migrationsDir);
  t.ok(expected.length > 0, 'the project has migrations');
  t.same(await pendingMigrations(fresh.url), expected, 'all pending before the history table exists');

  t.same(await applyMigrations(fresh.url), expected, 'first run applies all');
  t.same(await applyMigrations(fresh.url), [], 'second run applies none');
  t.same(await pendingMigrations(fresh.url), [], 'none pending afterwards');

  const rows = await query<{ migration_name: string; checksum: string; finished: boolean; applied_steps_count: number }>(
    fresh.url,
    'SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, applied_steps_count FROM _prisma_migrations ' +
      'ORDER BY migration_name',
  );
  const checksums = await Promise.all(
    expected.map(async (name) =>
      createHash('sha256')
        .update(await readFile(path.join(migrationsDir, name, 'migration.sql')))
        .digest('hex'),
    ),
  );
  t.same(
    rows,
    expected.map((name, i) => ({ migration_name: name, checksum: checksums[i], finished: true, applied_steps_count: 1 })),
  );
});

t.test('pendingMigrations accepts a pool and compares folder names', async (t) => {
  const pool = new pg.Pool({ connectionString: fresh.url, max: 1 });
  t.teardown(() => pool.end());
  t.same(await pendingMigrations(pool), []);

  const dir = await mkdtemp(path.join(tmpdir(), 'crm-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const [first] = await migrationNames(migrationsDir);
  await mkdir(path.join(dir, first as string));
  await mkdir(path.join(dir, '29991231000000_later'));
  t.same(await pendingMigrations(pool, dir), ['29991231000000_later']);
});

t.test('a failed migration is rolled back whole and blocks later runs', async (t) => {
  const db = await createTestDatabase({ empty: true });
  t.teardown(db.drop);
  const dir = await mkdtemp(path.join(tmpdir(), 'crm-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const migrations: Record<string, string> = {
    // Semicolons inside a $$ body: the file must reach PostgreSQL whole, not split on ';'.
    '20000101000000_first':
      'CREATE TABLE first_table (id int PRIMARY KEY);\n' +
      'CREATE FUNCTION answer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 42; END; $$;\n',
    '20000101000001_broken': 'CREATE TABLE half_done (id int);\nINSERT INTO missing_table VALUES (1);\n',
    '20000101000002_after': 'CREATE TABLE after_table (id int);\n',
  };
  for (const [name, sql] of Object.entries(migrations)) {
    await mkdir(path.join(dir, name));
    await writeFile(path.join(dir, name, 'migration.sql'), sql);
  }

  await t.rejects(applyMigrations(db.url, { migrationsDir: dir }), /20000101000001_broken failed.*missing_table/s);
  const [state] = await query<{ answer: number; half_done: string | null; after_table: string | null }>(
    db.url,
    "SELECT answer(), to_regclass('half_done')::text AS half_done, to_regclass('after_table')::text AS after_table",
  );
  t.same(state, { answer: 42, half_done: null, after_table: null }, 'first applied, broken rolled back, later not run');

  const [failed] = await query<{ finished_at: Date | null; logs: string }>(
    db.url,
    "SELECT finished_at, logs FROM _prisma_migrations WHERE migration_name = '20000101000001_broken'",
  );
  t.equal(failed?.finished_at, null);
  t.match(failed?.logs, /missing_table/);

  await t.rejects(applyMigrations(db.url, { migrationsDir: dir }), /20000101000001_broken failed earlier.*P3009/s);
  t.same(await pendingMigrations(db.url, dir), ['20000101000001_broken', '20000101000002_after']);
});

t.test('errors name the database but never its password', async (t) => {
  const url = new URL(fresh.url);
  url.password = 'not-the-password';
  const error = await applyMigrations(url.href).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  t.ok(error, 'rejected');
  t.match(error?.message, `${url.hostname}:${url.port}${url.pathname}`);
  t.notMatch(error?.message, 'not-the-password');
});

t.test('the Prisma CLI (through the offline shim) accepts the history', async (t) => {
  const { stdout } = await run(process.execPath, ['scripts/prisma.mjs', 'migrate', 'status'], {
    cwd: projectRoot,
    env: cliEnv(fresh.url),
  });
  t.match(stdout, /Database schema is up to date/);
});
