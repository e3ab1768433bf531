-- DropIndex
DROP INDEX "companies_email_trgm_idx";

-- DropIndex
DROP INDEX "companies_name_trgm_idx";

-- DropIndex
DROP INDEX "companies_phone_number_trgm_idx";

-- DropIndex
DROP INDEX "companies_website_trgm_idx";

-- DropIndex
DROP INDEX "contacts_email_trgm_idx";

-- DropIndex
DROP INDEX "contacts_first_name_trgm_idx";

-- DropIndex
DROP INDEX "contacts_last_name_trgm_idx";

-- DropIndex
DROP INDEX "contacts_phone_number_trgm_idx";

-- AlterTable
ALTER TABLE "companies" ADD COLUMN     "search_text" TEXT;

-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "search_text" TEXT;

-- Written by hand (Prisma does not model triggers): search_text holds the searchable columns lower-cased and joined
-- by U+001F, so the list search is one LIKE per row on a trigram-indexed column instead of one ILIKE per column.
-- A trigger keeps it, whoever writes the row; its arguments name the searchable columns.
CREATE FUNCTION crm_search_text() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row_json jsonb := to_jsonb(NEW);
  parts text[] := '{}';
  column_name text;
BEGIN
  FOREACH column_name IN ARRAY TG_ARGV LOOP
    parts := parts || (row_json ->> column_name);
  END LOOP;
  -- array_to_string skips NULLs, as an absent value has nothing to match.
  NEW.search_text := lower(array_to_string(parts, E'\x1f'));
  RETURN NEW;
END
$$;

CREATE TRIGGER companies_search_text BEFORE INSERT OR UPDATE OF name, email, phone_number, website ON "companies"
  FOR EACH ROW EXECUTE FUNCTION crm_search_text('name', 'email', 'phone_number', 'website');

CREATE TRIGGER contacts_search_text BEFORE INSERT OR UPDATE OF first_name, last_name, email, phone_number ON "contacts"
  FOR EACH ROW EXECUTE FUNCTION crm_search_text('first_name', 'last_name', 'email', 'phone_number');

-- Existing rows: the triggers fire on these updates.
UPDATE "companies" SET name = name;
UPDATE "contacts" SET first_name = first_name;

-- CreateIndex
CREATE INDEX "companies_search_text_trgm_idx" ON "companies" USING GIN ("search_text" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_search_text_trgm_idx" ON "contacts" USING GIN ("search_text" gin_trgm_ops);
