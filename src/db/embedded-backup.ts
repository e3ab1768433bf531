// Online physical backups of the embedded PostgreSQL and their restore test (`make backup`, `make restore-test`).
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile, appendFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { pendingMigrations } from './migrate.js';
import { runningEmbeddedUrl, startEmbeddedPostgres } from './embedded-postgres.js';

const exec = promisify(execFile);

/** Directories whose contents PostgreSQL rebuilds at start (the base-backup protocol leaves them out too). */
const EMPTIED = new Set(['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans']);
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'backup_label', 'tablespace_map']);

export interface BackupManifest {
  format: 'crm-embedded-backup/1';
  label: string;
  created_at: string;
  server_version: string;
  /** Recovery stops here: the moment the counts below were taken, with every table's writers held off. */
  restore_point: string;
  migrations: string[];
  counts: Record<string, number>;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Copies a live directory tree; files that vanish meanwhile are skipped (WAL replay restores what they held). */
async function copyTree(from: string, to: string, top = true): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  const entries = await readdir(from, { withFileTypes: true }).catch((error: unknown) => (isMissing(error) ? [] : Promise.reject(error)));
  for (const entry of entries) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      if (top && EMPTIED.has(entry.name)) await mkdir(target, { recursive: true, mode: 0o700 });
      else await copyTree(source, target, false);
    } else if (entry.isFile() && !(top && SKIPPED_FILES.has(entry.name))) {
      await copyFile(source, target).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)));
    }
  }
}

/** The database of `dataDir`'s embedded server: the running one (service up), or one started for the job. */
async function embeddedDatabase(dataDir: string, log: (line: string) => void) {
  const running = await runningEmbeddedUrl(dataDir);
  if (running) return { url: running, stop: async () => {} };
  log('the embedded database is not running: starting it for this job');
  return startEmbeddedPostgres({ dataDir });
}

/** Appends the outcome to backup_events, where GET /api/v1/installation/backup-status/ reads it. */
async function recordOutcome(url: string, kind: 'backup' | 'restore_test', ok: boolean, reportedBy: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`INSERT INTO backup_events (id, kind, status, reported_by) VALUES (gen_random_uuid(), $1, $2, $3)`, [
      kind,
      ok ? 'success' : 'failure',
      reportedBy,
    ]);
  } finally {
    await client.end();
  }
}

/** Row counts of every table of the public schema, taken with writers held off (SHARE locks) for a moment. */
async function countTables(client: pg.Client): Promise<Record<string, number>> {
  const tables = (await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`))
    .rows;
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const quoted = `"${name.replaceAll('"', '""')}"`;
    await client.query(`LOCK TABLE ${quoted} IN SHARE MODE`);
    counts[name] = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoted}`)).rows[0]?.n ?? 0);
  }
  return counts;
}

/**
 * Takes a consistent physical backup of the running embedded cluster into `<backupDir>/<label>/`: the data files
 * copied between pg_backup_start and pg_backup_stop, then a restore point taken while every table's writers wait
 * (its row counts go to manifest.json), then the WAL up to it. Records the outcome in backup_events.
 */
export async function takeBackup(options: { dataDir: string; backupDir: string; log?: (line: string) => void }): Promise<string> {
  const log = options.log ?? (() => {});
  const clusterDir = path.join(path.resolve(options.dataDir), 'postgres');
  const database = await embeddedDatabase(options.dataDir, log);
  const label = `crm-backup-${new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
  const target = path.join(path.resolve(options.backupDir), label);
  const client = new pg.Client({ connectionString: database.url });
  let ok = false;
  try {
    await client.connect();
    await mkdir(target, { recursive: true, mode: 0o700 });
    await client.query('SELECT pg_backup_start($1, true)', [label]);
    log(`copying ${clusterDir}`);
    await copyTree(clusterDir, path.join(target, 'postgres'));
    const stop = (await client.query<{ labelfile: string; spcmapfile: string | null }>('SELECT * FROM pg_backup_stop(false)')).rows[0];
    if (!stop) throw new Error('pg_backup_stop answered nothing');
    await writeFile(path.join(target, 'postgres', 'backup_label'), stop.labelfile, { mode: 0o600 });
    if (stop.spcmapfile) await writeFile(path.join(target, 'postgres', 'tablespace_map'), stop.spcmapfile, { mode: 0o600 });

    await client.query('BEGIN');
    const counts = await countTables(client);
    const migrations = (
      await client.query<{ name: string }>(`SELECT migration_name AS name FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY 1`)
    ).rows.map((row) => row.name);
    await client.query('SELECT pg_create_restore_point($1)', [label]);
    await client.query('COMMIT');
    // Closes the WAL segment holding the restore point, so that the copy below has it on disk.
    await client.query('SELECT pg_switch_wal()');
    // The WAL goes beside the data, as an archive that recovery's restore_command reads (segments only).
    await copyTree(path.join(clusterDir, 'pg_wal'), path.join(target, 'wal'), false);
    await rm(path.join(target, 'wal', 'archive_status'), { recursive: true, force: true });
    await rm(path.join(target, 'wal', 'summaries'), { recursive: true, force: true });
    // The cluster's password goes with it: the restored copy is reached the way the original was.
    await copyFile(path.join(path.resolve(options.dataDir), 'postgres-password'), path.join(target, 'postgres-password'));
    await chmod(path.join(target, 'postgres-password'), 0o600);
    const version = (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]?.v ?? 'unknown';
    const manifest: BackupManifest = {
      format: 'crm-embedded-backup/1',
      label,
      created_at: new Date().toISOString(),
      server_version: version,
      restore_point: label,
      migrations,
      counts,
    };
    await writeFile(path.join(target, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    ok = true;
    return target;
  } finally {
    await client.end().catch(() => {});
    await recordOutcome(database.url, 'backup', ok, 'make backup').catch((error: Error) =>
      log(`could not record the outcome: ${error.message}`),
    );
    await database.stop();
  }
}

export interface RestoreTestResult {
  ok: boolean;
  /** What differed: pending migrations, tables whose counts do not match the manifest. */
  problems: string[];
}

/**
 * Restores a backup into a scratch directory, starts it (recovery replays the WAL to the backup's restore point),
 * checks that every migration is applied and every table holds the row count of the manifest, then removes it.
 * Records the outcome in the live database's backup_events (`dataDir`'s embedded server).
 */
export async function restoreTest(options: { dataDir: string; backup: string; log?: (line: string) => void }): Promise<RestoreTestResult> {
  const log = options.log ?? (() => {});
  const backup = path.resolve(options.backup);
  const problems: string[] = [];
  const scratch = await mkdtemp(path.join(tmpdir(), 'crm-restore-test-'));
  try {
    const manifest = JSON.parse(await readFile(path.join(backup, 'manifest.json'), 'utf8')) as BackupManifest;
    await copyTree(path.join(backup, 'postgres'), path.join(scratch, 'postgres'), false);
    await copyTree(path.join(backup, 'wal'), path.join(scratch, 'wal'), false);
    await copyFile(path.join(backup, 'postgres-password'), path.join(scratch, 'postgres-password'));
    const restored = path.join(scratch, 'postgres');
    await appendFile(
      path.join(restored, 'postgresql.auto.conf'),
      [
        '',
        '# restore test',
        `restore_command = 'cp "${path.join(scratch, 'wal').replaceAll("'", "''")}/%f" "%p"'`,
        `recovery_target_name = '${manifest.restore_point.replaceAll("'", "''")}'`,
        "recovery_target_action = 'promote'",
        '',
      ].join('\n'),
    );
    await writeFile(path.join(restored, 'recovery.signal'), '');
    if (process.getuid?.() === 0) {
      // PostgreSQL runs as the unprivileged `postgres` user, which must own the copy.
      await exec('chown', ['-R', 'postgres:postgres', scratch]);
    }
    await chmod(restored, 0o700);
    log(`starting the restored copy in ${scratch} (recovery to ${manifest.restore_point})`);
    const server = await startEmbeddedPostgres({ dataDir: scratch });
    try {
      const pending = await pendingMigrations(server.url);
      if (pending.length > 0) problems.push(`pending migrations: ${pending.join(', ')}`);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      try {
        await client.query('BEGIN');
        const counts = await countTables(client);
        await client.query('COMMIT');
        for (const [table, expected] of Object.entries(manifest.counts)) {
          if (counts[table] !== expected) problems.push(`${table}: ${counts[table] ?? 'missing'} rows, the manifest says ${expected}`);
        }
      } finally {
        await client.end();
      }
    } finally {
      await server.stop();
    }
  } catch (error) {
    problems.push((error as Error).message);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const ok = problems.length === 0;
  const live = await embeddedDatabase(options.dataDir, log);
  try {
    await recordOutcome(live.url, 'restore_test', ok, 'make restore-test');
  } finally {
    await live.stop();
  }
  return { ok, problems };
}

/** The newest backup below `backupDir` (labels sort by time). */
export async function latestBackup(backupDir: string): Promise<string | null> {
  const names = await readdir(backupDir).catch(() => [] as string[]);
  const backups = [];
  for (const name of names.filter((n) => n.startsWith('crm-backup-')).sort()) {
    if ((await stat(path.join(backupDir, name, 'manifest.json')).catch(() => null)) !== null) backups.push(name);
  }
  const last = backups.at(-1);
  return last === undefined ? null : path.join(backupDir, last);
}
