-- Custom fields: their definitions per workspace and record type, and each record's values in one jsonb map keyed by
-- the field's key. Adding a column with a constant default only changes the catalog (PostgreSQL 11+): no table rewrite.
-- AlterTable
ALTER TABLE "companies" ADD COLUMN     "custom_fields" JSONB NOT NULL DEFAULT '{}';

-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "custom_fields" JSONB NOT NULL DEFAULT '{}';

-- AlterTable
ALTER TABLE "deals" ADD COLUMN     "custom_fields" JSONB NOT NULL DEFAULT '{}';

-- AlterTable
ALTER TABLE "tasks" ADD COLUMN     "custom_fields" JSONB NOT NULL DEFAULT '{}';

-- CreateTable
CREATE TABLE "custom_field_definitions" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "object" VARCHAR(16) NOT NULL,
    "key" VARCHAR(40) NOT NULL,
    "label" VARCHAR(100) NOT NULL,
    "type" VARCHAR(16) NOT NULL,
    "required" BOOLEAN NOT NULL DEFAULT false,
    "options" JSONB NOT NULL DEFAULT '[]',
    "position" INTEGER NOT NULL DEFAULT 0,
    "description" VARCHAR(1000),
    "archived_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "custom_field_definitions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "companies_custom_fields_idx" ON "companies" USING GIN ("custom_fields" jsonb_path_ops);

-- CreateIndex
CREATE INDEX "contacts_custom_fields_idx" ON "contacts" USING GIN ("custom_fields" jsonb_path_ops);

-- CreateIndex
CREATE INDEX "deals_custom_fields_idx" ON "deals" USING GIN ("custom_fields" jsonb_path_ops);

-- CreateIndex
CREATE INDEX "tasks_custom_fields_idx" ON "tasks" USING GIN ("custom_fields" jsonb_path_ops);

-- CreateIndex
CREATE UNIQUE INDEX "custom_field_definitions_organization_id_object_key_key" ON "custom_field_definitions"("organization_id", "object", "key");

-- AddForeignKey
ALTER TABLE "custom_field_definitions" ADD CONSTRAINT "custom_field_definitions_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The workspace policy (as in tenant_row_level_security).
ALTER TABLE custom_field_definitions ENABLE ROW LEVEL SECURITY;
ALTER TABLE custom_field_definitions FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON custom_field_definitions
  USING (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid)
  WITH CHECK (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid);

-- A record's custom fields as the API answers them: every active field of its workspace and record type, by key, null
-- where the record holds no value; archived fields' values stay stored but are left out. Page reads, the kernel's
-- writes (RETURNING) and the events they queue all select this, so every answer and payload agrees. Runs as the
-- caller: the definitions' policy applies.
CREATE FUNCTION crm_custom_fields(org uuid, record_object text, stored jsonb) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(jsonb_object_agg(d.key, stored -> d.key), '{}'::jsonb)
  FROM custom_field_definitions d
  WHERE d.organization_id = org AND d.object = record_object AND d.archived_at IS NULL
$$;
