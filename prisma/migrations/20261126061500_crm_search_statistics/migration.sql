-- A search chooses between a far ordered part and the GIN index by the planner's count of the term's candidates
-- (db/tenant-pages.ts, SEARCH_INDEX_CANDIDATES). With the default statistics, search_text's histogram has 100 entries,
-- and a term found in one of them counts as 1 % of the rows: a term in 0.05 % of the rows, when the sample happened to
-- hold it, looked like one in 1 % and read the far part. With 300 entries one counts as 0.33 %, below the threshold on
-- two million rows. ANALYZE samples 90,000 rows instead of 30,000: 4.2 s instead of 2.0 s for two million companies
-- (measured; 1,000 entries took 12.7 s, and an autovacuum ANALYZE of that cost slowed a 100,000-row import by 3 s).
ALTER TABLE "companies" ALTER COLUMN "search_text" SET STATISTICS 300;
ALTER TABLE "contacts" ALTER COLUMN "search_text" SET STATISTICS 300;
ANALYZE "companies";
ANALYZE "contacts";
