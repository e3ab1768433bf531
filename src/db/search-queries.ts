// The SQL statements of a search page: the ordered part, read in list order, and the indexed part, asked of a GIN
// index.
import type pg from 'pg';
import type { ListPosition } from '../lib/pagination.js';
import { conditionsOf, orderBy, pageFrom, shapeName, sortOf, type PageFilter } from './page-query.js';
import { pageTypes, type PageTable } from './page-table.js';
import type { PlanSettings } from './organization-setting.js';

/**
 * The test of a search: the row's folded text holds the term folded by the same `lower()`, every character literal.
 * The term is folded once, in a subquery: the scans are prepared statements, and in their generic plan a bare
 * `lower($n)` ran again for each row.
 */
export const matches = (term: string) => `strpos(search_text, (SELECT lower(${term}))) > 0`;

/**
 * The ordered part of a search: the first `rows` rows in list order after `after`, of which it returns the matches up
 * to `limit + 1` (`scan_hit`), plus the `rows`-th row itself when there are that many (`scan_end`), matching or not:
 * where the search goes on. The matches come from an index scan of the sort's index whose LIMIT stops it after
 * `rows` rows (or as soon as the page is full); the last row is found on the index alone.
 */
export function scanQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  after: ListPosition | undefined,
  rows: number,
  wanted: number,
): pg.QueryConfig {
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, after);
  const term = parameter(filter.search, 'text');
  // The window carries only what the scan needs (the sort columns with id, and search_text): deforming every column
  // of its tens of thousands of rows would be a large share of a far part's time. The read list is then read for the hits.
  const carried = [...sortOf(spec, filter.order).columns, 'search_text'].join(', ');
  const window = `(SELECT ${carried} FROM ${spec.table} WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, spec.table)} LIMIT ${parameter(rows, 'int')})`;
  const limit = parameter(wanted, 'int');
  const hitIds = `SELECT scan_window.id AS hit_id FROM ${window} AS scan_window WHERE ${matches(term)} ${orderBy(spec, filter.order, 'scan_window')} LIMIT ${limit}`;
  const hits =
    `SELECT ${spec.readList}, true AS scan_hit FROM (${hitIds}) AS scan_hits ` +
    `JOIN ${spec.table} ON ${spec.table}.organization_id = $1 AND ${spec.table}.id = scan_hits.hit_id ${orderBy(spec, filter.order, spec.table)}`;
  // The last row is found by id, then read once: the rows its OFFSET skips are never projected (their read list's
  // subqueries, such as an assignee's name, would run for each of them).
  const last = `SELECT scan_end.id FROM ${spec.table} AS scan_end WHERE ${where.join(' AND ')} ${orderBy(spec, filter.order, 'scan_end')} OFFSET ${parameter(rows - 1, 'int')} LIMIT 1`;
  // Only a part that did not fill the page needs its end: the condition is a one-time filter, checked before the
  // OFFSET scan, which a full page skips (a common term's page, and a far part that fills it: 65,536 index entries).
  const end = `SELECT ${spec.readList}, false FROM ${spec.table} WHERE (SELECT count(*) FROM hits) < ${limit} AND organization_id = $1 AND id = (${last})`;
  return {
    name: shapeName(spec, 'scan', filter, after !== undefined),
    text: `WITH hits AS MATERIALIZED (${hits}) SELECT * FROM hits UNION ALL (${end})`,
    values,
    types: pageTypes,
  };
}

/** A term with three word characters in a row (letters or digits): pg_trgm can extract a trigram of it for its index. */
export const TRIGRAM_TERM = /[\p{L}\p{N}]{3}/u;

/**
 * The indexed part of a search: every match after `after` in list order, from a GIN index (pg_trgm for a term with
 * three word characters in a row; else crm_gram_pairs, asked for the term's 2-character substrings, or the pairs
 * its one character begins: see crm_gram_pairs_query), sorted, `wanted` of them. Its cost follows the number of
 * candidates the index yields, not the rows.
 */
export function indexedQuery<Filter extends string>(
  organizationId: string,
  spec: PageTable<unknown, Filter>,
  filter: PageFilter<Filter>,
  after: ListPosition | undefined,
  wanted: number,
  probe: string,
): { estimate: pg.QueryConfig; page: pg.QueryConfig } {
  const { values, where, parameter } = conditionsOf(organizationId, spec, filter, after);
  // The organization as a filter of the candidates, not a second bitmap: AND-ed with the organization's index (as
  // many entries as a big workspace has rows) the GIN bitmap costs far more than the filter.
  where[0] = '(organization_id = $1) IS TRUE';
  const search = filter.search ?? '';
  const term = parameter(search, 'text');
  // The index is asked for the probe (the term itself, or its rare part: see `probeOf`), every match then tested
  // for the whole term: a row holding the term holds any part of it.
  const candidates = probe === search ? candidatesOf(search, term) : candidatesOf(probe, parameter(probe, 'text'));
  const source = `(SELECT * FROM ${spec.table} WHERE ${[...where, candidates, matches(term)].join(' AND ')})`;
  return {
    // The planner's count of the rows holding the term in all workspaces, from search_text's statistics (its 300
    // most common values and histogram bounds, matched against the pattern), for every kind of term: the pairs
    // index's own statistics keep too few pairs, and overcount a pair they do not hold (a far ordered part for a term
    // that matches nothing).
    estimate: {
      text: `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${spec.table} WHERE ${substringPattern('$1::text')}`,
      values: [search],
    },
    page: { text: pageFrom(spec, filter.order, source, parameter(wanted, 'int')), values, types: pageTypes },
  };
}

/** search_text holds the term (the parameter `term`), every character literal: the condition pg_trgm's index serves. */
const substringPattern = (term: string) =>
  `search_text LIKE '%' || replace(replace(replace(lower(${term}), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/**
 * The condition a GIN index serves for a term (the parameter `term`): a superset of the matches, never fewer. A term
 * without a trigram asks crm_gram_pairs for its pairs, or for the pairs its one character begins (crm_gram_pairs_query).
 */
export const candidatesOf = (search: string, term: string) =>
  TRIGRAM_TERM.test(search) ? substringPattern(term) : `crm_gram_pairs(search_text) @@ crm_gram_pairs_query(lower(${term}))`;

/**
 * The plan of the indexed part, set for its statement only: the candidates from the GIN index (a bitmap), never an
 * index scan in list order filtering every row (PostgreSQL's estimate for a `LIKE '%…%'` cannot tell a term that
 * matches nothing from one that matches every hundredth row), no parallel workers (starting them costs more than
 * such a query), and memory enough that the bitmap stays exact: a lossy one rechecks every row of its pages, which
 * for crm_gram_pairs means computing it again.
 */
export const INDEXED_PLAN: PlanSettings = {
  enable_indexscan: 'off',
  enable_indexonlyscan: 'off',
  enable_seqscan: 'off',
  max_parallel_workers_per_gather: '0',
  work_mem: '64MB',
};
