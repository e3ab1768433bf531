// CSV export of a CRM record collection: the list's rows walked in keyset batches through the tenant's page reader,
// streamed through csv-stringify, so memory stays constant whatever the workspace's size.
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { ListPosition } from '../../lib/pagination.js';

/** Rows read per statement: large enough that round trips do not dominate, small enough to keep memory flat. */
const EXPORT_BATCH = 1000;

/** A spreadsheet runs a cell starting with one of these as a formula (CSV injection). */
const FORMULA_START = /^[=+\-@]/;

/**
 * A cell as written to the file: null as empty, and a value a spreadsheet would run as a formula prefixed with `'`
 * (the import strips one leading `'` before those characters again, so an exported file re-imports unchanged).
 */
export function exportCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/** Reads `limit + 1` rows of the list after a position (the first when undefined), in the list's order. */
type ListReader<Row> = (after: ListPosition | undefined, limit: number) => Promise<Row[]>;

/** Every row of the list in its order, one batch at a time. */
async function* allRows<Row>(list: ListReader<Row>, positionOf: (row: Row) => ListPosition): AsyncGenerator<Row> {
  let after: ListPosition | undefined;
  for (;;) {
    const rows = await list(after, EXPORT_BATCH);
    const page = rows.slice(0, EXPORT_BATCH);
    yield* page;
    const last = page.at(-1);
    if (rows.length <= EXPORT_BATCH || !last) return;
    after = positionOf(last);
  }
}

/** The CSV text of the list (header row first) as a stream with backpressure: a batch is read when the last is sent. */
export function csvExport<Row extends Record<string, unknown>>(
  fields: readonly string[],
  list: ListReader<Row>,
  positionOf: (row: Row) => ListPosition,
): Readable {
  const cells = async function* () {
    for await (const row of allRows(list, positionOf)) {
      yield fields.map((field) => exportCell(row[field]));
    }
  };
  return Readable.from(cells()).pipe(stringify({ header: true, columns: [...fields], record_delimiter: 'windows' }));
}
