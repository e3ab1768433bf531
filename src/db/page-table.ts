// The tables a keyset page reads (`pageTable`: a tenant table, its API fields, equality filters and sorts) and how
// their timestamps become API text.
import pg from 'pg';
import type { SortKeyType } from '../lib/pagination.js';
import { CUSTOM_FIELDS, rawCustomFieldsSql } from './custom-field-shape.js';

export const IDENTIFIER = /^[a-z][a-z0-9_]*$/;

/** What a list reads: a tenant table, the API fields it returns, and the columns a list may filter by equality. */
export interface PageTable<Row, Filter extends string> {
  readonly table: string;
  /** The API fields besides the timestamps: the columns a write may set (all but `id`). */
  readonly columns: readonly string[];
  /** The API fields with the timestamps formatted by the database: for writes, whose automation payload is built in SQL. */
  readonly selectList: string;
  /**
   * The same fields with the timestamps as UTC `timestamp`s, formatted by `pageTypes` (cheaper: see `isoFromTimestamp`),
   * and the custom fields as stored, with their definitions' stamp: a reader shapes them (`shapeCustomFields`).
   */
  readonly readList: string;
  /** The record type whose custom fields `custom_fields` holds, if any. */
  readonly customObject?: string;
  readonly filterColumns: readonly Filter[];
  /** The orders a list offers by API name (`sort`), each the columns it sorts by before `id`, with their types. */
  readonly sorts: Readonly<Record<string, readonly SortKey[]>>;
  /** Read-only API fields computed by SQL expressions over the row (qualified by the table name), e.g. a user's name. */
  readonly computed: readonly string[];
  /** Only carries `Row` for the type checker. */
  readonly row?: Row;
}

export { CUSTOM_FIELDS };

/**
 * The custom fields of a row of `table` as the API shows them, as a write's answer and event payload (built in SQL)
 * carry them; reads shape them in the process instead (`shapeCustomFields`). Every active field of the workspace's
 * `object`, null where the row holds no value, without archived fields' values (kept for a restore). The workspace's template and
 * archived keys are read once per statement (uncorrelated subqueries of `$1`, the workspace every statement reading
 * or writing records binds first: migration custom_fields_per_statement), not once per row.
 */
export const customFieldsSql = (table: string, object: string) =>
  `((SELECT crm_custom_field_template($1::uuid, '${object}')) || ` +
  `(${table}.${CUSTOM_FIELDS} - (SELECT crm_custom_field_archived($1::uuid, '${object}'))))`;

/** A column a list sorts by (an API field of the same name). */
export interface SortKey {
  column: string;
  type: SortKeyType;
  /** Of a nullable timestamp column: null sorts after every time (ascending), as `infinity` (a task without a due time). */
  nullsLast?: boolean;
}

/** The sorts every list has: by creation (the default, newest first) and by last change. */
const TIMESTAMP_SORTS = {
  created_at: [{ column: 'created_at', type: 'timestamp' }],
  updated_at: [{ column: 'updated_at', type: 'timestamp' }],
} as const satisfies Record<string, readonly SortKey[]>;

/**
 * Defines the list of a tenant table whose API field names are its column names. `created_at` and `updated_at` are
 * added, written as `Date#toISOString` writes them (the columns are `timestamptz(3)`: milliseconds, like cursors).
 * The table needs `organization_id`, `created_at` and `id`; a search needs a trigger-kept `search_text`, a sync
 * `changed_xid`.
 */
export function pageTable<Row extends { id: string; created_at: string }, Filter extends string = never>(
  table: string,
  columns: readonly Exclude<keyof Row & string, 'created_at' | 'updated_at'>[],
  filterColumns: readonly Filter[] = [],
  /** Sorts besides `created_at` and `updated_at`, each served by an (organization_id, columns…, id) index. */
  sorts: Readonly<Record<string, readonly SortKey[]>> = {},
  computed: Readonly<Record<string, string>> = {},
  /** The record type whose custom fields `custom_fields` holds (its column is then read as the API shows it). */
  customObject?: string,
): PageTable<Row, Filter> {
  const allSorts = { ...TIMESTAMP_SORTS, ...sorts };
  const sortColumns = Object.values(allSorts).flatMap((keys) => keys.map((key) => key.column));
  for (const name of [
    table,
    ...(customObject ? [customObject] : []),
    ...columns,
    ...filterColumns,
    ...Object.keys(allSorts),
    ...sortColumns,
  ]) {
    if (!IDENTIFIER.test(name)) throw new Error(`not a plain SQL identifier: ${name}`);
  }
  const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
  const utc = (column: string) => `${column} AT TIME ZONE 'UTC' AS ${column}`;
  const expressions = Object.entries(computed).map(([name, expression]) => `${expression} AS ${name}`);
  const shaped = (column: string) =>
    column === CUSTOM_FIELDS && customObject ? `${customFieldsSql(table, customObject)} AS ${CUSTOM_FIELDS}` : column;
  const raw = (column: string) => (column === CUSTOM_FIELDS && customObject ? rawCustomFieldsSql(table, customObject) : column);
  return {
    table,
    columns,
    selectList: [...columns.map(shaped), ...expressions, iso('created_at'), iso('updated_at')].join(', '),
    readList: [...columns.map(raw), ...expressions, utc('created_at'), utc('updated_at')].join(', '),
    ...(customObject ? { customObject } : {}),
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
 * cursors). Reads take this path because PostgreSQL's to_char was half the cost of a list statement. The usual shape
 * is cut by position (a regular expression here was a large share of a list request's garbage); anything else (a year after 9999, BC) goes through the pattern.
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
const DATE_OID = 1082;
/**
 * The type parsers of page reads: `timestamp` (the UTC timestamps of `readList`) as API text, `date` as its text
 * (`YYYY-MM-DD`, the API's format: pg's own parser makes it a local midnight), every other type as usual.
 */
export const pageTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    format === 'binary'
      ? pg.types.getTypeParser(oid, format as 'text')
      : oid === TIMESTAMP_OID
        ? isoFromTimestamp
        : oid === DATE_OID
          ? String
          : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};
