// Keyset pages of tenant tables read with one SQL statement on the shared pool: the CRM list endpoints, without
// Prisma's per-query cost (it halved their throughput). Bound to one organization like the tenant-scoped Prisma
// client: `organization_id = $1` is always the first condition, and tables, columns and filterable columns come
// from the `pageTable` definitions of the services, never from a request; request values are only parameters.
import { availableParallelism } from 'node:os';
import pg from 'pg';
import type { PagePosition, PageRequest } from '../lib/pagination.js';
import { Slots } from '../lib/slots.js';
import { foldCase, SEARCH_SCAN_ROWS } from '../lib/text-search.js';

const IDENTIFIER = /^[a-z][a-z0-9_]*$/;

/** What a list reads: a tenant table, the API fields it returns, and the columns a list may filter by equality. */
export interface PageTable<Row, Filter extends string> {
  readonly table: string;
  /** The API fields besides the timestamps: the columns a write may set (all but `id`). */
  readonly columns: readonly string[];
  /** The API fields with the timestamps formatted by the database: for writes, whose automation payload is built in SQL. */
  readonly selectList: string;
  /** The same fields with the timestamps as UTC `timestamp`s, formatted by `pageTypes` (cheaper: see `isoFromTimestamp`). */
  readonly readList: string;
  readonly filterColumns: readonly Filter[];
  /** The filter columns an index serves in list order: a search scan seeks them instead of counting other rows. */
  readonly indexedFilters: readonly Filter[];
  /** Read-only API fields computed by SQL expressions over the row (qualified by the table name), e.g. a user's name. */
  readonly computed: readonly string[];
  /** Only carries `Row` for the type checker. */
  readonly row?: Row;
}

/**
 * Defines the list of a tenant table whose API field names are its column names. `created_at` and `updated_at` are
 * added, written as `Date#toISOString` writes them (the columns are `timestamptz(3)`: milliseconds, like cursors).
 * The table needs `organization_id`, `created_at`, `id` and a trigger-kept `search_text`.
 */
export function pageTable<Row extends { id: string; created_at: string }, Filter extends string = never>(
  table: string,
  columns: readonly Exclude<keyof Row & string, 'created_at' | 'updated_at'>[],
  filterColumns: readonly Filter[] = [],
  indexedFilters: readonly Filter[] = [],
  computed: Readonly<Record<string, string>> = {},
): PageTable<Row, Filter> {
  for (const name of [table, ...columns, ...filterColumns]) {
    if (!IDENTIFIER.test(name)) throw new Error(`not a plain SQL identifier: ${name}`);
  }
  const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
  const utc = (column: string) => `${column} AT TIME ZONE 'UTC' AS ${column}`;
  const expressions = Object.entries(computed).map(([name, expression]) => `${expression} AS ${name}`);
  return {
    table,
    columns,
    selectList: [...columns, ...expressions, iso('created_at'), iso('updated_at')].join(', '),
    readList: [...columns, ...expressions, utc('created_at'), utc('updated_at')].join(', '),
    filterColumns,
    indexedFilters,
    computed: Object.keys(computed),
  };
}

/** PostgreSQL's `timestamp` output in the ISO DateStyle: date, time, and up to six fraction digits without trailing zeros. */
const TIMESTAMP_TEXT = /^(\d{4,})-(\d\d)-(\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?( BC)?$/;

/** The milliseconds of a fraction of 0–6 digits (PostgreSQL drops trailing zeros), as three digits. */
const milliseconds = (fraction: string) => (fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0'));

/**
 * A UTC `timestamp` as `to_char(…, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` writes it (the API's format, milliseconds like
 * cursors). Reads take this path because PostgreSQL's to_char cost about 70 µs of its CPU per 50-row page, half the
 * statement. The usual shape is cut by position (a regular expression here allocated a fifth of a list request's
 * garbage); anything else (a year after 9999, BC) goes through the pattern.
 */
export function isoFromTimestamp(text: string): string {
  const { length } = text;
  const last = text.charCodeAt(length - 1);
  if (
    length >= 19 &&
    length <= 26 &&
    text.charCodeAt(4) === 45 &&
    text.charCodeAt(10) === 32 &&
    (length === 19 || text.charCodeAt(19) === 46) &&
    last >= 48 &&
    last <= 57
  ) {
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${milliseconds(text.slice(20))}Z`;
  }
  const match = TIMESTAMP_TEXT.exec(text);
  if (!match) throw new Error(`unexpected timestamp text: ${text} (the connection's DateStyle must be ISO)`);
  const [, year, month, day, time, fraction = ''] = match;
  return `${year}-${month}-${day}T${time}.${milliseconds(fraction)}Z`;
}

const TIMESTAMP_OID = 1114;
/** The type parsers of page reads: `timestamp` (the UTC timestamps of `readList`) as API text, every other type as usual. */
export const pageTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === TIMESTAMP_OID && format !== 'binary'
      ? isoFromTimestamp
      : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** The page (`limit + 1` rows are read, so the pager knows whether more remain) and its conditions. */
export interface PageFilter<Filter extends string> extends PageRequest {
  /** Equality conditions; an undefined value is no condition. */
  equals?: Partial<Record<Filter, string>>;
  /** Case-insensitive substring of the searchable columns (see lib/text-search.ts); empty or absent: none. */
  search?: string;
  /** Of a table with `archived_at`: `active` (not archived), `archived`, or `all`; absent: no condition. */
  archived?: ArchivedFilter;
}

export type ArchivedFilter = 'active' | 'archived' | 'all';
const ARCHIVED_CONDITIONS: Record<ArchivedFilter, string | undefined> = {
  active: 'archived_at IS NULL',
  archived: 'archived_at IS NOT NULL',
  all: undefined,
};

/**
 * The parts of a page query: its conditions (`organization_id = $1` first) and their parameter values. With `opaque`,
 * each value is read through `(SELECT $n::type)`, which hides it from the planner (see `listQuery`).
 */
function conditionsOf<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  opaque = false,
) {
  const values: unknown[] = [organizationId];
  const reference = (index: number, type: string) => (opaque ? `(SELECT $${index}::${type})` : `$${index}`);
  const where = [`organization_id = ${reference(1, 'uuid')}`];
  const unindexed: string[] = [];
  const parameter = (value: unknown, type: string) => reference(values.push(value), type);
  for (const column of spec.filterColumns) {
    const value = filter.equals?.[column];
    // Only filterless shapes are opaque, so an equality value is always a plain parameter (planned with its value).
    if (value !== undefined) (spec.indexedFilters.includes(column) ? where : unindexed).push(`${column} = $${values.push(value)}`);
  }
  const archived = filter.archived && ARCHIVED_CONDITIONS[filter.archived];
  if (archived) unindexed.push(archived);
  if (filter.after) {
    // The redundant `created_at <=` bounds the index scan, so a deep page starts where the previous one ended.
    const at = values.push(filter.after.createdAt);
    const id = parameter(filter.after.id, 'uuid');
    where.push(`created_at <= ${reference(at, 'timestamptz')} AND (created_at < ${reference(at, 'timestamptz')} OR id < ${id})`);
  }
  return { values, where: [...where, ...unindexed].join(' AND '), seek: where.join(' AND '), unindexed, parameter };
}

/**
 * List order, newest first by (created_at, id), of the rows of `alias`: qualified, because in a statement that
 * selects `readList` a bare `created_at` would be its output column (a UTC `timestamp`, which no index serves).
 */
const listOrder = (alias: string) => `ORDER BY ${alias}.created_at DESC, ${alias}.id DESC`;

/** The page in list order: `limit + 1` rows. `source` is what is read, aliased to the table's name. */
const pageFrom = (spec: PageTable<unknown, string>, source: string, limit: string) =>
  `SELECT ${spec.readList} FROM ${source} AS ${spec.table} ${listOrder(spec.table)} LIMIT ${limit}`;

/**
 * A list without search. Filterless shapes (the first page and the cursor pages of a plain list, the hot path) are
 * named prepared statements whose values the planner cannot see: a custom plan for the visible values looks cheaper
 * than the generic one (a big workspace's 51 rows, a known LIMIT), so PostgreSQL would plan every page again, about
 * 60 µs of its CPU; opaque, the custom plans cost no less and the plan cache keeps the generic plan (the same
 * (organization_id, created_at, id) index scan) after five executions. Filtered shapes are planned per execution
 * with their values (one company's contacts use the company index).
 */
function listQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
): pg.QueryConfig {
  const filtered = spec.filterColumns.some((column) => filter.equals?.[column] !== undefined);
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, !filtered);
  const text = pageFrom(spec, `(SELECT * FROM ${spec.table} WHERE ${where})`, parameter(filter.limit + 1, 'int'));
  const name = `${spec.table}-page${filter.archived ? `-${filter.archived}` : ''}${filter.after ? '-after' : ''}`;
  return filtered ? { text, values, types: pageTypes } : { name, text, values, types: pageTypes };
}

/**
 * The scanned part of a search page: the next SEARCH_SCAN_ROWS rows in list order (the organization's
 * (created_at, id) index, read lazily), of which it returns the matches (`strpos` of the folded term: the same test
 * as the LIKE) up to `limit + 1`, plus the last row of the scan (`scan_end`) when there are that many rows, whether
 * it matches or not: where the next page resumes. That last row is found first, on the index alone (the rows it
 * skips are not read from the table), and bounds the scan for matches. Numbering the rows of one scan instead (a
 * window function, which copies every row it reads) took 0.93–1.19 ms a statement on the bench's million companies
 * against 0.73–0.85 ms; named (a shape is parsed once per connection), PostgreSQL's CPU per search request fell from
 * about 950 to 770 µs.
 */
function scanQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  term: string,
): pg.QueryConfig {
  const { values, seek, unindexed, parameter } = conditionsOf(organizationId, spec, filter);
  const limit = parameter(filter.limit + 1, 'int');
  const hit = [`strpos(search_text, ${parameter(foldCase(term), 'text')}) > 0`, ...unindexed].join(' AND ');
  const { table } = spec;
  const last = (column: string) => `(SELECT ${column} FROM scan_end)`;
  const lastAt = `coalesce(${last('created_at')}, '-infinity')`;
  // `created_at >=` bounds the index scan; the OR settles rows of the same millisecond. Without a last row: no bound.
  const within = `${table}.created_at >= ${lastAt} AND (${table}.created_at > ${lastAt} OR ${table}.id >= ${last('id')})`;
  const text =
    `WITH scan_end AS MATERIALIZED (SELECT created_at, id FROM ${table} WHERE ${seek} ` +
    `${listOrder(table)} OFFSET ${SEARCH_SCAN_ROWS - 1} LIMIT 1) ` +
    `SELECT * FROM ((SELECT ${spec.readList}, true AS scan_hit, false AS scan_end FROM ${table} ` +
    `WHERE ${seek} AND ${within} AND ${hit} ${listOrder(table)} LIMIT ${limit}) ` +
    `UNION ALL (SELECT ${spec.readList}, false, true FROM ${table} WHERE organization_id = $1 AND id = ${last('id')})) ` +
    `AS page ${listOrder('page')}`;
  // Named by what shapes the text (the filters present, a cursor), so each connection parses a shape once.
  const shape = spec.filterColumns.filter((column) => filter.equals?.[column] !== undefined);
  const name = [`${table}-search`, ...shape, ...(filter.archived ? [filter.archived] : []), ...(filter.after ? ['after'] : [])].join('-');
  return { name, text, values, types: pageTypes };
}

/**
 * Search scans this process runs at once. Each costs PostgreSQL about a millisecond of CPU: with more running than
 * its cores can serve they only take turns, and fill the pool that every other request needs for its round trips.
 * Measured on 2 cores with PostgreSQL on the same machine, the bench's search matrix on a reused seed: with the whole
 * pool of 10 open to them, worst p99 127 and 74 ms (most cells 50–70); with this bound, 77 and 68 ms (most 40–55).
 */
const searchScans = new Slots(2 * availableParallelism());

/** Rows of a page (`limit + 1` when more follow) and, when a search page ended its scan early, where it stopped. */
export interface PageRows<Row> {
  rows: Row[];
  /** The last row the search read: the next page starts after it, although this one has at most `limit` rows. */
  scannedTo?: PagePosition;
}

type ScanRow = { id: string; created_at: string; scan_hit: boolean; scan_end: boolean };

/**
 * A search page: the matches of the scan, `limit + 1` when the page filled up before the scan bound (the pager
 * links after the last one), else all of them and, when the scan stopped at its bound rather than at the last row,
 * the row it stopped at (the next page resumes after it, however many matches this page has, none included).
 */
async function searchPage<Row extends pg.QueryResultRow, Filter extends string>(
  pool: pg.Pool,
  organizationId: string,
  spec: PageTable<Row, Filter>,
  filter: PageFilter<Filter>,
  term: string,
): Promise<PageRows<Row>> {
  const query = scanQuery(organizationId, spec, filter, term);
  const scanned = (await searchScans.run(() => pool.query<Row & ScanRow>(query))).rows;
  const end = scanned.find((row) => row.scan_end);
  const rows = scanned.filter((row) => row.scan_hit).map(({ scan_hit: _hit, scan_end: _end, ...row }) => row as unknown as Row);
  if (rows.length > filter.limit || !end) return { rows };
  return { rows, scannedTo: { createdAt: new Date(end.created_at), id: end.id } };
}

/** The page reader a tenant-scoped service receives: it can only read rows of `organizationId`. */
export function scopePages(pool: pg.Pool, organizationId: string) {
  return {
    async read<Row extends pg.QueryResultRow, Filter extends string>(
      spec: PageTable<Row, Filter>,
      filter: PageFilter<Filter>,
    ): Promise<PageRows<Row>> {
      if (filter.search) return searchPage(pool, organizationId, spec, filter, filter.search);
      return { rows: (await pool.query<Row>(listQuery(organizationId, spec, filter))).rows };
    },
  };
}

export type TenantPages = ReturnType<typeof scopePages>;
