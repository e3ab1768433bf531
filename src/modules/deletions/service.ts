// The deletions feed of a workspace: tombstones of deleted companies, contacts, deals and tasks, in the order of the incremental
// sync (db/sync-changes.ts), kept 30 days by the database (the migration crm_sync purges older ones).
import type { SyncPosition } from '../../db/sync-changes.js';
import type { TenantPages } from '../../db/tenant-pages.js';
import { ProblemError } from '../../lib/problem.js';
import type { DeletionDto } from './schemas.js';

/** How long the database keeps a tombstone (the purge in the migration crm_sync says the same). */
export const DELETION_RETENTION_DAYS = 30;

export interface DeletionQuery {
  since: Date;
  after?: SyncPosition;
  limit: number;
  recordType?: 'company' | 'contact' | 'deal' | 'task' | 'note';
}

/** The deletions feed of a workspace; `list` takes the request's tenant-bound page reader. */
export function createDeletionService() {
  return { list: listDeletions };
}

/** The deletions after `since` (or after the cursor), and where the feed goes on (the last one handed out). */
async function listDeletions(pages: TenantPages, query: DeletionQuery): Promise<{ items: DeletionDto[]; next?: SyncPosition }> {
  if (query.since.getTime() < Date.now() - DELETION_RETENTION_DAYS * 86_400_000) {
    throw new ProblemError({
      status: 410,
      code: 'deletions_expired',
      title: 'Gone',
      detail: `Deletions are kept ${DELETION_RETENTION_DAYS} days: reload the list instead of synchronising from that far back.`,
    });
  }
  const rows = await pages.deletions(query);
  const last = rows.at(-1);
  return {
    items: rows.map(({ sync_xid: _position, ...deletion }) => deletion),
    next: last ? { xid: last.sync_xid, id: last.id } : query.after,
  };
}
