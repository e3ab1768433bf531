// Checks that prisma/schema.prisma and prisma/migrations agree, and writes the next migration, without Prisma's native engine.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  connectionFields,
  LOCKFILE_CONTENT,
  LOCKFILE_NAME,
  NO_FILTERS,
  openSchemaEngine,
  readMigrationsList,
} from './wasm-schema-engine.mjs';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const schemaPath = path.join(projectRoot, 'prisma', 'schema.prisma');
const migrationsDir = path.join(projectRoot, 'prisma', 'migrations');

const USAGE = `usage: node scripts/schema-engine.mjs diff-check
       node scripts/schema-engine.mjs create-migration <name>
Uses the PostgreSQL server of DATABASE_URL (only to create and drop a scratch database), else a temporary embedded one.`;

/** Runs `fn` with a PostgreSQL URL: DATABASE_URL, or a throwaway embedded server (the app's own startup code). */
async function withDatabase(fn) {
  if (process.env.DATABASE_URL) return fn(process.env.DATABASE_URL);
  const { tsImport } = await import('tsx/esm/api');
  const { startEmbeddedPostgres } = await tsImport('../src/db/embedded-postgres.ts', import.meta.url);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'crm-schema-engine-'));
  try {
    const server = await startEmbeddedPostgres({ dataDir });
    try {
      return await fn(server.url);
    } finally {
      await server.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function adminQuery(url, sql) {
  const client = new pg.Client(connectionFields(url));
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * The SQL that takes a database from the state prisma/migrations produce to the one schema.prisma describes, or
 * null when they agree. The migrations are replayed into a scratch database that the engine then compares as its
 * main database: through the engine's own shadow database, the postgresqlExtensions preview feature is lost and
 * every declared extension shows up as missing.
 */
async function pendingSql(url) {
  const schema = await readFile(schemaPath, 'utf8');
  const { lockfile, migrationDirectories } = await readMigrationsList(migrationsDir);
  if (lockfile.content !== null && !/^provider\s*=\s*"postgresql"\s*$/m.test(lockfile.content)) {
    throw new Error(`prisma/migrations/${LOCKFILE_NAME} is not for provider "postgresql"`);
  }
  const scratch = `prisma_diff_${randomUUID().replaceAll('-', '')}`;
  const scratchUrl = new URL(url);
  scratchUrl.pathname = `/${scratch}`;
  await adminQuery(url, `CREATE DATABASE "${scratch}"`);
  try {
    const client = new pg.Client(connectionFields(scratchUrl.href));
    await client.connect();
    try {
      for (const { path: name, migrationFile } of migrationDirectories) {
        if (migrationFile.content.tag === 'error') throw new Error(`${name}/migration.sql: ${migrationFile.content.value}`);
        // One simple-protocol query per file, as the migrations are applied for real.
        await client.query(migrationFile.content.value).catch((error) => {
          throw new Error(`migration ${name} does not apply cleanly: ${error.message}`);
        });
      }
    } finally {
      await client.end();
    }
    const engine = await openSchemaEngine({ url: scratchUrl.href, datamodels: [[schemaPath, schema]] });
    try {
      const files = [{ path: schemaPath, content: schema }];
      const { exitCode, stdout } = await engine.call('diff', {
        from: { tag: 'schemaDatasource', files, configDir: projectRoot },
        to: { tag: 'schemaDatamodel', files },
        script: true,
        exitCode: true,
        filters: NO_FILTERS,
      });
      return exitCode === 2 ? `${(stdout ?? '').trimEnd()}\n` : null;
    } finally {
      await engine.close();
    }
  } finally {
    await adminQuery(url, `DROP DATABASE IF EXISTS "${scratch}" WITH (FORCE)`);
  }
}

function timestamp(date) {
  return date.toISOString().replace(/\D/g, '').slice(0, 14);
}

async function diffCheck() {
  const sql = await withDatabase(pendingSql);
  if (sql === null) {
    console.log('schema.prisma and prisma/migrations agree');
    return 0;
  }
  console.error('schema.prisma and prisma/migrations differ; create a migration (npm run migration:create -- <name>).');
  console.error('SQL missing from prisma/migrations:\n');
  process.stdout.write(sql);
  return 2;
}

async function createMigration(rawName) {
  const name = (rawName ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') {
    console.error(USAGE);
    return 1;
  }
  const sql = await withDatabase(pendingSql);
  if (sql === null) {
    console.log('no changes');
    return 0;
  }
  const dir = path.join(migrationsDir, `${timestamp(new Date())}_${name}`);
  await mkdir(migrationsDir, { recursive: true });
  await mkdir(dir); // fails rather than overwrite a migration created in the same second
  await writeFile(path.join(dir, 'migration.sql'), sql);
  await writeFile(path.join(migrationsDir, LOCKFILE_NAME), LOCKFILE_CONTENT, { flag: 'wx' }).catch((error) => {
    if (error.code !== 'EEXIST') throw error;
  });
  console.log(`created ${path.relative(projectRoot, path.join(dir, 'migration.sql'))}`);
  return 0;
}

const [command, ...args] = process.argv.slice(2);
try {
  if (command === 'diff-check' && args.length === 0) process.exitCode = await diffCheck();
  else if (command === 'create-migration' && args.length === 1) process.exitCode = await createMigration(args[0]);
  else {
    console.error(USAGE);
    process.exitCode = 1;
  }
} catch (error) {
  console.error(`schema-engine ${command}: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
}
