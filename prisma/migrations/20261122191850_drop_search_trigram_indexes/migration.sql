-- The CRM search no longer uses trigram indexes (issue 12): drop them and the extension.
-- DropIndex
DROP INDEX "companies_search_text_trgm_idx";

-- DropIndex
DROP INDEX "contacts_search_text_trgm_idx";

-- Written by hand: the search reads a bounded number of rows per page in list order (src/db/tenant-pages.ts) and no
-- longer uses trigram indexes, which only slowed every write of these tables; nothing else uses pg_trgm.
DROP EXTENSION "pg_trgm";
