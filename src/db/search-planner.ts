// The search planner: a search page from ordered parts in list order and, when the matches are too sparse, from the
// GIN index.
import { availableParallelism } from 'node:os';
import type pg from 'pg';
import { Slots } from '../lib/slots.js';
import { withPlanSettings } from './organization-setting.js';
import { positionIn, type PageFilter } from './page-query.js';
import type { PageTable } from './page-table.js';
import { INDEXED_PLAN, indexedQuery, scanQuery, TRIGRAM_TERM } from './search-queries.js';
import { commonGramsOf, densities, estimates, probeOf, SEARCH_MORE_ROWS, SEARCH_SCAN_ROWS, searchTuning } from './search-statistics.js';

/**
 * Search statements this process runs at once. Each costs PostgreSQL up to milliseconds of CPU: with more running
 * than its cores can serve they only take turns, and fill the pool that every other request needs for its round trips.
 */
const searchScans = new Slots(2 * availableParallelism());

type ScanRow = { scan_hit: boolean };

/**
 * A search page, complete: `limit + 1` matches when more follow, else every remaining one. It reads in list order
 * first, where a common term fills the page within a few thousand rows; when the matches found there are too sparse
 * to expect a full page soon (none at all, for a rare term or one absent from the newest records), it takes the rest
 * from the GIN index, whose cost follows the matches, not the rows (see `indexedQuery`).
 */
export async function searchPage<Row extends pg.QueryResultRow, Filter extends string>(
  pool: pg.Pool,
  organizationId: string,
  spec: PageTable<Row, Filter>,
  filter: PageFilter<Filter>,
): Promise<Row[]> {
  const found: Row[] = [];
  const wanted = filter.limit + 1;
  let after = filter.after;
  const search = filter.search ?? '';
  // What searches of this term learned here is kept per table, workspace and term (`estimates`, `densities`).
  const termKey = `${spec.table}\u0000${organizationId}\u0000${search}`;
  /** An ordered part of `rows` rows after `after`: true when the search is complete (a full page, or no rows left). */
  const ordered = async (rows: number) => {
    const query = scanQuery(organizationId, spec, filter, after, rows, wanted - found.length);
    const result = (await searchScans.run(() => pool.query<Row & ScanRow>(query))).rows;
    const end = result.find((row) => !row.scan_hit);
    const hits = result.filter((row) => row.scan_hit);
    for (const row of hits) found.push(withoutMarker(row));
    if (found.length >= wanted || !end) return true;
    // A part that read all its rows without filling the page: its share of matches is this term's density here.
    if (hits.length > 0) densities.keep(termKey, hits.length / rows);
    after = positionIn(spec, filter.order, end);
    return false;
  };
  // A term whose ordered parts fell short here before (an earlier page of it, or another member's search) skips them.
  const known = estimates.get(termKey);
  if (known === undefined) {
    const density = densities.get(termKey);
    const first = density ? Math.min(SEARCH_MORE_ROWS, Math.max(SEARCH_SCAN_ROWS, Math.ceil((wanted / density) * 1.25))) : SEARCH_SCAN_ROWS;
    if (await ordered(first)) return found;
    // Rows the page still needs at the density seen so far: go on in order once, reading twice that, when it is few
    // enough; else (no match at all, or sparse ones) the index.
    const expected = found.length > 0 ? ((wanted - found.length) * first) / found.length : Number.POSITIVE_INFINITY;
    if (expected * 2 <= SEARCH_MORE_ROWS && (await ordered(Math.ceil(expected * 2)))) return found;
  }
  const probe = TRIGRAM_TERM.test(search) ? probeOf(search, await commonGramsOf(pool, spec.table, search)) : search;
  const indexedPart = () => indexedQuery(organizationId, spec, filter, after, wanted - found.length, probe);
  // A term whose candidates are many (common in older rows): an ordered part, far, costs less than visiting them all;
  // it is complete when it fills the page or reaches the end. Phone digits are asked like any other term: the index,
  // asked for their rare part (probeOf), finds them faster than a far ordered part would.
  // The estimate needs no transaction of its own: the plan settings change how rows are found, not how many.
  const candidates = known ?? (await count(indexedPart().estimate));
  // A far ordered part reads as many rows as the index's candidates would cost: it stops as soon as the page is full,
  // so a larger part costs more only when the index then has to finish the page.
  // At most an int's worth: the part's LIMIT is an int parameter, which a large estimate times rowsPerCandidate
  // overflowed (a 500 instead of a page).
  const far = Math.min(2 ** 31 - 1, Math.max(searchTuning.farRows, Math.ceil(candidates * searchTuning.rowsPerCandidate)));
  if (candidates > searchTuning.indexCandidates && (await ordered(far))) return found;
  // Built now: from where the ordered parts stopped, for what the page still needs (one built before them handed out
  // their matches a second time).
  return [...found, ...(await readWithIndexedPlan<Row>(pool, indexedPart().page))];

  /** The planner's count of the candidates (`estimate`), kept for the next search of the term in this workspace. */
  async function count(estimate: pg.QueryConfig): Promise<number> {
    const [plan] = (await searchScans.run(() => pool.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(estimate))).rows;
    const candidates = plan?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? Number.POSITIVE_INFINITY;
    estimates.keep(termKey, candidates);
    return candidates;
  }
}

/** Runs `query` with the plan INDEXED_PLAN sets (the GIN index's candidates), in one round trip (`withPlanSettings`). */
export async function readWithIndexedPlan<Result extends pg.QueryResultRow>(pool: pg.Pool, query: pg.QueryConfig): Promise<Result[]> {
  return (await searchScans.run(() => pool.query<Result>(withPlanSettings(query, INDEXED_PLAN)))).rows;
}

function withoutMarker<Row>(row: Row & ScanRow): Row {
  const { scan_hit: _hit, ...rest } = row;
  return rest as unknown as Row;
}
