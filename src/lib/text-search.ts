// The `search` of CRM lists: a case-insensitive substring of several columns, with LIKE wildcards taken literally.
//
// Each searchable table has a `search_text` column that a database trigger fills with the searchable columns,
// lower-cased and joined by U+001F. A search is then a substring test of one column: in the newest rows first,
// then, when they hold less than a page, through the column's trigram index (db/tenant-pages.ts). Search terms
// may not contain control characters, so a match never spans two columns.

/** Escapes LIKE's wildcards (`%`, `_`) and its escape character (`\`, PostgreSQL's default). */
const escapeLike = (term: string): string => term.replace(/[\\%_]/g, '\\$&');

/**
 * Lower-cases like PostgreSQL's lower() does for `search_text`: code point by code point (Unicode simple case
 * mapping), so no context-dependent form (final sigma) and no expansion (U+0130 → "i", not "i̇").
 */
export function foldCase(text: string): string {
  let folded = '';
  for (const char of text) folded += char === '\u0130' ? 'i' : char.toLowerCase();
  return folded;
}

/** The pattern a `search` query parameter must match: no control characters (U+0000–U+001F). */
export const SEARCH_TERM_PATTERN = '^[^\\u0000-\\u001f]*$';

/** The LIKE pattern (`%term%`) that finds a search term in `search_text`. */
export const searchPattern = (term: string): string => `%${escapeLike(foldCase(term))}%`;
