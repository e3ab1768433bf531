-- DropForeignKey
ALTER TABLE "crm_activities" DROP CONSTRAINT "crm_activities_organization_id_company_id_fkey";

-- DropForeignKey
ALTER TABLE "crm_activities" DROP CONSTRAINT "crm_activities_organization_id_contact_id_fkey";

-- Written by hand: the entries of deleted companies and contacts go with them (what the keys' ON DELETE CASCADE did),
-- once per statement over its deleted rows (a company's deletion cascading to many contacts is one more statement).
CREATE FUNCTION "crm_activities_of_deleted_companies"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "crm_activities" a USING "deleted" d WHERE a."organization_id" = d."organization_id" AND a."company_id" = d."id";
  RETURN NULL;
END $$;
CREATE TRIGGER "crm_activities_of_deleted_companies" AFTER DELETE ON "companies"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "crm_activities_of_deleted_companies"();

CREATE FUNCTION "crm_activities_of_deleted_contacts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "crm_activities" a USING "deleted" d WHERE a."organization_id" = d."organization_id" AND a."contact_id" = d."id";
  RETURN NULL;
END $$;
CREATE TRIGGER "crm_activities_of_deleted_contacts" AFTER DELETE ON "contacts"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "crm_activities_of_deleted_contacts"();
