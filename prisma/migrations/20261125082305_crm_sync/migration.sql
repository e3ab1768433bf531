-- AlterTable
ALTER TABLE "companies" ADD COLUMN     "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id();

-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id();

-- CreateTable
CREATE TABLE "crm_deletions" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "record_type" VARCHAR(16) NOT NULL,
    "record_id" UUID NOT NULL,
    "deleted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),

    CONSTRAINT "crm_deletions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "crm_deletions_organization_id_changed_xid_id_idx" ON "crm_deletions"("organization_id", "changed_xid", "id");

-- CreateIndex
CREATE INDEX "crm_deletions_deleted_at_idx" ON "crm_deletions"("deleted_at");

-- CreateIndex
CREATE INDEX "companies_organization_id_changed_xid_id_idx" ON "companies"("organization_id", "changed_xid", "id");

-- CreateIndex
CREATE INDEX "contacts_organization_id_changed_xid_id_idx" ON "contacts"("organization_id", "changed_xid", "id");

-- Written by hand (Prisma does not model triggers).
-- Every write of a company or contact stamps the writing transaction's id: the incremental sync hands out changes
-- in that order, and only those of transactions older than the oldest one still running
-- (pg_snapshot_xmin(pg_current_snapshot())), so that a transaction that commits late is never skipped.
CREATE FUNCTION crm_changed_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.changed_xid := pg_current_xact_id();
  RETURN NEW;
END $$;
CREATE TRIGGER companies_changed_xid BEFORE UPDATE ON "companies" FOR EACH ROW EXECUTE FUNCTION crm_changed_xid();
CREATE TRIGGER contacts_changed_xid BEFORE UPDATE ON "contacts" FOR EACH ROW EXECUTE FUNCTION crm_changed_xid();

-- A deleted company or contact (a company's contacts too, deleted by the cascade) leaves a tombstone for the sync,
-- unless its workspace is being deleted with it (no one is left to tell).
CREATE FUNCTION crm_record_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM organizations WHERE id = OLD.organization_id) THEN
    INSERT INTO crm_deletions (id, organization_id, record_type, record_id)
    VALUES (gen_random_uuid(), OLD.organization_id, TG_ARGV[0], OLD.id);
  END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER companies_deleted AFTER DELETE ON "companies" FOR EACH ROW EXECUTE FUNCTION crm_record_deleted('company');
CREATE TRIGGER contacts_deleted AFTER DELETE ON "contacts" FOR EACH ROW EXECUTE FUNCTION crm_record_deleted('contact');

-- Tombstones are kept 30 days (the README and the OpenAPI document say so): each deleting statement purges the
-- expired ones, through the deleted_at index (usually none).
CREATE FUNCTION crm_deletions_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM crm_deletions WHERE deleted_at < now() - interval '30 days';
  RETURN NULL;
END $$;
CREATE TRIGGER companies_deletions_purge AFTER DELETE ON "companies" FOR EACH STATEMENT EXECUTE FUNCTION crm_deletions_purge();
CREATE TRIGGER contacts_deletions_purge AFTER DELETE ON "contacts" FOR EACH STATEMENT EXECUTE FUNCTION crm_deletions_purge();
