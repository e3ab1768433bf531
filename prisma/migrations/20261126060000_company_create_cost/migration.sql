-- What a company create paid for nothing (each create writes the company, its timeline entry and its customer code):

-- lower(email) of every company was in two indexes: the unique one of issue 27 (companies that do not share their
-- email) and the import's lookup index. The lookup now reads the unique index, and this one, which holds only the
-- companies that shared an email before duplicates were refused (none, on an installation that started after that).
DROP INDEX "companies_organization_id_lower_email_idx";
CREATE INDEX "companies_organization_id_lower_email_shared_idx" ON "companies" ("organization_id", lower("email"))
  WHERE "email_shared";
-- The planner takes no statistics from a partial index: these give it lower(email) and lower(tax_id)'s own, so that
-- a batch's thousand emails or tax ids are probes of the unique indexes, not a guess of the whole table.
CREATE STATISTICS "companies_lower_email_stats" ON (lower("email")) FROM "companies";
CREATE STATISTICS "companies_lower_tax_id_stats" ON (lower("tax_id")) FROM "companies";
ANALYZE "companies";

-- A timeline entry is on one record's timeline (crm_activities_one_record): each timeline index holds the entries of
-- its own kind of record, not a NULL key for every entry of the other kind.
DROP INDEX "crm_activities_organization_id_company_id_created_at_id_idx";
CREATE INDEX "crm_activities_organization_id_company_id_created_at_id_idx"
  ON "crm_activities" ("organization_id", "company_id", "created_at" DESC, "id" DESC) WHERE "company_id" IS NOT NULL;
DROP INDEX "crm_activities_organization_id_contact_id_created_at_id_idx";
CREATE INDEX "crm_activities_organization_id_contact_id_created_at_id_idx"
  ON "crm_activities" ("organization_id", "contact_id", "created_at" DESC, "id" DESC) WHERE "contact_id" IS NOT NULL;

-- The next customer code without an EXCEPTION block, which made every call a subtransaction: the sequence is looked
-- up first and created only when missing (concurrent first creates take turns on the advisory lock, as before; the
-- later one finds the sequence the earlier one committed).
CREATE OR REPLACE FUNCTION "next_customer_number"(organization uuid) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  name text := format('%I', 'customer_numbers_' || replace(organization::text, '-', ''));
BEGIN
  IF to_regclass(name) IS NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext(name));
    EXECUTE 'CREATE SEQUENCE IF NOT EXISTS ' || name;
  END IF;
  RETURN nextval(name);
END $$;
