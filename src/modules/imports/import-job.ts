// The import job: graphile-worker's task for an import, on the API's process; its batches run on the import thread,
// and the job finishes the import (status, `import.finished`) and counts the table again after a large one.
import type { TaskList } from 'graphile-worker';
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { scopeToOrganization, type TenantDb } from '../../db/tenant-scope.js';
import type { ActivityActor } from '../../db/tenant-writes.js';
import { isInterruptedAttempt, JOBS, mayRetry, rowIdOf } from '../../jobs/queue.js';
import { IMPORT_BATCH, inTransaction } from './import-batches.js';
import { IMPORT_KIND_SPECS, type ColumnFields } from './import-file.js';
import { runImportInThread, type ThreadConnection } from './import-thread.js';
import { finishImport } from './service.js';

/**
 * The import's starter as a timeline actor, named as now (the entry keeps the name): the user, or the workspace API
 * key; an import queued before imports recorded their starter has neither, and its entries name no one.
 */
async function starterOf(
  db: Db,
  tenant: TenantDb,
  row: { createdById: string | null; createdByApiKeyId: string | null },
): Promise<ActivityActor> {
  if (row.createdByApiKeyId) {
    const key = await tenant.apiKey.findFirst({ where: { id: row.createdByApiKeyId }, select: { name: true } });
    return { type: 'api_key', id: row.createdByApiKeyId, name: key?.name ?? null };
  }
  const user = row.createdById ? await db.user.findUnique({ where: { id: row.createdById }, select: { username: true } }) : null;
  return { type: 'user', id: row.createdById, name: user?.username ?? null };
}

export interface ImportTaskDeps {
  db: Db;
  /** The app's pool: the ANALYZE after a large import. */
  pool: pg.Pool;
  /** Where the import thread connects for the batches (the app's DATABASE_URL). */
  connection: ThreadConnection;
  /** Rows per batch; IMPORT_BATCH unless a test wants many batches from a few rows. */
  batchSize?: number;
  /** Rows written from which a finished import ANALYZEs its table; ANALYZE_AFTER_ROWS unless a test wants it sooner. */
  analyzeAfterRows?: number;
}

/**
 * A finished import that wrote this many rows counts its table again (ANALYZE), instead of waiting for autovacuum,
 * which does so only once a tenth of the table changed: until then the planner takes the workspace for as small as
 * it was (a new one for empty), and the API's lists, searches and the deletion of its records are planned for that.
 */
export const ANALYZE_AFTER_ROWS = 10_000;

/**
 * ANALYZEs the import's table, giving up after a second's wait for its lock (autovacuum may be counting it already);
 * best effort: a failure is logged, the import stays finished.
 */
async function countAgain(pool: pg.Pool, table: string, log: { warn(message: string): void }): Promise<void> {
  try {
    await inTransaction(pool, async (client) => {
      await client.query("SET LOCAL lock_timeout = '1s'");
      await client.query(`ANALYZE ${table}`);
    });
  } catch (error) {
    log.warn(`ANALYZE ${table} after an import: ${(error as Error).message}`);
  }
}

/**
 * The import task. A failure (the database went away, a batch's statement failed) rolls that batch back and is
 * retried with graphile-worker's backoff from the last committed batch; after the last attempt, or when the process
 * died during it, the import ends `failed` with what was committed counted.
 */
export function importTasks(deps: ImportTaskDeps): TaskList {
  return {
    [JOBS.import.task]: async (payload, helpers) => {
      const id = rowIdOf(payload);
      const owner = await deps.db.import.findUnique({ where: { id }, select: { organizationId: true } });
      if (!owner) return;
      // From here on the import's own organization is the only door.
      const db = scopeToOrganization(deps.db, owner.organizationId);
      const row = await db.import.findFirst({ where: { id } });
      if (!row || (row.status !== 'queued' && row.status !== 'running')) return;
      const attempt = helpers.job.attempts;
      if (isInterruptedAttempt(JOBS.import, attempt)) {
        await finishImport(db, owner.organizationId, id, 'failed');
        return;
      }
      const job = {
        actor: await starterOf(deps.db, db, row),
        organizationId: owner.organizationId,
        id,
        kind: row.kind,
        upsert: row.mode === 'upsert',
        fields: row.fields as ColumnFields,
        batchSize: deps.batchSize ?? IMPORT_BATCH,
        delimiter: row.delimiter,
      };
      try {
        if (await runImportInThread(deps.connection, job)) {
          const done = await finishImport(db, owner.organizationId, id);
          if (done && done.created + done.updated >= (deps.analyzeAfterRows ?? ANALYZE_AFTER_ROWS)) {
            await countAgain(deps.pool, IMPORT_KIND_SPECS[row.kind].table.table, helpers.logger);
          }
        }
      } catch (error) {
        if (mayRetry(JOBS.import, attempt)) throw error;
        helpers.logger.error(`import ${id} failed after ${attempt} attempts: ${(error as Error).message}`);
        await finishImport(db, owner.organizationId, id, 'failed');
      }
    },
  };
}
