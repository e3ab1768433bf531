-- CreateTable
CREATE TABLE "automation_email_sends" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "sent_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "automation_email_sends_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "automation_email_sends_organization_id_sent_at_idx" ON "automation_email_sends"("organization_id", "sent_at");

-- AddForeignKey
ALTER TABLE "automation_email_sends" ADD CONSTRAINT "automation_email_sends_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
