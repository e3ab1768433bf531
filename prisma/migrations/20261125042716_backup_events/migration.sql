-- CreateEnum
CREATE TYPE "BackupEventKind" AS ENUM ('backup', 'restore_test');

-- CreateEnum
CREATE TYPE "BackupEventStatus" AS ENUM ('success', 'failure');

-- CreateTable
CREATE TABLE "backup_events" (
    "id" UUID NOT NULL,
    "kind" "BackupEventKind" NOT NULL,
    "status" "BackupEventStatus" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "reported_by" VARCHAR(150) NOT NULL,

    CONSTRAINT "backup_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "backup_events_kind_created_at_idx" ON "backup_events"("kind", "created_at" DESC);
