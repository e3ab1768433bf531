-- Scheduling moves to graphile-worker's jobs (schema graphile_worker, installed and upgraded by the app at start or
-- by `npm run migrate`, which also queues a job for every row still waiting): the lease and due-time columns go.
-- DropIndex
DROP INDEX "automation_runs_status_next_attempt_at_idx";

-- DropIndex
DROP INDEX "email_outbox_status_next_attempt_at_idx";

-- AlterTable
ALTER TABLE "automation_runs" DROP COLUMN "locked_until",
DROP COLUMN "next_attempt_at";

-- AlterTable
ALTER TABLE "email_outbox" DROP COLUMN "next_attempt_at";

-- CreateIndex
CREATE INDEX "automation_runs_status_idx" ON "automation_runs"("status");

-- CreateIndex
CREATE INDEX "email_outbox_status_idx" ON "email_outbox"("status");
