-- Written by hand (Prisma does not model expression indexes). The keys a CSV import matches rows by, so a batch of
-- 1,000 upsert rows is some index probes instead of a scan of the workspace. None is unique: existing data may hold
-- duplicates (an import reports those rows as matching several records), so the migration cannot fail on it.

-- Contacts upsert by email, compared case-insensitively.
CREATE INDEX "contacts_organization_id_lower_email_idx" ON "contacts" ("organization_id", lower("email"));

-- Companies upsert by website, else email. A website may be 2,048 characters, more bytes than a B-tree entry takes
-- (about 2,700): the index holds its md5, and the lookup compares both (md5 to find, the text to be sure).
CREATE INDEX "companies_organization_id_md5_website_idx" ON "companies" ("organization_id", md5("website"));
CREATE INDEX "companies_organization_id_lower_email_idx" ON "companies" ("organization_id", lower("email"));

-- A contact row's `company` column matches a website (above), then an exact name: the `sort=name` index
-- (organization_id, name, id) of crm_search_indexes serves that one.
