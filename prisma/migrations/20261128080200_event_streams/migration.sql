-- Change streams: the tickets that open one without an Authorization header, and the open streams counted per workspace.
-- CreateTable
CREATE TABLE "event_stream_tickets" (
    "token_hash" CHAR(64) NOT NULL,
    "organization_id" UUID NOT NULL,
    "membership_id" UUID,
    "api_key_id" UUID,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "event_stream_tickets_pkey" PRIMARY KEY ("token_hash")
);

-- CreateTable
CREATE TABLE "event_streams" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "opened_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_streams_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "event_stream_tickets_expires_at_idx" ON "event_stream_tickets"("expires_at");

-- CreateIndex
CREATE INDEX "event_streams_organization_id_seen_at_idx" ON "event_streams"("organization_id", "seen_at");

-- AddForeignKey
ALTER TABLE "event_stream_tickets" ADD CONSTRAINT "event_stream_tickets_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event_streams" ADD CONSTRAINT "event_streams_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The workspace policy (as in tenant_row_level_security). A ticket is redeemed on the installation path (with the
-- other credentials), which the policy does not bind.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['event_stream_tickets', 'event_streams'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY workspace_isolation ON %I USING (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid) '
      'WITH CHECK (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid)', t);
  END LOOP;
END
$$;
