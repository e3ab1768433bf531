// The `search` of CRM lists: a case-insensitive substring of several columns, every character literal.
//
// Each searchable table has a `search_text` column that a database trigger fills with the searchable columns,
// lower-cased and joined by U+001F. A search is then `strpos` of the folded term in one column, over a bounded
// number of rows per page (db/tenant-pages.ts). Search terms may not contain control characters, so a match never
// spans two columns.

/**
 * Lower-cases like PostgreSQL's lower() does for `search_text`: code point by code point (Unicode simple case
 * mapping), so no context-dependent form (final sigma) and no expansion (U+0130 → "i", not "i̇").
 */
export function foldCase(text: string): string {
  let folded = '';
  for (const char of text) folded += char === '\u0130' ? 'i' : char.toLowerCase();
  return folded;
}

/**
 * How many rows, in list order from the cursor, one search page reads at most: the bound of its cost whatever the
 * term and wherever its matches are. A page that found no more than `limit` matches there ends at the last row read.
 */
export const SEARCH_SCAN_ROWS = 1_000;

/** The pattern a `search` query parameter must match: no control characters (U+0000–U+001F). */
export const SEARCH_TERM_PATTERN = '^[^\\u0000-\\u001f]*$';
