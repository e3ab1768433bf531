-- AlterEnum
ALTER TYPE "automation_trigger" ADD VALUE 'note.created';

-- CreateTable
CREATE TABLE "notes" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "body" TEXT NOT NULL,
    "created_by" UUID,
    "created_by_type" VARCHAR(16) NOT NULL,
    "created_by_name" VARCHAR(150),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),

    CONSTRAINT "notes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "note_targets" (
    "organization_id" UUID NOT NULL,
    "note_id" UUID NOT NULL,
    "target_type" VARCHAR(16) NOT NULL,
    "target_id" UUID NOT NULL,
    "position" SMALLINT NOT NULL,

    CONSTRAINT "note_targets_pkey" PRIMARY KEY ("note_id","target_type","target_id")
);

-- CreateIndex
CREATE INDEX "notes_organization_id_created_at_id_idx" ON "notes"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "notes_organization_id_changed_xid_id_idx" ON "notes"("organization_id", "changed_xid", "id");

-- CreateIndex
CREATE UNIQUE INDEX "notes_organization_id_id_key" ON "notes"("organization_id", "id");

-- CreateIndex
CREATE INDEX "note_targets_organization_id_target_type_target_id_idx" ON "note_targets"("organization_id", "target_type", "target_id");

-- AddForeignKey
ALTER TABLE "notes" ADD CONSTRAINT "notes_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "note_targets" ADD CONSTRAINT "note_targets_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "note_targets" ADD CONSTRAINT "note_targets_organization_id_note_id_fkey" FOREIGN KEY ("organization_id", "note_id") REFERENCES "notes"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Written by hand (Prisma does not model checks, triggers or row-level security).
ALTER TABLE "notes" ADD CONSTRAINT "notes_body_length" CHECK (char_length("body") BETWEEN 1 AND 65536);
ALTER TABLE "note_targets" ADD CONSTRAINT "note_targets_target_type"
  CHECK ("target_type" IN ('company', 'contact', 'deal', 'task'));

-- Notes join the incremental sync of the record kernel (`updated_since`): every write stamps the writing
-- transaction's id, and a deletion leaves a tombstone in crm_deletions (see the migration crm_sync).
CREATE TRIGGER notes_changed_xid BEFORE UPDATE ON "notes" FOR EACH ROW EXECUTE FUNCTION crm_changed_xid();
CREATE TRIGGER notes_deleted AFTER DELETE ON "notes" FOR EACH ROW EXECUTE FUNCTION crm_record_deleted('note');
CREATE TRIGGER notes_deletions_purge AFTER DELETE ON "notes" FOR EACH STATEMENT EXECUTE FUNCTION crm_deletions_purge();

-- A deleted record leaves the notes it was a target of (a company's cascaded contacts, deals and tasks too); a note
-- left without any target is deleted with it (docs/notes-and-batches.md), one that keeps others gets a new version.
-- Separate statements: each must see the one before's deletions, which a single statement's snapshot would not.
CREATE FUNCTION "note_targets_of_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  touched uuid[];
BEGIN
  WITH gone AS (
    DELETE FROM "note_targets" t USING "deleted" d
    WHERE t."organization_id" = d."organization_id" AND t."target_type" = TG_ARGV[0] AND t."target_id" = d."id"
    RETURNING t."note_id"
  )
  SELECT array_agg(DISTINCT "note_id") INTO touched FROM gone;
  IF touched IS NOT NULL THEN
    DELETE FROM "notes" n WHERE n."id" = ANY(touched)
      AND NOT EXISTS (SELECT 1 FROM "note_targets" o WHERE o."note_id" = n."id");
    -- A note that keeps other targets changed: a new version (its ETag), and the sync hands it out again.
    UPDATE "notes" SET "updated_at" = greatest(now(), "updated_at" + interval '1 millisecond') WHERE "id" = ANY(touched);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "note_targets_of_deleted_companies" AFTER DELETE ON "companies"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "note_targets_of_deleted"('company');
CREATE TRIGGER "note_targets_of_deleted_contacts" AFTER DELETE ON "contacts"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "note_targets_of_deleted"('contact');
CREATE TRIGGER "note_targets_of_deleted_deals" AFTER DELETE ON "deals"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "note_targets_of_deleted"('deal');
CREATE TRIGGER "note_targets_of_deleted_tasks" AFTER DELETE ON "tasks"
  REFERENCING OLD TABLE AS "deleted" FOR EACH STATEMENT EXECUTE FUNCTION "note_targets_of_deleted"('task');

-- Row-level security as for every table with an organization_id (the migration tenant_row_level_security).
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['notes', 'note_targets'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY workspace_isolation ON %I USING (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid) '
      'WITH CHECK (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid)', t);
    -- The serving role's rows (its default privileges cover new tables of the role that set them; these say it here).
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'crm_serving') THEN
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO crm_serving', t);
    END IF;
  END LOOP;
END
$$;
