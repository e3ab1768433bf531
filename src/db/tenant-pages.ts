// Keyset pages of tenant tables read with one SQL statement on the shared pool: the CRM list endpoints, without
// Prisma's per-query cost (it halved their throughput). Bound to one organization like the tenant-scoped Prisma
// client: `organization_id = $1` is always the first condition, and tables, columns and filterable columns come
// from the `pageTable` definitions of the services, never from a request; request values are only parameters.
import type pg from 'pg';
import type { PageRequest } from '../lib/pagination.js';
import { foldCase, searchPattern } from '../lib/text-search.js';

const IDENTIFIER = /^[a-z][a-z_]*$/;

/** What a list reads: a tenant table, the API fields it returns, and the columns a list may filter by equality. */
export interface PageTable<Row, Filter extends string> {
  readonly table: string;
  readonly selectList: string;
  readonly filterColumns: readonly Filter[];
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
): PageTable<Row, Filter> {
  for (const name of [table, ...columns, ...filterColumns]) {
    if (!IDENTIFIER.test(name)) throw new Error(`not a plain SQL identifier: ${name}`);
  }
  const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
  return { table, selectList: [...columns, iso('created_at'), iso('updated_at')].join(', '), filterColumns };
}

/** The page (`limit + 1` rows are read, so the pager knows whether more remain) and its conditions. */
export interface PageFilter<Filter extends string> extends PageRequest {
  /** Equality conditions; an undefined value is no condition. */
  equals?: Partial<Record<Filter, string>>;
  /** Case-insensitive substring of the searchable columns (see lib/text-search.ts); empty or absent: none. */
  search?: string;
}

/**
 * How many of the newest rows a search scans before it asks the trigram index instead. A term in 1 % of the rows
 * fills a page of 50 within about 5,000; a rarer one is cheaper through the index.
 */
const SEARCH_WINDOW = 10_000;

/** The parts of a page query: its conditions (`organization_id = $1` first) and their parameter values. */
function conditionsOf<Filter extends string>(organizationId: string, spec: PageTable<unknown, Filter>, filter: PageFilter<Filter>) {
  const values: unknown[] = [organizationId];
  const where = ['organization_id = $1'];
  const parameter = (value: unknown) => `$${values.push(value)}`;
  for (const column of spec.filterColumns) {
    const value = filter.equals?.[column];
    if (value !== undefined) where.push(`${column} = ${parameter(value)}`);
  }
  const filtered = values.length > 1;
  if (filter.after) {
    // The redundant `created_at <=` bounds the index scan, so a deep page starts where the previous one ended.
    const at = parameter(filter.after.createdAt);
    where.push(`created_at <= ${at} AND (created_at < ${at} OR id < ${parameter(filter.after.id)})`);
  }
  return { values, where: where.join(' AND '), filtered, parameter };
}

/**
 * The page, newest first by (created_at, id): `limit + 1` rows. `source` is what is read, aliased to the table's
 * name; the ORDER BY is qualified because a bare `created_at` would be the formatted output column (a text sort).
 */
const pageFrom = (spec: PageTable<unknown, string>, source: string, limit: string) =>
  `SELECT ${spec.selectList} FROM ${source} AS ${spec.table} ` +
  `ORDER BY ${spec.table}.created_at DESC, ${spec.table}.id DESC LIMIT ${limit}`;

/**
 * A list without search. Filterless shapes (the first page and the cursor pages of a plain list) are named
 * prepared statements, planned once per connection; filtered ones are planned per execution (one company's
 * contacts use the company index).
 */
function listQuery<Filter extends string>(organizationId: string, spec: PageTable<unknown, Filter>, filter: PageFilter<Filter>): pg.QueryConfig {
  const { values, where, filtered, parameter } = conditionsOf(organizationId, spec, filter);
  const text = pageFrom(spec, `(SELECT * FROM ${spec.table} WHERE ${where})`, parameter(filter.limit + 1));
  return filtered ? { text, values } : { name: `${spec.table}-page${filter.after ? '-after' : ''}`, text, values };
}

/**
 * A search, in two steps whose cost does not depend on the planner's estimate of the term's frequency (a sample
 * of a few hundred rows: a 1 % term estimated at 0.3 % made the planner read all 10,000 matches through the
 * trigram index and sort them, 30 ms instead of 1 ms). First the newest SEARCH_WINDOW rows, in index order: a
 * common term fills the page there (`strpos` of the folded term: the same test as the LIKE, and faster without an
 * index). Only when it does not, the matches of the whole table, which are then few enough for the trigram index
 * (materialized, so the planner cannot walk the table in order for a rare term).
 */
function searchQueries<Filter extends string>(organizationId: string, spec: PageTable<unknown, Filter>, filter: PageFilter<Filter>, term: string) {
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter);
  const limit = parameter(filter.limit + 1);
  // The last parameter: the folded term in the first step, its LIKE pattern in the second.
  const term$ = `$${values.length + 1}`;
  const window = `(SELECT * FROM ${spec.table} WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${SEARCH_WINDOW})`;
  const newest = pageFrom(spec, `(SELECT * FROM ${window} AS newest WHERE strpos(search_text, ${term$}) > 0)`, limit);
  const all =
    `WITH matches AS MATERIALIZED (SELECT * FROM ${spec.table} WHERE ${where} AND search_text LIKE ${term$}) ` +
    pageFrom(spec, 'matches', limit);
  return {
    newest: { text: newest, values: [...values, foldCase(term)] },
    all: { text: all, values: [...values, searchPattern(term)] },
  };
}

/** The page reader a tenant-scoped service receives: it can only read rows of `organizationId`. */
export function scopePages(pool: pg.Pool, organizationId: string) {
  return {
    async read<Row extends pg.QueryResultRow, Filter extends string>(spec: PageTable<Row, Filter>, filter: PageFilter<Filter>): Promise<Row[]> {
      if (!filter.search) return (await pool.query<Row>(listQuery(organizationId, spec, filter))).rows;
      const { newest, all } = searchQueries(organizationId, spec, filter, filter.search);
      const { rows } = await pool.query<Row>(newest);
      return rows.length > filter.limit ? rows : (await pool.query<Row>(all)).rows;
    },
  };
}

export type TenantPages = ReturnType<typeof scopePages>;
