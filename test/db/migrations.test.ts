// Checks that prisma/migrations match schema.prisma and that the pg-only runner applies them as Prisma would.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
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

/** The newest migration of the last release that landed: installations upgrade from its schema with their data. */
const LAST_RELEASED = '20261122220302_job_queue';
const PROFILES = '20261125083334_crm_profiles_archive_activity';

t.test('an installation of the last release upgrades with its data: every later migration applies', async (t) => {
  const db = await createTestDatabase({ empty: true });
  t.teardown(db.drop);
  const dir = await mkdtemp(path.join(tmpdir(), 'crm-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const name of (await migrationNames(migrationsDir)).filter((name) => name <= LAST_RELEASED))
    await cp(path.join(migrationsDir, name), path.join(dir, name), { recursive: true });
  await applyMigrations(db.url, { migrationsDir: dir });
  // What such an installation holds: users, workspaces and memberships, companies (three sharing an email, as nothing
  // refused then), contacts, automations with runs, and audit entries.
  const A = '00000000-0000-4000-8000-00000000000a';
  const B = '00000000-0000-4000-8000-00000000000b';
  const U = '00000000-0000-4000-8000-0000000000f1';
  await query(
    db.url,
    `INSERT INTO users (id, username, email, password_hash, updated_at) VALUES ('${U}', 'old', 'old@example.com', 'x', now());
     INSERT INTO organizations (id, name, slug, updated_at) VALUES ('${A}', 'A', 'a', now()), ('${B}', 'B', 'b', now());
     INSERT INTO memberships (id, organization_id, user_id, role, updated_at) VALUES (gen_random_uuid(), '${A}', '${U}', 'owner', now());
     INSERT INTO companies (id, organization_id, name, email, created_at, updated_at) VALUES
       ('00000000-0000-4000-8000-000000000001', '${A}', 'First', 'Sales@Dup.example', '2026-01-01', now()),
       ('00000000-0000-4000-8000-000000000002', '${A}', 'Second', 'sales@dup.example', '2026-01-02', now()),
       ('00000000-0000-4000-8000-000000000003', '${A}', 'Third', 'SALES@DUP.EXAMPLE', '2026-01-03', now()),
       ('00000000-0000-4000-8000-000000000004', '${B}', 'Other workspace', 'sales@dup.example', '2026-01-01', now());
     INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, updated_at)
       VALUES (gen_random_uuid(), '${A}', '00000000-0000-4000-8000-000000000001', 'Ada', 'Old', 'ada@dup.example', now());
     INSERT INTO automations (id, organization_id, name, trigger, action_type, action_config, updated_at)
       VALUES ('00000000-0000-4000-8000-0000000000a1', '${A}', 'Hook', 'company.created', 'webhook', '{"url": "https://example.com/h"}', now());
     INSERT INTO automation_runs (id, organization_id, automation_id, trigger, status, payload)
       VALUES (gen_random_uuid(), '${A}', '00000000-0000-4000-8000-0000000000a1', 'company.created', 'success', '{}');
     INSERT INTO audit_log (id, actor_type, actor_user_id, actor_username, action, target_type, target_id, organization_id)
       VALUES (gen_random_uuid(), 'user', '${U}', 'old', 'automation.created', 'automation', '00000000-0000-4000-8000-0000000000a1', '${A}')`,
  );

  const applied = await applyMigrations(db.url);
  t.same(
    applied,
    (await migrationNames(migrationsDir)).filter((name) => name > LAST_RELEASED),
    'every later migration ran without failing',
  );
  const rows = await query<{ name: string; customer_code: string; email_shared: boolean }>(
    db.url,
    'SELECT name, customer_code, email_shared FROM companies ORDER BY organization_id, created_at',
  );
  t.same(
    rows,
    [
      { name: 'First', customer_code: 'CUS-00001', email_shared: false },
      { name: 'Second', customer_code: 'CUS-00002', email_shared: true },
      { name: 'Third', customer_code: 'CUS-00003', email_shared: true },
      { name: 'Other workspace', customer_code: 'CUS-00001', email_shared: false },
    ],
    `${PROFILES}: every company kept, the oldest holds the email and the newer are flagged; codes per workspace by age`,
  );
  const [next] = await query<{ n: string }>(db.url, `SELECT next_customer_number('${A}') AS n`);
  t.equal(next?.n, '4', "the workspace's next code follows its companies");
  const [counts] = await query<{ contacts: string; runs: string; audit: string }>(
    db.url,
    'SELECT (SELECT count(*) FROM contacts) AS contacts, (SELECT count(*) FROM automation_runs) AS runs, (SELECT count(*) FROM audit_log) AS audit',
  );
  t.same(counts, { contacts: '1', runs: '1', audit: '1' }, 'the rest of the data kept');
  await t.rejects(
    query(
      db.url,
      `INSERT INTO companies (id, organization_id, name, email, updated_at) VALUES (gen_random_uuid(), '${A}', 'Fourth', 'SALES@dup.example', now())`,
    ),
    /companies_organization_id_email_unique/,
    'a later duplicate is refused',
  );
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
