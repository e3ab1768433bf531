-- The event log (crm_events) and the event each automation run was queued for (automation_runs.event_id).
-- AlterTable
ALTER TABLE "automation_runs" ADD COLUMN     "event_id" UUID;

-- CreateTable
CREATE TABLE "crm_events" (
    "id" UUID NOT NULL DEFAULT crm_new_id(),
    "organization_id" UUID NOT NULL,
    "type" "automation_trigger" NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "changed_xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),

    CONSTRAINT "crm_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "crm_events_organization_id_changed_xid_id_idx" ON "crm_events"("organization_id", "changed_xid", "id");

-- CreateIndex
CREATE INDEX "crm_events_created_at_idx" ON "crm_events"("created_at");

-- AddForeignKey
ALTER TABLE "crm_events" ADD CONSTRAINT "crm_events_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The workspace policy (as in tenant_row_level_security): the serving role reads and writes a workspace's events only.
ALTER TABLE "crm_events" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "crm_events" FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON "crm_events"
  USING (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid)
  WITH CHECK (organization_id = nullif(current_setting('app.organization_id', true), '')::uuid);

-- Open change streams learn of new events at commit (NOTIFY is delivered then), one notification per workspace and
-- statement, its payload the workspace's id; they read the events themselves, through the policy.
CREATE FUNCTION crm_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  org uuid;
BEGIN
  FOR org IN SELECT DISTINCT organization_id FROM inserted LOOP
    PERFORM pg_notify('crm_events', org::text);
  END LOOP;
  RETURN NULL;
END
$$;
CREATE TRIGGER crm_events_notify AFTER INSERT ON "crm_events" REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION crm_events_notify();
