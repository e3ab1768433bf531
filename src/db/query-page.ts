// The SQL of a query page (POST …/query/): the organization first, the archive state, the compiled filter and search,
// the rows after the cursor in a multi-key order (compared key by key, so directions may differ), every value a
// parameter. Each row also carries its order keys as text, for the next cursor.
import type pg from 'pg';
import type { ArchivedFilter, PageCondition } from './page-query.js';
import { pageTypes, type PageTable } from './page-table.js';
import { candidatesOf, matches } from './search-queries.js';

/** One key of a query's order: SQL over the row (identifiers from catalogs only), its SQL type, its direction. */
export interface OrderKey {
  sql: string;
  type: string;
  descending: boolean;
  /** The collation the key compares in (text keys): a cursor's value compares in it too. */
  collation?: string;
  /**
   * Never null, or null only on rows an earlier key (an `emptyFlag`) already puts last: ordered without `NULLS LAST`,
   * so that a descending key is its index's order (an index's DESC puts nulls first, and PostgreSQL does not know that
   * a NOT NULL column has none).
   */
  filled?: boolean;
  /** A field's empty flag (true when its value is empty): the field's first key, empty values last either way. */
  emptyFlag?: boolean;
}

export interface QueryPageRequest {
  conditions: readonly PageCondition[];
  archived: ArchivedFilter;
  search?: string;
  /** What every match holds that an index finds: the page may be read from that index's candidates. */
  indexed?: IndexedTerm;
  /** The order, `id` excluded: the statement adds it last, in the direction of the last key. */
  keys: readonly OrderKey[];
  /** The keys of the last row handed out (`id` last), as the statement returned them. */
  after?: readonly (string | null)[];
  limit: number;
}

/** A row of a query page with its order keys as text (`id` last). */
export interface KeyedRow<Row> {
  row: Row;
  keys: (string | null)[];
}

const ARCHIVED: Record<ArchivedFilter, string | undefined> = {
  active: 'archived_at IS NULL',
  archived: 'archived_at IS NOT NULL',
  all: undefined,
};

/** The order with its tiebreak, the record's id. */
export const withId = (table: string, keys: readonly OrderKey[]): OrderKey[] => [
  ...keys,
  { sql: `${table}.id`, type: 'uuid', descending: keys.at(-1)?.descending ?? false, filled: true },
];

/**
 * The default order of a query page, newest first (`created_at` descending, then `id`): what a custom field's recency
 * index is keyed by before its value (src/modules/custom-fields/index-job.ts).
 */
export const RECENCY_ORDER = 'created_at DESC, id DESC';

/**
 * The sample of a record table that its `<table>_recency_sample_idx` holds: one row in `RECENCY_SAMPLE.every` (the id's
 * last byte, random in every id we give), in its workspace's creation order (migration `recency_sample`). Where the
 * n-th newest row lies is read from about n / every of its entries.
 */
export const RECENCY_SAMPLE = { condition: 'get_byte(uuid_send(id), 15) < 4', every: 64 } as const;

/** Whether a page's order (`keys`, the id left out) is `RECENCY_ORDER`. */
export const inRecencyOrder = (table: string, keys: readonly OrderKey[]) =>
  keys.length === 1 && keys[0]?.sql === `${table}.created_at` && keys[0].descending;

/**
 * What every match holds that an index finds, so that the page can be read from the index's candidates instead of in
 * its order (see `candidatePageStatement`): a term of the GIN index of `search_text` (the query's `search`, or a
 * `contains` on a field search_text holds; which index condition serves it depends on its characters, see
 * `candidatesOf`), or a range of a custom field that has an index of its own (its `condition`).
 */
export type IndexedTerm = { text: string } | { condition: PageCondition };

/**
 * The conditions, order and order-key columns of a query page, its values pushed through `parameter`. `where` is all
 * of the conditions: `base` (the workspace, the archive state, the rows after the cursor), then `filters` (the
 * query's filter and search).
 */
function pageParts(spec: PageTable<unknown, string>, request: QueryPageRequest, parameter: (value: unknown, type: string) => string) {
  const base = ['organization_id = $1'];
  const archived = ARCHIVED[request.archived];
  if (archived) base.push(archived);
  const filters: string[] = [];
  for (const condition of request.conditions) filters.push(`(${condition(parameter)})`);
  if (request.search) filters.push(matches(parameter(request.search, 'text')));
  const keys = withId(spec.table, request.keys);
  const { after } = request;
  if (after) {
    // Rows after the position: equal on the keys before one, and past it on that one (NULL equals NULL here).
    const sent = keys.map((key, i) => {
      if (after[i] === null) return null;
      const value = parameter(after[i], key.type);
      return key.collation ? `(${value} COLLATE "${key.collation}")` : value;
    });
    const alternatives = keys.map((key, i) => {
      if (sent[i] === null) return undefined;
      const equal = keys.slice(0, i).map((previous, j) => (sent[j] === null ? `${previous.sql} IS NULL` : `${previous.sql} = ${sent[j]}`));
      return [...equal, `${key.sql} ${key.descending ? '<' : '>'} ${sent[i]}`].join(' AND ');
    });
    base.push(
      `(${
        alternatives
          .filter((alternative) => alternative !== undefined)
          .map((alternative) => `(${alternative})`)
          .join(' OR ') || 'false'
      })`,
    );
  }
  const order = orderBy(keys);
  const keyColumns = keys.map((key, i) => `to_json(${key.sql}) #>> '{}' AS query_key_${i}`).join(', ');
  return { base, filters, where: [...base, ...filters], keys, order, keyColumns, limit: parameter(request.limit + 1, 'int') };
}

/** The keys as an ORDER BY list. */
const orderBy = (keys: readonly OrderKey[]) =>
  keys.map((key) => `${key.sql} ${key.descending ? 'DESC' : 'ASC'}${key.filled ? '' : ' NULLS LAST'}`).join(', ');

/**
 * The first `limit` rows of `where` in the keys' order as two reads, when the order is a field's empty flag then a
 * descending value that an index holds (`filled` past the flag): its filled rows, then its empty ones, each read in
 * the rest of the order. A field's value index holds its flag and value ascending (empty values last); a descending
 * sort wants the flag ascending and the value descending, which no single scan of it gives, but each part is a
 * backward scan of it: a page, not a sort of the workspace. `null` when one read serves.
 */
function splitByEmptyFlag(table: string, where: readonly string[], keys: readonly OrderKey[], limit: string) {
  const [flag, value] = keys;
  if (!flag?.emptyFlag || !value?.descending || !value.filled) return null;
  // `IS TRUE`/`IS FALSE` keeps the flag a constant of the index's first column to PostgreSQL (`= false` would become
  // `IS NOT NULL` of the value), so that the rest of the order is the index's, backward.
  const part = (empty: boolean) =>
    `(SELECT * FROM ${table} WHERE ${[...where, `${flag.sql} IS ${empty ? 'TRUE' : 'FALSE'}`].join(' AND ')} ` +
    `ORDER BY ${orderBy(keys.slice(1))} LIMIT ${limit})`;
  return `(${part(false)} UNION ALL ${part(true)})`;
}

/** A statement's values, the workspace first (`$1`), and `parameter`, which adds one and returns its typed placeholder. */
function statementValues(organizationId: string) {
  const values: unknown[] = [organizationId];
  const parameter = (value: unknown, type: string) => `$${values.push(value)}::${type}`;
  return { values, parameter };
}

export function queryPageStatement(organizationId: string, spec: PageTable<unknown, string>, request: QueryPageRequest): pg.QueryConfig {
  const { values, parameter } = statementValues(organizationId);
  const { where, keys, order, keyColumns, limit } = pageParts(spec, request, parameter);
  const parts = splitByEmptyFlag(spec.table, where, keys, limit);
  const text = parts
    ? `SELECT ${spec.readList}, ${keyColumns} FROM ${parts} AS ${spec.table} ORDER BY ${order} LIMIT ${limit}`
    : `SELECT ${spec.readList}, ${keyColumns} FROM ${spec.table} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${limit}`;
  return { text, values, types: pageTypes };
}

/**
 * The same page read from the first `bound` rows of the workspace in the page's order only: complete when it holds
 * `limit + 1` rows (the first matches in order lie among the rows walked), inconclusive otherwise. What a range that
 * is common reads, at the cost of the rows walked before a page of matches, instead of counting its candidates.
 */
export function boundedPageStatement(
  organizationId: string,
  spec: PageTable<unknown, string>,
  request: QueryPageRequest,
  bound: number,
): pg.QueryConfig {
  const { values, parameter } = statementValues(organizationId);
  const { base, filters, keys, order, keyColumns, limit } = pageParts(spec, request, parameter);
  const walked = parameter(bound, 'int');
  const parts = splitByEmptyFlag(spec.table, base, keys, walked);
  const rows = parts
    ? `SELECT * FROM ${parts} AS ${spec.table} ORDER BY ${order} LIMIT ${walked}`
    : `SELECT * FROM ${spec.table} WHERE ${base.join(' AND ')} ORDER BY ${order} LIMIT ${walked}`;
  const text =
    `SELECT ${spec.readList}, ${keyColumns} FROM (${rows}) AS ${spec.table} ` +
    `WHERE ${filters.join(' AND ') || 'true'} ORDER BY ${order} LIMIT ${limit}`;
  return { text, values, types: pageTypes };
}

/**
 * The same page in `RECENCY_ORDER` read among about the workspace's `bound` newest rows (after the cursor) only, with
 * the range `condition` of a custom field, whose recency index serves it: the walk goes newest first and checks the
 * value in each index entry, so only matches are read from the table, and it stops at the `created_at` of about the
 * `bound`-th row, which the table's `RECENCY_SAMPLE` gives (no bound when the sample holds fewer rows: a small
 * workspace is walked whole). Complete when it holds `limit + 1` rows (the rows at or after any `created_at` are a
 * prefix of the order, so any bound keeps the page exact), inconclusive otherwise. What a common range reads, for a
 * fraction of a row walk's cost.
 */
export function recentPageStatement(
  organizationId: string,
  spec: PageTable<unknown, string>,
  request: QueryPageRequest,
  condition: PageCondition,
  bound: number,
): pg.QueryConfig {
  const { values, parameter } = statementValues(organizationId);
  const { where, order, keyColumns, limit } = pageParts(spec, request, parameter);
  const { table } = spec;
  const [at, id] = request.after ?? [];
  // The cursor again as a row comparison, which bounds an index scan (pageParts' form, alternatives joined by OR, is
  // only a filter); the recency order's keys are never empty.
  const position = at && id ? `(${parameter(at, 'timestamptz')}, ${parameter(id, 'uuid')})` : undefined;
  const sampled = parameter(Math.ceil(bound / RECENCY_SAMPLE.every), 'int');
  const newest =
    `(SELECT CASE WHEN count(*) < ${sampled} THEN '-infinity' ELSE min(created_at) END FROM (SELECT created_at FROM ${table} ` +
    `WHERE organization_id = $1 AND ${RECENCY_SAMPLE.condition}${position ? ` AND created_at <= ${parameter(at, 'timestamptz')}` : ''} ` +
    `ORDER BY created_at DESC LIMIT ${sampled}) AS newest)`;
  const conditions = [...where, `(${condition(parameter)})`, `${table}.created_at >= ${newest}`];
  if (position) conditions.push(`(${table}.created_at, ${table}.id) < ${position}`);
  const text = `SELECT ${spec.readList}, ${keyColumns} FROM ${table} WHERE ${conditions.join(' AND ')} ORDER BY ${order} LIMIT ${limit}`;
  return { text, values, types: pageTypes };
}

/**
 * The same page read from the workspace's rows an index finds for `term` (a superset of the matches: a term's from the
 * GIN index of search_text, a range's from its custom field's b-tree), at most `cap + 1` of them, named as the table
 * so that the page's SQL reads them unchanged. Each row carries `query_candidates`, their count: past `cap` the
 * candidates were cut short and the page must be read in its order instead (a common term, whose matches an ordered
 * read meets soon). No page row: one row with the count alone.
 */
export function candidatePageStatement(
  organizationId: string,
  spec: PageTable<unknown, string>,
  request: QueryPageRequest,
  term: IndexedTerm,
  cap: number,
): pg.QueryConfig {
  const { values, parameter } = statementValues(organizationId);
  // A term's candidates come from a GIN bitmap, a range's from its b-tree (whose key holds expressions, so its scan
  // visits each row: reading ids first and rows after would visit them twice).
  const candidates = 'text' in term ? candidatesOf(term.text, parameter(term.text, 'text')) : term.condition(parameter);
  const { where, order, keyColumns, limit } = pageParts(spec, request, parameter);
  const text =
    `WITH candidate AS MATERIALIZED (SELECT * FROM ${spec.table} WHERE organization_id = $1 AND ${candidates} ` +
    `LIMIT ${parameter(cap + 1, 'int')}), ` +
    // The page's rows are picked among the candidates first and shaped after (the API's columns, the custom fields'
    // map), so that only they are shaped, not every candidate. Past the cap the page is read in order instead: no
    // candidate is filtered or sorted for nothing.
    `page AS (SELECT ${spec.readList}, ${keyColumns}, true AS query_hit FROM (SELECT * FROM candidate AS ${spec.table} ` +
    `WHERE (SELECT count(*) FROM candidate) <= ${cap} AND ${where.join(' AND ')} ORDER BY ${order} LIMIT ${limit}) AS ${spec.table} ` +
    `ORDER BY ${order}) ` +
    'SELECT (SELECT count(*) FROM candidate)::int AS query_candidates, page.* FROM (SELECT) AS one LEFT JOIN page ON true';
  return { text, values, types: pageTypes };
}

/** Splits the statement's rows into the API rows and their keys. */
export function keyedRows<Row>(rows: Record<string, unknown>[], keyCount: number): KeyedRow<Row>[] {
  return rows.map((raw) => {
    const row: Record<string, unknown> = { ...raw };
    const keys: (string | null)[] = [];
    for (let i = 0; i < keyCount; i += 1) {
      const value = row[`query_key_${i}`];
      keys.push(value === null || value === undefined ? null : String(value));
      delete row[`query_key_${i}`];
    }
    return { row: row as Row, keys };
  });
}
