// Copies a running PostgreSQL cluster's files for a base backup (backups, replicas): what the base-backup protocol copies.
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Directories whose contents PostgreSQL rebuilds at start (the base-backup protocol leaves them out too). */
const EMPTIED = new Set(['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans']);
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'backup_label', 'tablespace_map', 'standby.signal', 'recovery.signal']);

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Copies a live directory tree; files that vanish meanwhile are skipped (WAL replay restores what they held). With
 * `cluster`, the top level is a data directory: the directories above are created empty, the server's own files skipped.
 */
export async function copyTree(from: string, to: string, cluster = false): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  const entries = await readdir(from, { withFileTypes: true }).catch((error: unknown) => (isMissing(error) ? [] : Promise.reject(error)));
  for (const entry of entries) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      if (cluster && EMPTIED.has(entry.name)) await mkdir(target, { recursive: true, mode: 0o700 });
      else await copyTree(source, target);
    } else if (entry.isFile() && !(cluster && SKIPPED_FILES.has(entry.name))) {
      await copyFile(source, target).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)));
    }
  }
}
