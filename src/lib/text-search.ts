// The `search` of CRM lists: a case-insensitive substring of several columns, every character literal.
//
// Each searchable table has a `search_text` column that a database trigger fills with the searchable columns,
// lower-cased by PostgreSQL's lower() and joined by U+001F. A search is then `strpos` of lower(term) in that one
// column (db/search-planner.ts), with GIN indexes (pg_trgm, and crm_gram_pairs for short terms) finding candidates.
// Search terms may not contain control characters, so a match never spans two columns.

/** The pattern a `search` query parameter must match: no control characters (U+0000–U+001F). */
export const SEARCH_TERM_PATTERN = '^[^\\u0000-\\u001f]*$';
