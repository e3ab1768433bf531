// The SQL of an incremental sync: the rows changed after a position, in the order of the transactions that wrote them.
import { NEWEST_FIRST } from '../lib/pagination.js';
import { conditionsOf, type PageCondition } from './page-query.js';
import { pageTypes, type PageTable } from './page-table.js';

/** Where an incremental sync continues: the writing transaction (xid8 as text) and id of the last change handed out. */
export interface SyncPosition {
  xid: string;
  id: string;
}

/** A sync request: changes after `since` (the first call) or after `after` (the cursor), at most `limit`. */
export interface ChangeFilter<Filter extends string> {
  since: Date;
  after?: SyncPosition;
  limit: number;
  equals?: Partial<Record<Filter, string>>;
  conditions?: readonly PageCondition[];
}

/**
 * Changes stable enough to hand out: written by transactions older than the oldest one still running. A transaction
 * that began earlier and commits later cannot get an id below this any more, so a cursor past a change never passes
 * over one that commits late (it is handed out once its transaction has ended and the horizon moved past it). On a
 * replica the horizon is the replayed primary's: a transaction not replayed yet still counts as running there.
 */
export const SYNC_HORIZON = 'pg_snapshot_xmin(pg_current_snapshot())';

/**
 * The changed rows of a table after a sync position, in the order of the transactions that wrote them, then id; the
 * first call starts at the oldest transaction that wrote a row changed after `since` (the (organization_id,
 * updated_at) index finds those rows), and `updated_at > since` holds for every row of the walk.
 */
export function changesQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: ChangeFilter<Filter>,
) {
  const { values, where, parameter } = conditionsOf(
    organizationId,
    spec,
    // A sync has no list cursor: none of the conditions built here depends on the order.
    { equals: filter.equals, conditions: filter.conditions, limit: filter.limit, order: NEWEST_FIRST },
    undefined,
  );
  const since = parameter(filter.since.toISOString(), 'timestamptz');
  where.push(`updated_at > ${since}`, `changed_xid < ${SYNC_HORIZON}`);
  where.push(
    filter.after
      ? `(changed_xid, id) > (${parameter(filter.after.xid, 'xid8')}, ${parameter(filter.after.id, 'uuid')})`
      : `changed_xid >= (SELECT min(changed_xid) FROM ${spec.table} WHERE organization_id = $1 AND updated_at > ${since})`,
  );
  return {
    text:
      `SELECT ${spec.readList}, changed_xid::text AS sync_xid FROM ${spec.table} WHERE ${where.join(' AND ')} ` +
      `ORDER BY changed_xid, id LIMIT ${parameter(filter.limit, 'int')}`,
    values,
    types: pageTypes,
  };
}

/** A deletion of the sync's feed: the record's type and id, when, and its position in the feed. */
export interface DeletionRow {
  record_type: 'company' | 'contact' | 'deal' | 'task';
  id: string;
  deleted_at: string;
  sync_xid: string;
}
