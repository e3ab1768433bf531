// CSV export of a CRM record collection: the list's rows walked in keyset batches through the tenant's page reader,
// streamed through csv-stringify, so memory stays constant whatever the workspace's size.
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { PageRows } from '../../db/tenant-pages.js';
import { positionOfApiRow, type PagePosition, type PageRequest } from '../../lib/pagination.js';

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

/** Every row of the list, newest first, one page at a time; a short search page continues where its scan stopped. */
async function* allRows<Row extends { id: string; created_at: string }>(
  list: (page: PageRequest) => Promise<PageRows<Row>>,
): AsyncGenerator<Row> {
  let after: PagePosition | undefined;
  for (;;) {
    const { rows, scannedTo } = await list({ after, limit: EXPORT_BATCH });
    const more = rows.length > EXPORT_BATCH;
    const page = more ? rows.slice(0, EXPORT_BATCH) : rows;
    yield* page;
    const last = page.at(-1);
    if (more && last) after = positionOfApiRow(last);
    else if (scannedTo) after = scannedTo;
    else return;
  }
}

/** The CSV text of the list (header row first) as a stream with backpressure: a batch is read when the last is sent. */
export function csvExport<Row extends { id: string; created_at: string }>(
  fields: readonly string[],
  list: (page: PageRequest) => Promise<PageRows<Row>>,
): Readable {
  const cells = async function* () {
    for await (const row of allRows(list)) {
      yield fields.map((field) => exportCell((row as Record<string, unknown>)[field]));
    }
  };
  return Readable.from(cells()).pipe(stringify({ header: true, columns: [...fields], record_delimiter: 'windows' }));
}
