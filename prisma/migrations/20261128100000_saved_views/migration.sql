-- Saved views (docs/queries.md, "Saved views"): a named query and the columns a client shows, of one record type.
-- CreateTable
CREATE TABLE "saved_views" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "object" VARCHAR(16) NOT NULL,
    "filter" JSONB,
    "search" VARCHAR(200),
    "sort" JSONB NOT NULL DEFAULT '[]',
    "columns" JSONB NOT NULL DEFAULT '[]',
    "visibility" VARCHAR(16) NOT NULL,
    "created_by" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "saved_views_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "saved_views_organization_id_created_at_id_idx" ON "saved_views"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "saved_views_organization_id_id_key" ON "saved_views"("organization_id", "id");

-- AddForeignKey
ALTER TABLE "saved_views" ADD CONSTRAINT "saved_views_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Written by hand (Prisma does not model checks or row-level security).
ALTER TABLE "saved_views" ADD CONSTRAINT "saved_views_object" CHECK ("object" IN ('companies', 'contacts', 'deals', 'tasks'));
ALTER TABLE "saved_views" ADD CONSTRAINT "saved_views_visibility" CHECK ("visibility" IN ('personal', 'workspace'));
-- A personal view belongs to a user (a workspace API key creates workspace views only).
ALTER TABLE "saved_views" ADD CONSTRAINT "saved_views_personal_creator"
  CHECK ("visibility" <> 'personal' OR "created_by" IS NOT NULL);

-- Row-level security as for every table with an organization_id (the migration tenant_row_level_security).
ALTER TABLE "saved_views" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "saved_views" FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON "saved_views"
  USING (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid)
  WITH CHECK (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid);
-- The serving role's rows (its default privileges cover new tables of the role that set them; this says it here).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'crm_serving') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON "saved_views" TO crm_serving;
  END IF;
END
$$;
