-- A country's companies in recency order (`country = … ORDER BY updated_at DESC`): a page walks the country's newest
-- rows instead of sorting all of them, which for a rare country took a bitmap of thousands of rows each page. Any
-- other order still reads the country's rows from this index's prefix, as it did from the index it replaces.
DROP INDEX IF EXISTS "companies_organization_id_country_idx";
CREATE INDEX "companies_organization_id_country_updated_at_id_idx"
  ON "companies"("organization_id", "country", "updated_at" DESC, "id" DESC);
