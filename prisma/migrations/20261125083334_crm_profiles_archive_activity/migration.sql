-- AlterTable
ALTER TABLE "companies" ADD COLUMN     "address_line_1" VARCHAR(255),
ADD COLUMN     "address_line_2" VARCHAR(255),
ADD COLUMN     "archived_at" TIMESTAMPTZ(3),
ADD COLUMN     "assigned_to" UUID,
ADD COLUMN     "city" VARCHAR(100),
ADD COLUMN     "country" CHAR(2),
ADD COLUMN     "customer_code" VARCHAR(24),
ADD COLUMN     "email_shared" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "industry" VARCHAR(100),
ADD COLUMN     "notes" TEXT,
ADD COLUMN     "postal_code" VARCHAR(20),
ADD COLUMN     "tax_id" VARCHAR(50),
ADD COLUMN     "tax_id_shared" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "archived_at" TIMESTAMPTZ(3),
ADD COLUMN     "assigned_to" UUID,
ADD COLUMN     "notes" TEXT;

-- CreateTable
CREATE TABLE "crm_activities" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "company_id" UUID,
    "contact_id" UUID,
    "kind" VARCHAR(40) NOT NULL,
    "fields" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "subject_id" UUID,
    "actor_type" VARCHAR(16) NOT NULL,
    "actor_id" UUID,
    "actor_name" VARCHAR(150),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "crm_activities_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "crm_activities_organization_id_company_id_created_at_id_idx" ON "crm_activities"("organization_id", "company_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "crm_activities_organization_id_contact_id_created_at_id_idx" ON "crm_activities"("organization_id", "contact_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "companies_organization_id_customer_code_key" ON "companies"("organization_id", "customer_code");

-- AddForeignKey
ALTER TABLE "companies" ADD CONSTRAINT "companies_assigned_to_fkey" FOREIGN KEY ("assigned_to") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_assigned_to_fkey" FOREIGN KEY ("assigned_to") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "crm_activities" ADD CONSTRAINT "crm_activities_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "crm_activities" ADD CONSTRAINT "crm_activities_organization_id_company_id_fkey" FOREIGN KEY ("organization_id", "company_id") REFERENCES "companies"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "crm_activities" ADD CONSTRAINT "crm_activities_organization_id_contact_id_fkey" FOREIGN KEY ("organization_id", "contact_id") REFERENCES "contacts"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Customer code numbers come from one sequence per workspace, created at its first company: nextval takes no lock
-- that lasts until commit (a counter row would make a workspace's concurrent creates wait for each other's commits)
-- and never hands a number out twice; a failed create leaves a gap.
CREATE FUNCTION "next_customer_number"(organization uuid) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  name text := 'customer_numbers_' || replace(organization::text, '-', '');
BEGIN
  RETURN nextval(format('%I', name));
EXCEPTION WHEN undefined_table THEN
  -- Concurrent first creates take turns here; the later one finds the sequence the earlier one committed.
  PERFORM pg_advisory_xact_lock(hashtext(name));
  EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I', name);
  RETURN nextval(format('%I', name));
END $$;
CREATE FUNCTION "drop_customer_numbers"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP SEQUENCE IF EXISTS %I', 'customer_numbers_' || replace(OLD."id"::text, '-', ''));
  RETURN OLD;
END $$;
CREATE TRIGGER "organizations_drop_customer_numbers" AFTER DELETE ON "organizations"
  FOR EACH ROW EXECUTE FUNCTION "drop_customer_numbers"();

-- Customer codes of the existing companies, oldest first per workspace, and each workspace's sequence after them.
UPDATE "companies" c SET "customer_code" = 'CUS-' || lpad(n.number::text, greatest(5, length(n.number::text)), '0')
FROM (SELECT "id", row_number() OVER (PARTITION BY "organization_id" ORDER BY "created_at", "id") AS number FROM "companies") n
WHERE c."id" = n."id";
DO $$
DECLARE
  workspace record;
BEGIN
  FOR workspace IN SELECT "organization_id" AS id, count(*) AS companies FROM "companies" GROUP BY "organization_id" LOOP
    -- Creates the sequence first (setval's name is resolved before its other argument would be evaluated).
    PERFORM "next_customer_number"(workspace.id);
    PERFORM setval(format('%I', 'customer_numbers_' || replace(workspace.id::text, '-', '')), workspace.companies);
  END LOOP;
END $$;

-- Companies that already share a tax id or email with an older company of their workspace are kept, flagged, and
-- left out of the unique indexes below (the console lists them); every later duplicate is refused.
UPDATE "companies" c SET "tax_id_shared" = true
WHERE c."tax_id" IS NOT NULL AND EXISTS (
  SELECT 1 FROM "companies" o WHERE o."organization_id" = c."organization_id" AND lower(o."tax_id") = lower(c."tax_id")
    AND (o."created_at", o."id") < (c."created_at", c."id"));
UPDATE "companies" c SET "email_shared" = true
WHERE c."email" IS NOT NULL AND EXISTS (
  SELECT 1 FROM "companies" o WHERE o."organization_id" = c."organization_id" AND lower(o."email") = lower(c."email")
    AND (o."created_at", o."id") < (c."created_at", c."id"));
CREATE UNIQUE INDEX "companies_organization_id_tax_id_unique" ON "companies" ("organization_id", lower("tax_id"))
  WHERE "tax_id" IS NOT NULL AND NOT "tax_id_shared";
CREATE UNIQUE INDEX "companies_organization_id_email_unique" ON "companies" ("organization_id", lower("email"))
  WHERE "email" IS NOT NULL AND NOT "email_shared";

-- A flagged company whose value changes is checked like any other from then on.
CREATE FUNCTION "companies_clear_shared_flags"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."tax_id" IS DISTINCT FROM OLD."tax_id" THEN NEW."tax_id_shared" := false; END IF;
  IF NEW."email" IS DISTINCT FROM OLD."email" THEN NEW."email_shared" := false; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "companies_clear_shared_flags" BEFORE UPDATE OF "tax_id", "email" ON "companies"
  FOR EACH ROW WHEN (OLD."tax_id_shared" OR OLD."email_shared") EXECUTE FUNCTION "companies_clear_shared_flags"();

-- Whose timeline an entry is on: exactly one record.
ALTER TABLE "crm_activities" ADD CONSTRAINT "crm_activities_one_record" CHECK (num_nonnulls("company_id", "contact_id") = 1);
