// Keyset pages of tenant tables read with one SQL statement on the shared pool: the CRM list endpoints, without
// Prisma's per-query cost (it halved their throughput). Bound to one organization like the tenant-scoped Prisma
// client: `organization_id = $1` is always the first condition, and tables, columns and filterable columns come
// from the `pageTable` definitions of the services, never from a request; request values are only parameters.
import { availableParallelism } from 'node:os';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { NEWEST_FIRST, type ListOrder, type ListPageRequest, type ListPosition, type SortKeyType } from '../lib/pagination.js';
import { Slots } from '../lib/slots.js';

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
  /** The orders a list offers by API name (`sort`), each the columns it sorts by before `id`, with their types. */
  readonly sorts: Readonly<Record<string, readonly SortKey[]>>;
  /** Read-only API fields computed by SQL expressions over the row (qualified by the table name), e.g. a user's name. */
  readonly computed: readonly string[];
  /** Only carries `Row` for the type checker. */
  readonly row?: Row;
}

/** A column a list sorts by (an API field of the same name). */
export interface SortKey {
  column: string;
  type: SortKeyType;
}

/** The sorts every list has: by creation (the default, newest first) and by last change. */
const TIMESTAMP_SORTS = {
  created_at: [{ column: 'created_at', type: 'timestamp' }],
  updated_at: [{ column: 'updated_at', type: 'timestamp' }],
} as const satisfies Record<string, readonly SortKey[]>;

/**
 * Defines the list of a tenant table whose API field names are its column names. `created_at` and `updated_at` are
 * added, written as `Date#toISOString` writes them (the columns are `timestamptz(3)`: milliseconds, like cursors).
 * The table needs `organization_id`, `created_at`, `id` and a trigger-kept `search_text`.
 */
export function pageTable<Row extends { id: string; created_at: string }, Filter extends string = never>(
  table: string,
  columns: readonly Exclude<keyof Row & string, 'created_at' | 'updated_at'>[],
  filterColumns: readonly Filter[] = [],
  /** Sorts besides `created_at` and `updated_at`, each served by an (organization_id, columns…, id) index. */
  sorts: Readonly<Record<string, readonly SortKey[]>> = {},
  computed: Readonly<Record<string, string>> = {},
): PageTable<Row, Filter> {
  const allSorts = { ...TIMESTAMP_SORTS, ...sorts };
  const sortColumns = Object.values(allSorts).flatMap((keys) => keys.map((key) => key.column));
  for (const name of [table, ...columns, ...filterColumns, ...Object.keys(allSorts), ...sortColumns]) {
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
    sorts: allSorts,
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
export interface PageFilter<Filter extends string> extends ListPageRequest {
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

/** The sort columns of `order` with their SQL types, and the direction. */
function sortOf(spec: PageTable<unknown, string>, order: ListOrder) {
  const keys = spec.sorts[order.sort];
  if (!keys) throw new Error(`${spec.table} has no sort ${order.sort}`);
  return {
    columns: [...keys.map((key) => key.column), 'id'],
    types: [...keys.map((key) => (key.type === 'timestamp' ? 'timestamptz' : 'text')), 'uuid'],
    direction: order.descending ? 'DESC' : 'ASC',
    /** Rows after a position in this order: a row comparison, which the sort's (organization, keys…, id) index seeks. */
    comparison: order.descending ? '<' : '>',
  };
}

/** `ORDER BY` the sort of `order`, of the rows of `alias`: qualified, because `readList` names output columns alike. */
function orderBy(spec: PageTable<unknown, string>, order: ListOrder, alias: string): string {
  const { columns, direction } = sortOf(spec, order);
  return `ORDER BY ${columns.map((column) => `${alias}.${column} ${direction}`).join(', ')}`;
}

/**
 * A statement's parameters and its conditions: `organization_id = $1` first, the equality filters, and the rows
 * after `after` in list order. With `opaque`, each value is read through `(SELECT $n::type)`, which hides it from the
 * planner (see `listQuery`).
 */
function conditionsOf<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  after: ListPosition | undefined,
  opaque = false,
) {
  const values: unknown[] = [organizationId];
  const parameter = (value: unknown, type: string) => {
    const index = values.push(value);
    return opaque ? `(SELECT $${index}::${type})` : `$${index}::${type}`;
  };
  const where = [`organization_id = ${opaque ? '(SELECT $1::uuid)' : '$1'}`];
  for (const column of spec.filterColumns) {
    const value = filter.equals?.[column];
    // Only filterless shapes are opaque, so an equality value is always a plain parameter (planned with its value).
    if (value !== undefined) where.push(`${column} = $${values.push(value)}`);
  }
  const archived = filter.archived && ARCHIVED_CONDITIONS[filter.archived];
  if (archived) where.push(archived);
  if (after) where.push(afterPosition(spec, filter.order, after, parameter));
  return { values, where, parameter };
}

/** The rows after `position` in `order`. */
function afterPosition(
  spec: PageTable<unknown, string>,
  order: ListOrder,
  position: ListPosition,
  parameter: (value: unknown, type: string) => string,
): string {
  const { columns, types, comparison } = sortOf(spec, order);
  // Timestamps go to SQL as `Date#toISOString` writes them: a cursor's text was only checked to be a date.
  const keys = [...position.values, position.id].map((value, i) =>
    parameter(types[i] === 'timestamptz' ? new Date(value).toISOString() : value, types[i] ?? 'text'),
  );
  return `(${columns.join(', ')}) ${comparison} (${keys.join(', ')})`;
}

/** The page in list order: `limit` rows of `source`, which is aliased to the table's name. */
const pageFrom = (spec: PageTable<unknown, string>, order: ListOrder, source: string, limit: string) =>
  `SELECT ${spec.readList} FROM ${source} AS ${spec.table} ${orderBy(spec, order, spec.table)} LIMIT ${limit}`;

/** Names a statement by what shapes its text (the sort, the filters present, a cursor), so a connection parses it once. */
function shapeName<Filter extends string>(spec: PageTable<unknown, Filter>, kind: string, filter: PageFilter<Filter>, after: boolean) {
  const filters = spec.filterColumns.filter((column) => filter.equals?.[column] !== undefined);
  const sort = `${filter.order.descending ? 'desc' : 'asc'}_${filter.order.sort}`;
  return [`${spec.table}-${kind}`, sort, ...filters, ...(filter.archived ? [filter.archived] : []), ...(after ? ['after'] : [])].join('-');
}

/**
 * A list without search. Filterless shapes (the first page and the cursor pages of a plain list, the hot path) are
 * named prepared statements whose values the planner cannot see: a custom plan for the visible values looks cheaper
 * than the generic one (a big workspace's 51 rows, a known LIMIT), so PostgreSQL would plan every page again, about
 * 60 µs of its CPU; opaque, the custom plans cost no less and the plan cache keeps the generic plan (the same index
 * scan of the sort's index) after five executions. Filtered shapes are planned per execution with their values (one
 * company's contacts use the company index).
 */
function listQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
): pg.QueryConfig {
  const filtered = spec.filterColumns.some((column) => filter.equals?.[column] !== undefined);
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, filter.after, !filtered);
  const text = pageFrom(
    spec,
    filter.order,
    `(SELECT * FROM ${spec.table} WHERE ${where.join(' AND ')})`,
    parameter(filter.limit + 1, 'int'),
  );
  const config = { text, values, types: pageTypes };
  return filtered ? config : { ...config, name: shapeName(spec, 'page', filter, filter.after !== undefined) };
}

/**
 * The test of a search: the row's folded text holds the term folded by the same `lower()`, every character literal.
 * The term is folded once, in a subquery: the scans are prepared statements, and in their generic plan a bare
 * `lower($n)` ran again for each row (5 of a far part's 23 ms).
 */
const matches = (term: string) => `strpos(search_text, (SELECT lower(${term}))) > 0`;

/**
 * The ordered part of a search: the first `rows` rows in list order after `after`, of which it returns the matches up
 * to `limit + 1` (`scan_hit`), plus the `rows`-th row itself when there are that many (`scan_end`), matching or not:
 * where the search goes on. The matches come from an index scan of the sort's index whose LIMIT stops it after
 * `rows` rows (or as soon as the page is full); the last row is found on the index alone.
 */
function scanQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  after: ListPosition | undefined,
  rows: number,
  wanted: number,
): pg.QueryConfig {
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, after);
  const term = parameter(filter.search, 'text');
  // The window carries only what the scan needs (the sort columns with id, and search_text): deforming every column
  // of its tens of thousands of rows cost a far part a sixth of its time. The read list is then read for the hits.
  const carried = [...sortOf(spec, filter.order).columns, 'search_text'].join(', ');
  const window = `(SELECT ${carried} FROM ${spec.table} WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, spec.table)} LIMIT ${parameter(rows, 'int')})`;
  const limit = parameter(wanted, 'int');
  const hitIds = `SELECT scan_window.id AS hit_id FROM ${window} AS scan_window WHERE ${matches(term)} ${orderBy(spec, filter.order, 'scan_window')} LIMIT ${limit}`;
  const hits =
    `SELECT ${spec.readList}, true AS scan_hit FROM (${hitIds}) AS scan_hits ` +
    `JOIN ${spec.table} ON ${spec.table}.organization_id = $1 AND ${spec.table}.id = scan_hits.hit_id ${orderBy(spec, filter.order, spec.table)}`;
  // The last row is found by id, then read once: the rows its OFFSET skips are never projected (their read list's
  // subqueries, such as an assignee's name, would run for each of them: 65,536 times for a far ordered part).
  const last = `SELECT scan_end.id FROM ${spec.table} AS scan_end WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, 'scan_end')} OFFSET ${parameter(rows - 1, 'int')} LIMIT 1`;
  // Only a part that did not fill the page needs its end: the condition is a one-time filter, checked before the
  // OFFSET scan, which a full page skips (a common term's page, and a far part that fills it: 65,536 index entries).
  const end = `SELECT ${spec.readList}, false FROM ${spec.table} WHERE (SELECT count(*) FROM hits) < ${limit} AND organization_id = $1 AND id = (${last})`;
  return {
    name: shapeName(spec, 'scan', filter, after !== undefined),
    text: `WITH hits AS MATERIALIZED (${hits}) SELECT * FROM hits UNION ALL (${end})`,
    values,
    types: pageTypes,
  };
}

/** A term with three word characters in a row (letters or digits): pg_trgm can extract a trigram of it for its index. */
const TRIGRAM_TERM = /[\p{L}\p{N}]{3}/u;

/**
 * The indexed part of a search: every match after `after` in list order, from a GIN index (pg_trgm for a term with
 * three word characters in a row; else crm_gram_pairs, asked for the term's 2-character substrings, or the pairs
 * its one character begins: see crm_gram_pairs_query), sorted, `wanted` of them. Its cost follows the number of
 * candidates the index yields, not the rows.
 */
function indexedQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  after: ListPosition | undefined,
  wanted: number,
  probe: string,
): { estimate: pg.QueryConfig; page: pg.QueryConfig } {
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, after);
  // The organization as a filter of the candidates, not a second bitmap: AND-ed with the organization's index (a
  // million entries for a big workspace) the GIN bitmap cost half a second.
  where[0] = '(organization_id = $1) IS TRUE';
  const search = filter.search ?? '';
  const term = parameter(search, 'text');
  // The index is asked for the probe (the term itself, or its rare part: see `probeOf`), every match then tested
  // for the whole term: a row holding the term holds any part of it.
  const candidates = probe === search ? candidatesOf(search, term) : candidatesOf(probe, parameter(probe, 'text'));
  const source = `(SELECT * FROM ${spec.table} WHERE ${[...where, candidates, matches(term)].join(' AND ')})`;
  return {
    // The planner's count of the rows holding the term in all workspaces, from search_text's statistics (its 300
    // most common values and histogram bounds, matched against the pattern), for every kind of term: the pairs
    // index's own statistics keep too few pairs, and counted a pair they do not hold as 0.45 % of the rows (9,000 of
    // two million, a far ordered part for a term that matches nothing).
    estimate: {
      text: `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${spec.table} WHERE ${substringPattern('$1::text')}`,
      values: [search],
    },
    page: { text: pageFrom(spec, filter.order, source, parameter(wanted, 'int')), values, types: pageTypes },
  };
}

/** search_text holds the term (the parameter `term`), every character literal: the condition pg_trgm's index serves. */
const substringPattern = (term: string) =>
  `search_text LIKE '%' || replace(replace(replace(lower(${term}), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/**
 * The condition a GIN index serves for a term (the parameter `term`): a superset of the matches, never fewer. A term
 * without a trigram asks crm_gram_pairs for its pairs, or for the pairs its one character begins (crm_gram_pairs_query).
 */
const candidatesOf = (search: string, term: string) =>
  TRIGRAM_TERM.test(search) ? substringPattern(term) : `crm_gram_pairs(search_text) @@ crm_gram_pairs_query(lower(${term}))`;

/**
 * The plan of the indexed part, set for its transaction only: the candidates from the GIN index (a bitmap), never an
 * index scan in list order filtering every row (PostgreSQL's estimate for a `LIKE '%…%'` cannot tell a term that
 * matches nothing from one that matches every hundredth row), no parallel workers (starting them costs more than
 * such a query), and memory enough that the bitmap stays exact: a lossy one rechecks every row of its pages, which
 * for crm_gram_pairs means computing it again (a common letter took minutes).
 */
const INDEXED_PLAN =
  'BEGIN READ ONLY; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; SET LOCAL enable_seqscan = off; ' +
  "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL work_mem = '64MB'";

/**
 * Rows the first ordered part of a search reads: a common term fills its page there, at the cost of an index scan
 * (about 0.4 µs a row); a rarer one goes on in the index.
 */
export const SEARCH_SCAN_ROWS = 2_000;
/**
 * The most rows a second ordered part reads, when the first found matches often enough to expect a full page within
 * half of it (a match in every 300 rows or more often): about 6 ms of index scan, where a GIN index would visit as
 * many candidates as the term has matches in all older rows.
 */
const SEARCH_MORE_ROWS = 16_000;
/**
 * The share of search_text's statistics sample above which a trigram is common: its posting list in the trigram index
 * is long (on a million rows, 20,000 entries and more) and it rules out few rows.
 */
const COMMON_GRAM_SHARE = 0.02;
/** How long a process keeps a table's statistics sample of search_text (it changes with each ANALYZE). */
const SAMPLE_TTL_MS = 10 * 60_000;

/** Values this process keeps for SAMPLE_TTL_MS each, at most `size` of them: the least recently kept goes first. */
class Memory<Value> {
  private readonly kept = new Map<string, { value: Value; at: number }>();

  constructor(private readonly size: number) {}

  get(key: string): Value | undefined {
    const known = this.kept.get(key);
    return known && Date.now() - known.at < SAMPLE_TTL_MS ? known.value : undefined;
  }

  keep(key: string, value: Value) {
    this.kept.delete(key);
    this.kept.set(key, { value, at: Date.now() });
    if (this.kept.size > this.size) this.kept.delete(this.kept.keys().next().value as string);
  }
}

/** Statistics samples by table (see `sampleOf`). */
const samples = new Memory<readonly string[]>(16);

/**
 * The values PostgreSQL's statistics keep of `table`.search_text (its most common values and histogram bounds,
 * lower-cased like the column): a sample of the rows, read once per SAMPLE_TTL_MS.
 */
async function sampleOf(pool: pg.Pool, table: string): Promise<readonly string[]> {
  const known = samples.get(table);
  if (known) return known;
  const { rows } = await pool.query<{ mcv: string[] | null; histogram: string[] | null }>(
    `SELECT most_common_vals::text::text[] AS mcv, histogram_bounds::text::text[] AS histogram FROM pg_stats
     WHERE schemaname = current_schema() AND tablename = $1 AND attname = 'search_text'`,
    [table],
  );
  const values = [...(rows[0]?.mcv ?? []), ...(rows[0]?.histogram ?? [])];
  samples.keep(table, values);
  return values;
}

/**
 * What the trigram index is asked for a term: the longest part of it whose trigrams are all rare in the statistics
 * sample, or the term itself. pg_trgm answers a `LIKE '%…%'` by reading the posting list of every trigram of the
 * pattern, and a trigram in every row (`per` of `person4242` among a million contacts named so) costs a page of its
 * list for each candidate: 1,227 pages and 43 ms for 121 candidates on the bench data, where the rare part alone
 * (`on4242`) reads short lists. The part needs two rare trigrams or more. Only trigrams within runs of letters and
 * digits count (pg_trgm's words); a term whose folding changes its length in JavaScript is asked whole (positions
 * would not match PostgreSQL's `lower()`). The choice changes what the index is asked, never the answer.
 */
export function probeOf(term: string, sample: readonly string[]): string {
  const chars = [...term];
  const folded = [...term.toLowerCase()];
  if (folded.length !== chars.length || sample.length === 0) return term;
  const word = /[\p{L}\p{N}]/u;
  const rare = (start: number) => {
    const gram = folded.slice(start, start + 3);
    if (!gram.every((c) => word.test(c))) return false;
    const text = gram.join('');
    return sample.filter((value) => value.includes(text)).length < COMMON_GRAM_SHARE * sample.length;
  };
  // The longest run of consecutive rare trigrams (each within a word): its characters are the probe.
  let best = { start: 0, grams: 0 };
  for (let start = 0, run = 0; start + 3 <= folded.length; start++) {
    run = rare(start) ? run + 1 : 0;
    if (run > best.grams) best = { start: start - run + 1, grams: run };
  }
  // A single rare trigram may still be in thousands of rows: the whole term's lists, intersected, are then cheaper.
  if (best.grams < 2) return term;
  const probe = chars.slice(best.start, best.start + best.grams + 2).join('');
  return probe.length === chars.length ? term : probe;
}

/**
 * How a search with many candidates goes on in list order before it asks the index (see `searchPage`); tests lower
 * these to take that path on a few thousand rows.
 *
 * - `indexCandidates`: the candidates (by the planner's estimate) above which a far ordered part goes first. Measured on
 *   the bench's 1.95 million companies, warm: the GIN path cost 2.1 ms for a term with 950 candidates, 4.1 ms for
 *   1,950 and 125 ms for 20,000 (2–6 µs each: posting lists read, row visited, rechecked and sorted); a far ordered
 *   part costs 25–50 ms. The estimate tells them apart since search_text's histogram has 300 entries (migration
 *   crm_search_statistics): a term found in one of them counts as 0.33 % of the rows (6,500 of two million), where
 *   with 100 it counted as 1 %.
 * - `farRows`: the fewest rows of a far ordered part (about 15–25 ms of index scan).
 * - `rowsPerCandidate`: its rows per candidate, where that is more, so that it reads about what the index would cost.
 *   Measured on the bench (2.1 million companies, warm): the index path cost 0.85 µs a candidate for `k` (363,000
 *   candidates, 305 ms) and 2.4 µs for `draymar` (20,000, 48 ms); an ordered part 0.27–0.3 µs a row. The matches'
 *   position is unknown until they are read: reading in order until that cost is spent, then asking the index, costs
 *   at most about twice the cheaper of the two. A term absent from the newest 110,000 rows (the bench's after its
 *   creates) took 66 ms (`draymar`) and 334 ms (`k`) with a part of 65,536 rows and then the index.
 */
export const searchTuning = { indexCandidates: 8_000, farRows: 65_536, rowsPerCandidate: 6 };
/**
 * The planner's count of a term's candidates, kept from an earlier search of it in this workspace and process whose
 * ordered parts did not fill its page (only such a search counts them). The next search of the term there skips
 * those parts: most likely they would find as little again, and with a count known the plan is chosen without them
 * (the index for a rare term, else the far ordered part, which stops as soon as the page is full). The count depends
 * on the table's statistics alone, like the sample of `sampleOf`; what is kept never changes an answer, only what is
 * read to find it.
 */
const estimates = new Memory<number>(1_000);
/**
 * The share of rows matching a term in the last ordered part of a search of it that did not fill its page: the next
 * page of the term starts with one ordered part sized for a full page at that density (a quarter more, within
 * SEARCH_SCAN_ROWS..SEARCH_MORE_ROWS) instead of the first part and a second. A client walking a 1 % term's pages
 * reads each in one statement, not two.
 */
const densities = new Memory<number>(1_000);

/**
 * Search statements this process runs at once. Each costs PostgreSQL up to milliseconds of CPU: with more running
 * than its cores can serve they only take turns, and fill the pool that every other request needs for its round trips.
 */
const searchScans = new Slots(2 * availableParallelism());

type ScanRow = { scan_hit: boolean };

/** The position of an API row in `order`: its sort key values (timestamps as the API writes them) and its id. */
export function positionIn(spec: PageTable<unknown, string>, order: ListOrder, row: Record<string, unknown>): ListPosition {
  const keys = spec.sorts[order.sort] ?? [];
  return { values: keys.map((key) => String(row[key.column])), id: String(row.id) };
}

/**
 * A search page, complete: `limit + 1` matches when more follow, else every remaining one. It reads in list order
 * first, where a common term fills the page within a few thousand rows; when the matches found there are too sparse
 * to expect a full page soon (none at all, for a rare term or one absent from the newest records), it takes the rest
 * from the GIN index, whose cost follows the matches, not the rows (see `indexedQuery`).
 */
async function searchPage<Row extends pg.QueryResultRow, Filter extends string>(
  pool: pg.Pool,
  organizationId: string,
  spec: PageTable<Row, Filter>,
  filter: PageFilter<Filter>,
): Promise<Row[]> {
  const found: Row[] = [];
  const wanted = filter.limit + 1;
  let after = filter.after;
  const search = filter.search ?? '';
  // What searches of this term learned here is kept per table, workspace and term (`estimates`, `densities`).
  const termKey = `${spec.table}\u0000${organizationId}\u0000${search}`;
  /** An ordered part of `rows` rows after `after`: true when the search is complete (a full page, or no rows left). */
  const ordered = async (rows: number) => {
    const query = scanQuery(organizationId, spec, filter, after, rows, wanted - found.length);
    const result = (await searchScans.run(() => pool.query<Row & ScanRow>(query))).rows;
    const end = result.find((row) => !row.scan_hit);
    const hits = result.filter((row) => row.scan_hit);
    for (const row of hits) found.push(withoutMarker(row));
    if (found.length >= wanted || !end) return true;
    // A part that read all its rows without filling the page: its share of matches is this term's density here.
    if (hits.length > 0) densities.keep(termKey, hits.length / rows);
    after = positionIn(spec, filter.order, end);
    return false;
  };
  // A term whose ordered parts fell short here before (an earlier page of it, or another member's search) skips them.
  const known = estimates.get(termKey);
  if (known === undefined) {
    const density = densities.get(termKey);
    const first = density ? Math.min(SEARCH_MORE_ROWS, Math.max(SEARCH_SCAN_ROWS, Math.ceil((wanted / density) * 1.25))) : SEARCH_SCAN_ROWS;
    if (await ordered(first)) return found;
    // Rows the page still needs at the density seen so far: go on in order once, reading twice that, when it is few
    // enough; else (no match at all, or sparse ones) the index.
    const expected = found.length > 0 ? ((wanted - found.length) * first) / found.length : Number.POSITIVE_INFINITY;
    if (expected * 2 <= SEARCH_MORE_ROWS && (await ordered(Math.ceil(expected * 2)))) return found;
  }
  const probe = TRIGRAM_TERM.test(search) ? probeOf(search, await sampleOf(pool, spec.table)) : search;
  const indexedPart = () => indexedQuery(organizationId, spec, filter, after, wanted - found.length, probe);
  // A term whose candidates are many (common in older rows): an ordered part, far, costs less than visiting them all;
  // it is complete when it fills the page or reaches the end. Phone digits are asked like any other term: with the
  // index asked for their rare part (probeOf), the bench's `555-0012` after row 500,000 (no match left) takes a full
  // page in 6-9 ms, where a far ordered part going first made it 84-119 ms.
  // The estimate needs no transaction of its own: the plan settings change how rows are found, not how many.
  const candidates = known ?? (await count(indexedPart().estimate));
  // A far ordered part reads as many rows as the index's candidates would cost: it stops as soon as the page is full,
  // so a larger part costs more only when the index then has to finish the page.
  const far = Math.max(searchTuning.farRows, Math.ceil(candidates * searchTuning.rowsPerCandidate));
  if (candidates > searchTuning.indexCandidates && (await ordered(far))) return found;
  // Built now: from where the ordered parts stopped, for what the page still needs (one built before them handed out
  // their matches a second time).
  return [...found, ...(await indexed<Row>(indexedPart().page))];

  /** The planner's count of the candidates (`estimate`), kept for the next search of the term in this workspace. */
  async function count(estimate: pg.QueryConfig): Promise<number> {
    const [plan] = (await searchScans.run(() => pool.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(estimate))).rows;
    const candidates = plan?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? Number.POSITIVE_INFINITY;
    estimates.keep(termKey, candidates);
    return candidates;
  }

  /** Runs the indexed part in its own read-only transaction with the plan INDEXED_PLAN sets. */
  function indexed<Result extends pg.QueryResultRow>(query: pg.QueryConfig): Promise<Result[]> {
    return searchScans.run(async () => {
      const client = await pool.connect();
      try {
        await client.query(INDEXED_PLAN);
        const result = await client.query<Result>(query);
        await client.query('COMMIT');
        return result.rows;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  }
}

function withoutMarker<Row>(row: Row & ScanRow): Row {
  const { scan_hit: _hit, ...rest } = row;
  return rest as unknown as Row;
}

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
}

/**
 * Changes stable enough to hand out: written by transactions older than the oldest one still running. A transaction
 * that began earlier and commits later cannot get an id below this any more, so a cursor past a change never passes
 * over one that commits late (it is handed out once its transaction has ended and the horizon moved past it). On a
 * replica the horizon is the replayed primary's: a transaction not replayed yet still counts as running there.
 */
const SYNC_HORIZON = 'pg_snapshot_xmin(pg_current_snapshot())';

/**
 * The changed rows of a table after a sync position, in the order of the transactions that wrote them, then id; the
 * first call starts at the oldest transaction that wrote a row changed after `since` (the (organization_id,
 * updated_at) index finds those rows), and `updated_at > since` holds for every row of the walk.
 */
function changesQuery<Filter extends string>(organizationId: string, spec: PageTable<unknown, Filter>, filter: ChangeFilter<Filter>) {
  const { values, where, parameter } = conditionsOf(
    organizationId,
    spec,
    // A sync has no list cursor: none of the conditions built here depends on the order.
    { equals: filter.equals, limit: filter.limit, order: NEWEST_FIRST },
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
  record_type: 'company' | 'contact';
  id: string;
  deleted_at: string;
  sync_xid: string;
}

/** What an export reads: the list's conditions and order, every matching row. */
export type ExportFilter<Filter extends string> = Omit<PageFilter<Filter>, 'limit' | 'after'>;

/** The API's timestamp format (as `Date#toISOString` writes it) of a UTC time. */
const ISO_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** Column types of the tenant tables (from the catalog, once per table): an export formats timestamps and text apart. */
const columnTypes = new Map<string, Promise<Map<string, string>>>();
function typesOf(pool: pg.Pool, table: string): Promise<Map<string, string>> {
  let types = columnTypes.get(table);
  if (!types) {
    types = pool
      .query<{ name: string; type: string }>(
        'SELECT attname AS name, format_type(atttypid, NULL) AS type FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped',
        [table],
      )
      .then(({ rows }) => new Map(rows.map((row) => [row.name, row.type])));
    types.catch(() => columnTypes.delete(table));
    columnTypes.set(table, types);
  }
  return types;
}

/**
 * A field as its CSV cell: a timestamp in the API's format; anything else as text, empty for null and for an empty
 * string alike, and prefixed with `'` when it starts with `=`, `+`, `-` or `@` (a spreadsheet would run it as a
 * formula; the import strips the prefix again): the cells `exportCell` of the CRM's CSV module writes.
 */
function csvCell(column: string, type: string | undefined): string {
  if (type === undefined) throw new Error(`no column ${column} to export`);
  if (type.startsWith('timestamp')) {
    return `to_char(${column}${type.endsWith('with time zone') ? " AT TIME ZONE 'UTC'" : ''}, ${ISO_FORMAT}) AS ${column}`;
  }
  const text = `${column}::text`;
  return `CASE WHEN left(${text}, 1) IN ('=', '+', '-', '@') THEN '''' || ${text} ELSE NULLIF(${text}, '') END AS ${column}`;
}

const CRLF = Buffer.from('\r\n');

/**
 * Record ends of PostgreSQL's CSV (LF) as RFC 4180's CRLF; a line break inside a quoted cell is the cell's and stays.
 * Whether the text is inside quotes carries over from one chunk to the next (a `""` inside a cell toggles it twice).
 */
class CrlfRecords extends Transform {
  private quoted = false;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const parts: Buffer[] = [];
    let start = 0;
    let quote = chunk.indexOf(34);
    for (let newline = chunk.indexOf(10); newline >= 0; newline = chunk.indexOf(10, newline + 1)) {
      for (; quote >= 0 && quote < newline; quote = chunk.indexOf(34, quote + 1)) this.quoted = !this.quoted;
      if (this.quoted) continue;
      parts.push(chunk.subarray(start, newline), CRLF);
      start = newline + 1;
    }
    for (; quote >= 0; quote = chunk.indexOf(34, quote + 1)) this.quoted = !this.quoted;
    parts.push(chunk.subarray(start));
    done(null, Buffer.concat(parts));
  }
}

/**
 * Every row of the list (its conditions, search and order) as CSV, header row first, written by PostgreSQL's `COPY …
 * TO STDOUT` on one connection of the pool: no row becomes a JavaScript object, and the socket is read only as fast
 * as the answer is sent (back-pressure), so memory stays flat whatever the size. COPY takes no parameters, so the
 * statement's values (the organization, filters, the search term) are written into it as literals by pg's
 * `escapeLiteral`, each exactly where the list's statement has its parameter (same types, same conditions).
 */
async function csvCopy<Filter extends string>(
  pool: pg.Pool,
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  fields: readonly string[],
  filter: ExportFilter<Filter>,
): Promise<Readable> {
  const types = await typesOf(pool, spec.table);
  const cells = fields.map((field) => {
    if (!IDENTIFIER.test(field)) throw new Error(`not a plain SQL identifier: ${field}`);
    return csvCell(field, types.get(field));
  });
  const { values, where, parameter } = conditionsOf(organizationId, spec, { ...filter, limit: 0 }, undefined);
  if (filter.search) where.push(matches(parameter(filter.search, 'text')));
  const query = `SELECT ${cells.join(', ')} FROM ${spec.table} WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, spec.table)}`;
  // `\d+` takes all the digits: `$12` is never read as `$1`.
  const text = query.replace(/\$(\d+)/g, (_, index: string) => pg.escapeLiteral(String(values[Number(index) - 1])));
  const client = await pool.connect();
  const records = new CrlfRecords();
  // A connection whose COPY did not run to its end (an error, a client that went away) is closed, not reused.
  pipeline(client.query(copyTo(`COPY (${text}) TO STDOUT WITH (FORMAT csv, HEADER)`)), records, (error) =>
    client.release(error ?? undefined),
  );
  return records;
}

/** The page reader a tenant-scoped service receives: it can only read rows of `organizationId`. */
export function scopePages(pool: pg.Pool, organizationId: string) {
  return {
    /** Changes for an incremental sync (see `changesQuery`), each with its `sync_xid` for the cursor. */
    async changes<Row extends pg.QueryResultRow, Filter extends string>(
      spec: PageTable<Row, Filter>,
      filter: ChangeFilter<Filter>,
    ): Promise<Array<Row & { sync_xid: string }>> {
      return (await pool.query<Row & { sync_xid: string }>(changesQuery(organizationId, spec, filter))).rows;
    },
    /** Deleted companies and contacts (tombstones kept 30 days), in the sync's order, below the same horizon. */
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
      if (filter.search) return searchPage(pool, organizationId, spec, filter);
      return (await pool.query<Row>(listQuery(organizationId, spec, filter))).rows;
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
