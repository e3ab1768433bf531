-- AlterTable
ALTER TABLE "deals" ADD COLUMN     "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id();

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN     "archived_at" TIMESTAMPTZ(3),
ADD COLUMN     "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id();

-- CreateIndex
CREATE INDEX "deals_organization_id_changed_xid_id_idx" ON "deals"("organization_id", "changed_xid", "id");

-- CreateIndex
CREATE INDEX "tasks_organization_id_changed_xid_id_idx" ON "tasks"("organization_id", "changed_xid", "id");

-- Written by hand (Prisma does not model triggers).
-- Deals and tasks join the incremental sync of companies and contacts (the record kernel's `updated_since`): every
-- write stamps the writing transaction's id, and a deletion (a company's deals and tasks too, deleted by the cascade)
-- leaves a tombstone in crm_deletions, purged after 30 days like the others (see the migration crm_sync).
CREATE TRIGGER deals_changed_xid BEFORE UPDATE ON "deals" FOR EACH ROW EXECUTE FUNCTION crm_changed_xid();
CREATE TRIGGER tasks_changed_xid BEFORE UPDATE ON "tasks" FOR EACH ROW EXECUTE FUNCTION crm_changed_xid();
CREATE TRIGGER deals_deleted AFTER DELETE ON "deals" FOR EACH ROW EXECUTE FUNCTION crm_record_deleted('deal');
CREATE TRIGGER tasks_deleted AFTER DELETE ON "tasks" FOR EACH ROW EXECUTE FUNCTION crm_record_deleted('task');
CREATE TRIGGER deals_deletions_purge AFTER DELETE ON "deals" FOR EACH STATEMENT EXECUTE FUNCTION crm_deletions_purge();
CREATE TRIGGER tasks_deletions_purge AFTER DELETE ON "tasks" FOR EACH STATEMENT EXECUTE FUNCTION crm_deletions_purge();
