// The SQL of a query page (POST …/query/): the organization first, the archive state, the compiled filter and search,
// the rows after the cursor in a multi-key order (compared key by key, so directions may differ), every value a
// parameter. Each row also carries its order keys as text, for the next cursor.
import type pg from 'pg';
import type { ArchivedFilter, PageCondition } from './page-query.js';
import { pageTypes, type PageTable } from './page-table.js';
import { matches } from './search-queries.js';

/** One key of a query's order: SQL over the row (identifiers from catalogs only), its SQL type, its direction. */
export interface OrderKey {
  sql: string;
  type: string;
  descending: boolean;
  /** The collation the key compares in (text keys): a cursor's value compares in it too. */
  collation?: string;
}

export interface QueryPageRequest {
  conditions: readonly PageCondition[];
  archived: ArchivedFilter;
  search?: string;
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
  { sql: `${table}.id`, type: 'uuid', descending: keys.at(-1)?.descending ?? false },
];

export function queryPageStatement(organizationId: string, spec: PageTable<unknown, string>, request: QueryPageRequest): pg.QueryConfig {
  const values: unknown[] = [organizationId];
  const parameter = (value: unknown, type: string) => `$${values.push(value)}::${type}`;
  const where = ['organization_id = $1'];
  const archived = ARCHIVED[request.archived];
  if (archived) where.push(archived);
  for (const condition of request.conditions) where.push(`(${condition(parameter)})`);
  if (request.search) where.push(matches(parameter(request.search, 'text')));
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
    where.push(
      `(${
        alternatives
          .filter((alternative) => alternative !== undefined)
          .map((alternative) => `(${alternative})`)
          .join(' OR ') || 'false'
      })`,
    );
  }
  const order = keys.map((key) => `${key.sql} ${key.descending ? 'DESC' : 'ASC'} NULLS LAST`).join(', ');
  const keyColumns = keys.map((key, i) => `to_json(${key.sql}) #>> '{}' AS query_key_${i}`).join(', ');
  const text =
    `SELECT ${spec.readList}, ${keyColumns} FROM ${spec.table} WHERE ${where.join(' AND ')} ` +
    `ORDER BY ${order} LIMIT ${parameter(request.limit + 1, 'int')}`;
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
