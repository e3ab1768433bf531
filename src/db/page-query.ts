// The SQL of a list page without search: the organization first, the equality and archive filters, the keyset position
// after the cursor, and the sort.
import type pg from 'pg';
import type { ListOrder, ListPageRequest, ListPosition } from '../lib/pagination.js';
import { pageTypes, type PageTable, type SortKey } from './page-table.js';

/** The page (`limit + 1` rows are read, so the pager knows whether more remain) and its conditions. */
export interface PageFilter<Filter extends string> extends ListPageRequest {
  /** Equality conditions; an undefined value is no condition. */
  equals?: Partial<Record<Filter, string>>;
  /** Case-insensitive substring of the searchable columns (see lib/text-search.ts); empty or absent: none. */
  search?: string;
  /** Of a table with `archived_at`: `active` (not archived), `archived`, or `all`; absent: no condition. */
  archived?: ArchivedFilter;
  /** Further conditions of a record type's own filters (a task's effective status), besides the equality ones. */
  conditions?: readonly PageCondition[];
}

/**
 * A condition a record type's definition writes in SQL over the table's columns; each request value goes through
 * `parameter` (a placeholder of its SQL type), never into the text.
 */
export type PageCondition = (parameter: (value: unknown, type: string) => string) => string;

/**
 * The collation text sort keys compare in: ICU's root locale at strength 1, case and accents ignored (`alpha`, `Beta`,
 * `Émile`, `zeta`), from the migration query_natural_order. Nondeterministic: equal-looking names tie, and `id`, the
 * last key of every order, decides.
 */
export const NATURAL_COLLATION = 'crm_natural';

/** The value a nulls-last sort key has for null (see `SortKey`), in cursors too. */
export const NULL_LAST = 'infinity';

export type ArchivedFilter = 'active' | 'archived' | 'all';
const ARCHIVED_CONDITIONS: Record<ArchivedFilter, string | undefined> = {
  active: 'archived_at IS NULL',
  archived: 'archived_at IS NOT NULL',
  all: undefined,
};

/** The sort columns of `order` with their SQL types, and the direction. */
export function sortOf(spec: PageTable<unknown, string>, order: ListOrder) {
  const keys = spec.sorts[order.sort];
  if (!keys) throw new Error(`${spec.table} has no sort ${order.sort}`);
  /** A sort key as SQL, of the rows of `alias` when given: a nulls-last key puts null after every value. */
  const expression = (key: SortKey, alias?: string) => {
    const column = alias ? `${alias}.${key.column}` : key.column;
    if (key.type === 'text') return `(${column} COLLATE "${NATURAL_COLLATION}")`;
    return key.nullsLast ? `coalesce(${column}, '${NULL_LAST}'::timestamptz)` : column;
  };
  return {
    columns: [...keys.map((key) => key.column), 'id'],
    /** The columns as the order compares them. */
    expressions: (alias?: string) => [...keys.map((key) => expression(key, alias)), alias ? `${alias}.id` : 'id'],
    types: [...keys.map((key) => (key.type === 'timestamp' ? 'timestamptz' : 'text')), 'uuid'],
    direction: order.descending ? 'DESC' : 'ASC',
    /** Rows after a position in this order: a row comparison, which the sort's (organization, keys…, id) index seeks. */
    comparison: order.descending ? '<' : '>',
  };
}

/** `ORDER BY` the sort of `order`, of the rows of `alias`: qualified, because `readList` names output columns alike. */
export function orderBy(spec: PageTable<unknown, string>, order: ListOrder, alias: string): string {
  const { expressions, direction } = sortOf(spec, order);
  return `ORDER BY ${expressions(alias)
    .map((expression) => `${expression} ${direction}`)
    .join(', ')}`;
}

/**
 * A statement's parameters and its conditions: `organization_id = $1` first, the equality filters, and the rows
 * after `after` in list order. With `opaque`, each value is read through `(SELECT $n::type)`, which hides it from the
 * planner (see `listQuery`).
 */
export function conditionsOf<Filter extends string>(
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
  for (const condition of filter.conditions ?? []) where.push(`(${condition(parameter)})`);
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
  const { expressions, types, comparison } = sortOf(spec, order);
  // Timestamps go to SQL as `Date#toISOString` writes them: a cursor's text was only checked to be a date.
  const keys = [...position.values, position.id].map((value, i) => {
    const sent = parameter(types[i] === 'timestamptz' && value !== NULL_LAST ? new Date(value).toISOString() : value, types[i] ?? 'text');
    return types[i] === 'text' ? `(${sent} COLLATE "${NATURAL_COLLATION}")` : sent;
  });
  return `(${expressions().join(', ')}) ${comparison} (${keys.join(', ')})`;
}

/** The page in list order: `limit` rows of `source`, which is aliased to the table's name. */
export const pageFrom = (spec: PageTable<unknown, string>, order: ListOrder, source: string, limit: string) =>
  `SELECT ${spec.readList} FROM ${source} AS ${spec.table} ${orderBy(spec, order, spec.table)} LIMIT ${limit}`;

/** Names a statement by what shapes its text (the sort, the filters present, a cursor), so a connection parses it once. */
export function shapeName<Filter extends string>(
  spec: PageTable<unknown, Filter>,
  kind: string,
  filter: PageFilter<Filter>,
  after: boolean,
) {
  const filters = spec.filterColumns.filter((column) => filter.equals?.[column] !== undefined);
  const sort = `${filter.order.descending ? 'desc' : 'asc'}_${filter.order.sort}`;
  return [`${spec.table}-${kind}`, sort, ...filters, ...(filter.archived ? [filter.archived] : []), ...(after ? ['after'] : [])].join('-');
}

/**
 * A list without search. Filterless shapes (the first page and the cursor pages of a plain list, the hot path) are
 * named prepared statements whose values the planner cannot see: a custom plan for the visible values looks cheaper
 * than the generic one (a big workspace's 51 rows, a known LIMIT), so PostgreSQL would plan every page again; opaque,
 * the custom plans cost no less and the plan cache keeps the generic plan (the same index scan of the sort's index)
 * after five executions. Filtered shapes are planned per execution with their values (one company's contacts use the
 * company index).
 */
export function listQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
): pg.QueryConfig {
  const filtered = spec.filterColumns.some((column) => filter.equals?.[column] !== undefined) || (filter.conditions?.length ?? 0) > 0;
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

/** The position of an API row in `order`: its sort key values (timestamps as the API writes them) and its id. */
export function positionIn(spec: PageTable<unknown, string>, order: ListOrder, row: Record<string, unknown>): ListPosition {
  const keys = spec.sorts[order.sort] ?? [];
  // A timestamp column outside the timestamps `readList` formats (a task's due time) is read as a Date.
  const value = (key: SortKey) => {
    const field = row[key.column] ?? (key.nullsLast ? NULL_LAST : null);
    return field instanceof Date ? field.toISOString() : String(field);
  };
  return { values: keys.map(value), id: String(row.id) };
}
