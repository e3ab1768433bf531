// The page reader of one organization: lists, searches, syncs and CSV exports of tenant tables in one SQL statement on
// the shared pool each, always `organization_id = $1` first, with table and column names from `pageTable` definitions
// and request values only as parameters.
import type { Readable } from 'node:stream';
import type pg from 'pg';
import { listQuery, type PageFilter } from './page-query.js';
import {
  boundedPageStatement,
  candidatePageStatement,
  inRecencyOrder,
  keyedRows,
  queryPageStatement,
  recentPageStatement,
  withId,
  type KeyedRow,
  type QueryPageRequest,
} from './query-page.js';
import { pageTypes, type PageTable } from './page-table.js';
import { csvCopy, type ExportFilter } from './csv-export.js';
import { customFieldDefinitionsStatement } from './custom-field-definitions.js';
import { shapeCustomFields } from './custom-field-shape.js';
import { readWithIndexedPlan, searchPage } from './search-planner.js';
import { changesQuery, SYNC_HORIZON, type ChangeFilter, type DeletionRow, type SyncPosition } from './sync-changes.js';

/**
 * The most candidates a query page takes from the GIN index: more, and the term is common enough that reading in the
 * page's order meets a page of matches within a few thousand rows (candidates past this are not read).
 */
const QUERY_CANDIDATES = 3000;

/**
 * How many rows in the page's order a query with an indexed range walks before it asks the range's index: a range
 * holding 1 % of a workspace fills a page within about 5,000 (at well under a microsecond each), and past this its
 * matches are few enough for their candidates.
 */
const RANGE_WALK = 8000;

/** The page reader a tenant-scoped service receives: it can only read rows of `organizationId`. */
export function scopePages(pool: pg.Pool, organizationId: string) {
  /** The rows of a read of `spec`'s read list, their custom fields shaped as the API shows them. */
  const shaped = <Row extends object>(spec: PageTable<unknown, string>, rows: Row[]): Promise<Row[]> =>
    shapeCustomFields(pool, organizationId, spec, rows);
  return {
    /** Changes for an incremental sync (see `changesQuery`), each with its `sync_xid` for the cursor. */
    async changes<Row extends pg.QueryResultRow, Filter extends string>(
      spec: PageTable<Row, Filter>,
      filter: ChangeFilter<Filter>,
    ): Promise<Array<Row & { sync_xid: string }>> {
      return shaped(spec, (await pool.query<Row & { sync_xid: string }>(changesQuery(organizationId, spec, filter))).rows);
    },
    /** Deleted CRM records (tombstones kept 30 days), in the sync's order, below the same horizon. */
    async deletions(filter: { since: Date; after?: SyncPosition; limit: number; recordType?: string }): Promise<DeletionRow[]> {
      const values: unknown[] = [organizationId, filter.since.toISOString(), filter.limit];
      const where = ['organization_id = $1', 'deleted_at > $2::timestamptz', `changed_xid < ${SYNC_HORIZON}`];
      if (filter.recordType) where.push(`record_type = $${values.push(filter.recordType)}`);
      where.push(
        filter.after
          ? `(changed_xid, record_id) > ($${values.push(filter.after.xid)}::xid8, $${values.push(filter.after.id)}::uuid)`
          : 'changed_xid >= (SELECT min(changed_xid) FROM crm_deletions WHERE organization_id = $1 AND deleted_at > $2::timestamptz)',
      );
      const text =
        `SELECT record_type, record_id AS id, deleted_at AT TIME ZONE 'UTC' AS deleted_at, changed_xid::text AS sync_xid ` +
        `FROM crm_deletions WHERE ${where.join(' AND ')} ORDER BY changed_xid, record_id LIMIT $3`;
      return (await pool.query<DeletionRow>({ text, values, types: pageTypes })).rows;
    },
    /** `limit + 1` rows in the filter's order when more follow, else the rest: every page is full unless it is the last. */
    async read<Row extends pg.QueryResultRow, Filter extends string>(
      spec: PageTable<Row, Filter>,
      filter: PageFilter<Filter>,
    ): Promise<Row[]> {
      if (filter.search) return shaped(spec, await searchPage(pool, organizationId, spec, filter));
      return shaped(spec, (await pool.query<Row>(listQuery(organizationId, spec, filter))).rows);
    },
    /** A query page (POST …/query/): `limit + 1` rows when more follow, each with its order keys for the cursor. */
    async query<Row>(spec: PageTable<unknown, string>, request: QueryPageRequest): Promise<KeyedRow<Row>[]> {
      const keyCount = withId(spec.table, request.keys).length;
      const range = request.indexed && 'condition' in request.indexed ? request.indexed.condition : undefined;
      const recent = range && inRecencyOrder(spec.table, request.keys);
      if (range) {
        // A range: its matches are read in order first, as far as a page of a common range reaches (its candidates
        // would all be read to count them: the range's index holds expressions, so its scan visits every row). In the
        // default order the field's recency index walks the newest rows without reading them from the table.
        const statement = recent
          ? recentPageStatement(organizationId, spec, request, range, RANGE_WALK)
          : boundedPageStatement(organizationId, spec, request, RANGE_WALK);
        const { rows } = await pool.query<Record<string, unknown>>(statement);
        if (rows.length > request.limit) return keyedRows<Row>(await shaped(spec, rows), keyCount);
      }
      if (request.indexed) {
        // A rare term or range: its few candidates from the index hold the whole page, whatever the order (an ordered
        // read would pass every row before the first match). A common one: read in order, which meets its matches soon.
        // A term's candidates come from a GIN bitmap (INDEXED_PLAN); a range's from its b-tree, which the planner picks.
        const statement = candidatePageStatement(organizationId, spec, request, request.indexed, QUERY_CANDIDATES);
        const rows =
          'text' in request.indexed
            ? await readWithIndexedPlan<Record<string, unknown>>(pool, statement)
            : (await pool.query<Record<string, unknown>>(statement)).rows;
        if (Number(rows[0]?.query_candidates) <= QUERY_CANDIDATES) {
          const hits = rows.filter((row) => row.query_hit === true).map(({ query_candidates: _n, query_hit: _hit, ...row }) => row);
          return keyedRows<Row>(await shaped(spec, hits), keyCount);
        }
      }
      // A common range whose matches lie far from the newest rows: in the default order, the range's condition in the
      // indexed form lets the recency index check each entry's value before the row is read.
      const ordered = recent ? { ...request, conditions: [...request.conditions, range] } : request;
      const { rows } = await pool.query<Record<string, unknown>>(queryPageStatement(organizationId, spec, ordered));
      return keyedRows<Row>(await shaped(spec, rows), keyCount);
    },
    /**
     * The saved view `id` of this workspace if `viewer` (a user id; null for an API key) sees it: a workspace view, or
     * its own personal one. The read a list through a view makes each page, without the ORM's cost per statement.
     */
    async savedView(id: string, viewer: string | null): Promise<Record<string, unknown> | undefined> {
      const text =
        'SELECT id, object, filter, search, sort, columns, visibility FROM saved_views WHERE organization_id = $1 AND id = $2 ' +
        "AND (visibility = 'workspace' OR (visibility = 'personal' AND created_by = $3))";
      return (await pool.query<Record<string, unknown>>({ name: 'crm-saved-view', text, values: [organizationId, id, viewer] })).rows[0];
    },
    /** The custom field definitions of one record type (`object`), archived ones too, in their order. */
    async customFieldDefinitions(object: string): Promise<Record<string, unknown>[]> {
      return (await pool.query<Record<string, unknown>>(customFieldDefinitionsStatement(organizationId, object))).rows;
    },
    /** Every row of the list's conditions and order as a CSV stream of `fields` (see `csvCopy`). */
    csv<Filter extends string>(
      spec: PageTable<unknown, Filter>,
      fields: readonly string[],
      filter: ExportFilter<Filter>,
    ): Promise<Readable> {
      return csvCopy(pool, organizationId, spec, fields, filter);
    },
  };
}

export type TenantPages = ReturnType<typeof scopePages>;
