-- A search chooses between a far ordered part and the GIN index by the planner's count of the term's candidates
-- (db/tenant-pages.ts, SEARCH_INDEX_CANDIDATES). With the default statistics, search_text's histogram has 100 entries:
-- a term found in one of them counted as 1 % of the rows, so a term in 0.05 % looked like one in 1 %; and a one- or
-- two-character gram missing from the grams' most common elements counted as a share of the rarest of them. Ten times
-- the statistics tell 0.1 % from 1 % and keep rarer grams; ANALYZE samples 300,000 rows instead of 30,000 (about 14 s
-- for two million companies, in the background as autovacuum runs it).
ALTER TABLE "companies" ALTER COLUMN "search_text" SET STATISTICS 1000;
ALTER TABLE "contacts" ALTER COLUMN "search_text" SET STATISTICS 1000;
ALTER INDEX "companies_search_text_short_grams_idx" ALTER COLUMN 1 SET STATISTICS 1000;
ALTER INDEX "contacts_search_text_short_grams_idx" ALTER COLUMN 1 SET STATISTICS 1000;
ANALYZE "companies";
ANALYZE "contacts";
