// Keyset pages of tenant tables read with one SQL statement on the shared pool: the CRM list endpoints, without
// Prisma's per-query cost (it halved their throughput). Bound to one organization like the tenant-scoped Prisma
// client: `organization_id = $1` is always the first condition, and tables, columns and filterable columns come
// from the `pageTable` definitions of the services, never from a request; request values are only parameters.
import type pg from 'pg';
import type { PagePosition } from '../lib/pagination.js';
import { searchPattern } from '../lib/text-search.js';

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

export interface PageFilter<Filter extends string> {
  /** Equality conditions; an undefined value is no condition. */
  equals?: Partial<Record<Filter, string>>;
  /** Case-insensitive substring of the searchable columns (see lib/text-search.ts); empty or absent: none. */
  search?: string;
  after?: PagePosition;
  /** The page size: `limit + 1` rows are read, so the pager knows whether more remain. */
  limit: number;
}

/**
 * Newest first by (created_at, id), `limit + 1` rows. Filterless shapes (the first page and the cursor pages of a
 * plain list) are named prepared statements, planned once per connection; filtered ones are planned per execution,
 * since the best plan depends on the values (a rare search term uses the trigram index, a common one walks
 * `created_at`; one company's contacts use the company index).
 */
function pageQuery<Filter extends string>(organizationId: string, spec: PageTable<unknown, Filter>, filter: PageFilter<Filter>): pg.QueryConfig {
  const values: unknown[] = [organizationId];
  const where = ['organization_id = $1'];
  const parameter = (value: unknown) => `$${values.push(value)}`;
  for (const column of spec.filterColumns) {
    const value = filter.equals?.[column];
    if (value !== undefined) where.push(`${column} = ${parameter(value)}`);
  }
  if (filter.search) where.push(`search_text LIKE ${parameter(searchPattern(filter.search))}`);
  const filtered = values.length > 1;
  if (filter.after) {
    // The redundant `created_at <=` bounds the index scan, so a deep page starts where the previous one ended.
    const at = parameter(filter.after.createdAt);
    where.push(`created_at <= ${at} AND (created_at < ${at} OR id < ${parameter(filter.after.id)})`);
  }
  const text =
    `SELECT ${spec.selectList} FROM ${spec.table} WHERE ${where.join(' AND ')} ` +
    // Qualified: a bare `created_at` here would be the formatted output column (a text sort of every row).
    `ORDER BY ${spec.table}.created_at DESC, ${spec.table}.id DESC LIMIT ${parameter(filter.limit + 1)}`;
  return filtered ? { text, values } : { name: `${spec.table}-page${filter.after ? '-after' : ''}`, text, values };
}

/** The page reader a tenant-scoped service receives: it can only read rows of `organizationId`. */
export function scopePages(pool: pg.Pool, organizationId: string) {
  return {
    async read<Row extends pg.QueryResultRow, Filter extends string>(spec: PageTable<Row, Filter>, filter: PageFilter<Filter>): Promise<Row[]> {
      return (await pool.query<Row>(pageQuery(organizationId, spec, filter))).rows;
    },
  };
}

export type TenantPages = ReturnType<typeof scopePages>;
