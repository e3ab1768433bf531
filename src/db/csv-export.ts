// A list as a CSV file: every row of its conditions and order, written by PostgreSQL's COPY and streamed with
// back-pressure.
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { conditionsOf, orderBy, type PageFilter } from './page-query.js';
import { CUSTOM_FIELDS, IDENTIFIER, type PageTable } from './page-table.js';
import { matches } from './search-queries.js';
import { setOrganizationStatement } from './organization-setting.js';

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

/** The prefix of a custom field's column (`custom.<key>`): its value in the record's `custom_fields`. */
export const CUSTOM_COLUMN = 'custom.';

/**
 * A custom field's cell: its JSON value as text (a multi_select's values joined by `;`), empty without one, with the
 * formula prefix of `csvCell`; the header is `custom.<key>`.
 */
function customCell(key: string): string {
  if (!IDENTIFIER.test(key)) throw new Error(`not a custom field key: ${key}`);
  const value = `${CUSTOM_FIELDS} -> '${key}'`;
  const text =
    `(CASE jsonb_typeof(${value}) WHEN 'array' THEN array_to_string(ARRAY(SELECT jsonb_array_elements_text(${value})), ';') ` +
    `ELSE ${value} #>> '{}' END)`;
  return `CASE WHEN left(${text}, 1) IN ('=', '+', '-', '@') THEN '''' || ${text} ELSE NULLIF(${text}, '') END AS "${CUSTOM_COLUMN}${key}"`;
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
export async function csvCopy<Filter extends string>(
  pool: pg.Pool,
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  fields: readonly string[],
  filter: ExportFilter<Filter>,
): Promise<Readable> {
  const types = await typesOf(pool, spec.table);
  const cells = fields.map((field) => {
    if (field.startsWith(CUSTOM_COLUMN)) return customCell(field.slice(CUSTOM_COLUMN.length));
    if (!IDENTIFIER.test(field)) throw new Error(`not a plain SQL identifier: ${field}`);
    return csvCell(field, types.get(field));
  });
  const { values, where, parameter } = conditionsOf(organizationId, spec, { ...filter, limit: 0 }, undefined);
  if (filter.search) where.push(matches(parameter(filter.search, 'text')));
  const query = `SELECT ${cells.join(', ')} FROM ${spec.table} WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, spec.table)}`;
  // `\d+` takes all the digits: `$12` is never read as `$1`.
  const text = query.replace(/\$(\d+)/g, (_, index: string) => pg.escapeLiteral(String(values[Number(index) - 1])));
  const client = await pool.connect();
  try {
    // A COPY stream is no statement the pool can preface with the workspace: its transaction sets it first.
    await client.query(`BEGIN READ ONLY; ${setOrganizationStatement(organizationId)}`);
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  const records = new CrlfRecords();
  // A connection whose COPY did not run to its end (an error, a client that went away) is closed, not reused.
  pipeline(client.query(copyTo(`COPY (${text}) TO STDOUT WITH (FORMAT csv, HEADER)`)), records, (error) => {
    if (error) client.release(error);
    else
      client.query('COMMIT').then(
        () => client.release(),
        (failure: Error) => client.release(failure),
      );
  });
  return records;
}
