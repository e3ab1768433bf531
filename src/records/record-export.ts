// The cells of the CRM's CSV files written in JavaScript (an import's errors CSV); the exports' cells are the same,
// written by PostgreSQL (see `csvCopy` in db/csv-export.ts).

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
