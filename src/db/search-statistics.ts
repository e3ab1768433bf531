// What the search planner knows before it reads: which trigrams search_text's statistics call common, a term's rare
// part, and the counts and densities earlier searches of a term left in this process.
import type pg from 'pg';

/**
 * Rows the first ordered part of a search reads: a common term fills its page there, at the cost of an index scan
 * of the sort's index; a rarer one goes on in the index.
 */
export const SEARCH_SCAN_ROWS = 2_000;
/**
 * The most rows a second ordered part reads, when the first found matches often enough to expect a full page within
 * half of it (a match in every 300 rows or more often): a short index scan, where a GIN index would visit as
 * many candidates as the term has matches in all older rows.
 */
export const SEARCH_MORE_ROWS = 16_000;
/**
 * The share of search_text's statistics sample above which a trigram is common: its posting list in the trigram index
 * is long and it rules out few rows.
 */
const COMMON_GRAM_SHARE = 0.02;
/** How long a process keeps a table's statistics sample of search_text (it changes with each ANALYZE). */
const SAMPLE_TTL_MS = 10 * 60_000;

/** Values this process keeps for SAMPLE_TTL_MS each, at most `size` of them: the least recently kept goes first. */
class Memory<Value> {
  private readonly kept = new Map<string, { value: Value; at: number }>();

  constructor(private readonly size: number) {}

  get(key: string): Value | undefined {
    const known = this.kept.get(key);
    return known && Date.now() - known.at < SAMPLE_TTL_MS ? known.value : undefined;
  }

  keep(key: string, value: Value) {
    this.kept.delete(key);
    this.kept.set(key, { value, at: Date.now() });
    if (this.kept.size > this.size) this.kept.delete(this.kept.keys().next().value as string);
  }
}

/** Whether a trigram is common in a table's statistics sample (see `commonGramsOf`), by table and trigram. */
const commonGrams = new Memory<boolean>(10_000);
/** Tables without a statistics sample this process could read (see crm_common_grams). */
const unsampled = new Memory<true>(16);

/** The word-character trigrams of a folded term, where pg_trgm's words have them (runs of letters and digits). */
function gramsOf(folded: readonly string[]): string[] {
  const word = /[\p{L}\p{N}]/u;
  const grams: string[] = [];
  for (let start = 0; start + 3 <= folded.length; start++) {
    const gram = folded.slice(start, start + 3);
    if (gram.every((c) => word.test(c))) grams.push(gram.join(''));
  }
  return grams;
}

/**
 * Which of a term's trigrams are common in `table`.search_text's statistics sample (its most common values and
 * histogram bounds, lower-cased like the column): asked of crm_common_grams, which reads the statistics the serving
 * role may not see and answers only that, and kept for SAMPLE_TTL_MS (the sample changes with each ANALYZE). Null
 * when the table has no sample to tell.
 */
export async function commonGramsOf(pool: pg.Pool, table: string, term: string): Promise<ReadonlySet<string> | null> {
  if (unsampled.get(table)) return null;
  const grams = [...new Set(gramsOf([...term.toLowerCase()]))];
  const unknown = grams.filter((gram) => commonGrams.get(`${table}\u0000${gram}`) === undefined);
  if (unknown.length > 0) {
    const { rows } = await pool.query<{ common: string[] | null }>('SELECT crm_common_grams($1, $2::text[], $3) AS common', [
      table,
      unknown,
      COMMON_GRAM_SHARE,
    ]);
    const common = rows[0]?.common;
    if (common === null || common === undefined) {
      unsampled.keep(table, true);
      return null;
    }
    for (const gram of unknown) commonGrams.keep(`${table}\u0000${gram}`, common.includes(gram));
  }
  return new Set(grams.filter((gram) => commonGrams.get(`${table}\u0000${gram}`)));
}

/**
 * What the trigram index is asked for a term: the longest part of it whose trigrams are all rare in the statistics
 * sample (`common` holds those that are not), or the term itself. pg_trgm answers a `LIKE '%…%'` by reading the
 * posting list of every trigram of the pattern, and a trigram found in most rows costs a page of its list for each
 * candidate, where the rare part alone reads short lists (measurements: docs/benchmarks.md, Lists and search). The
 * part needs two rare trigrams or more. Only trigrams within runs of letters and digits count (pg_trgm's words); a
 * term whose folding changes its length in JavaScript is asked whole (positions would not match PostgreSQL's
 * `lower()`). The choice changes what the index is asked, never the answer.
 */
export function probeOf(term: string, common: ReadonlySet<string> | null): string {
  const chars = [...term];
  const folded = [...term.toLowerCase()];
  if (folded.length !== chars.length || common === null) return term;
  const word = /[\p{L}\p{N}]/u;
  const rare = (start: number) => {
    const gram = folded.slice(start, start + 3);
    return gram.length === 3 && gram.every((c) => word.test(c)) && !common.has(gram.join(''));
  };
  // The longest run of consecutive rare trigrams (each within a word): its characters are the probe.
  let best = { start: 0, grams: 0 };
  for (let start = 0, run = 0; start + 3 <= folded.length; start++) {
    run = rare(start) ? run + 1 : 0;
    if (run > best.grams) best = { start: start - run + 1, grams: run };
  }
  // A single rare trigram may still be in thousands of rows: the whole term's lists, intersected, are then cheaper.
  if (best.grams < 2) return term;
  const probe = chars.slice(best.start, best.start + best.grams + 2).join('');
  return probe.length === chars.length ? term : probe;
}

/**
 * How a search with many candidates goes on in list order before it asks the index (see `searchPage`); tests lower
 * these to take that path on a few thousand rows.
 *
 * - `indexCandidates`: the candidates (by the planner's estimate) above which a far ordered part goes first: the GIN
 *   path's cost grows with its candidates, a far ordered part's does not.
 * - `farRows`: the fewest rows of a far ordered part.
 * - `rowsPerCandidate`: its rows per candidate, where that is more, so that it reads about what the index would cost.
 *   The matches' position is unknown until they are read: reading in order until that cost is spent, then asking the
 *   index, costs at most about twice the cheaper of the two.
 *
 * How these numbers were measured: docs/benchmarks.md, Lists and search.
 */
export const searchTuning = { indexCandidates: 8_000, farRows: 65_536, rowsPerCandidate: 6 };
/**
 * The planner's count of a term's candidates, kept from an earlier search of it in this workspace and process whose
 * ordered parts did not fill its page (only such a search counts them). The next search of the term there skips
 * those parts: most likely they would find as little again, and with a count known the plan is chosen without them
 * (the index for a rare term, else the far ordered part, which stops as soon as the page is full). The count depends
 * on the table's statistics alone, like the sample of `sampleOf`; what is kept never changes an answer, only what is
 * read to find it.
 */
export const estimates = new Memory<number>(1_000);
/**
 * The share of rows matching a term in the last ordered part of a search of it that did not fill its page: the next
 * page of the term starts with one ordered part sized for a full page at that density (a quarter more, within
 * SEARCH_SCAN_ROWS..SEARCH_MORE_ROWS) instead of the first part and a second. A client walking a 1 % term's pages
 * reads each in one statement, not two.
 */
export const densities = new Memory<number>(1_000);
