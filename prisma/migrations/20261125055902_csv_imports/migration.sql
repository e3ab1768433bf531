-- CreateEnum
CREATE TYPE "import_kind" AS ENUM ('companies', 'contacts');

-- CreateEnum
CREATE TYPE "import_mode" AS ENUM ('create', 'upsert');

-- CreateEnum
CREATE TYPE "import_status" AS ENUM ('queued', 'running', 'succeeded', 'failed', 'cancelled');

-- AlterEnum
ALTER TYPE "automation_trigger" ADD VALUE 'import.finished';

-- CreateTable
CREATE TABLE "imports" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "kind" "import_kind" NOT NULL,
    "mode" "import_mode" NOT NULL,
    "status" "import_status" NOT NULL DEFAULT 'queued',
    "fields" JSONB NOT NULL,
    "delimiter" VARCHAR(1) NOT NULL,
    "file" TEXT NOT NULL,
    "total_rows" INTEGER NOT NULL,
    "processed_rows" INTEGER NOT NULL DEFAULT 0,
    "created" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "failed_rows" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "imports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "import_errors" (
    "import_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "line" INTEGER NOT NULL,
    "cells" JSONB NOT NULL,
    "error" TEXT NOT NULL,

    CONSTRAINT "import_errors_pkey" PRIMARY KEY ("import_id","line")
);

-- CreateIndex
CREATE INDEX "imports_organization_id_created_at_id_idx" ON "imports"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "imports_organization_id_id_key" ON "imports"("organization_id", "id");

-- AddForeignKey
ALTER TABLE "imports" ADD CONSTRAINT "imports_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "import_errors" ADD CONSTRAINT "import_errors_organization_id_import_id_fkey" FOREIGN KEY ("organization_id", "import_id") REFERENCES "imports"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;
