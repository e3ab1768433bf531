-- The installation's fallback SMTP account leaves the tenant table email_accounts for its own installation-settings
-- table, so every email_accounts row belongs to a workspace and tenant code reaches mail only through the scoped client.

-- CreateTable
CREATE TABLE "installation_email_account" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "name" VARCHAR(100) NOT NULL,
    "host" VARCHAR(255) NOT NULL,
    "port" INTEGER NOT NULL,
    "username" VARCHAR(254) NOT NULL,
    "password_encrypted" TEXT,
    "from_email" VARCHAR(254) NOT NULL,
    "from_name" VARCHAR(150),
    "use_tls" BOOLEAN NOT NULL DEFAULT true,
    "use_ssl" BOOLEAN NOT NULL DEFAULT false,
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "installation_email_account_pkey" PRIMARY KEY ("id"),
    -- One fallback account per installation.
    CONSTRAINT "installation_email_account_single_row" CHECK ("id" = 1),
    CONSTRAINT "installation_email_account_port_range" CHECK ("port" BETWEEN 1 AND 65535),
    CONSTRAINT "installation_email_account_tls_modes" CHECK (NOT ("use_tls" AND "use_ssl"))
);

-- Data: the fallback the code used (the oldest active installation account, else the oldest one) moves over; queued
-- messages that named an installation account send through the fallback (a NULL account means exactly that).
INSERT INTO "installation_email_account"
    ("id", "name", "host", "port", "username", "password_encrypted", "from_email", "from_name", "use_tls", "use_ssl",
     "is_active", "created_at", "updated_at")
SELECT 1, "name", "host", "port", "username", "password_encrypted", "from_email", "from_name", "use_tls", "use_ssl",
       "is_active", "created_at", "updated_at"
FROM "email_accounts" WHERE "organization_id" IS NULL
ORDER BY "is_active" DESC, "created_at" ASC LIMIT 1;

UPDATE "email_outbox" SET "email_account_id" = NULL
WHERE "email_account_id" IN (SELECT "id" FROM "email_accounts" WHERE "organization_id" IS NULL);

DELETE FROM "email_accounts" WHERE "organization_id" IS NULL;

-- AlterTable
ALTER TABLE "email_accounts" ALTER COLUMN "organization_id" SET NOT NULL;
