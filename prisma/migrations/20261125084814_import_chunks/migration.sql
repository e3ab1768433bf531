-- An import's file moves from one text column to pieces of about 1 MiB, so neither the upload nor the job holds it
-- whole. Files already stored become one piece each (seq 0) before the column goes: nothing is lost.

-- CreateTable
CREATE TABLE "import_chunks" (
    "import_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "text" TEXT NOT NULL,

    CONSTRAINT "import_chunks_pkey" PRIMARY KEY ("import_id","seq")
);

-- AddForeignKey
ALTER TABLE "import_chunks" ADD CONSTRAINT "import_chunks_organization_id_import_id_fkey" FOREIGN KEY ("organization_id", "import_id") REFERENCES "imports"("organization_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Existing files: one piece each.
INSERT INTO "import_chunks" ("import_id", "organization_id", "seq", "text")
SELECT "id", "organization_id", 0, "file" FROM "imports" WHERE "file" <> '';

-- AlterTable
ALTER TABLE "imports" DROP COLUMN "file";
