-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- DropIndex
DROP INDEX "contacts_organization_id_company_id_idx";

-- CreateIndex
CREATE INDEX "companies_name_trgm_idx" ON "companies" USING GIN ("name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "companies_email_trgm_idx" ON "companies" USING GIN ("email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "companies_phone_number_trgm_idx" ON "companies" USING GIN ("phone_number" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "companies_website_trgm_idx" ON "companies" USING GIN ("website" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_organization_id_company_id_created_at_id_idx" ON "contacts"("organization_id", "company_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "contacts_first_name_trgm_idx" ON "contacts" USING GIN ("first_name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_last_name_trgm_idx" ON "contacts" USING GIN ("last_name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_email_trgm_idx" ON "contacts" USING GIN ("email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_phone_number_trgm_idx" ON "contacts" USING GIN ("phone_number" gin_trgm_ops);
