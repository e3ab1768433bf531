-- One row in 64 of each record table in its workspace's creation order: a range in the default order walks a field's
-- recency index down to the `created_at` of about the 8,000th newest row (src/db/query-page.ts, recentPageStatement),
-- which this index finds in 125 entries instead of 8,000. The sample is the last byte of the id, random in every id
-- crm_new_id() and gen_random_uuid() give; a bound read from it is any bound, so every page stays exact. The statistics
-- tell the planner that the sample is one row in 64 (without them it guesses a third, and may walk a field's recency
-- index instead, filtering 8,000 entries).
CREATE INDEX "companies_recency_sample_idx" ON "companies"("organization_id", "created_at") WHERE get_byte(uuid_send("id"), 15) < 4;
CREATE INDEX "contacts_recency_sample_idx" ON "contacts"("organization_id", "created_at") WHERE get_byte(uuid_send("id"), 15) < 4;
CREATE INDEX "deals_recency_sample_idx" ON "deals"("organization_id", "created_at") WHERE get_byte(uuid_send("id"), 15) < 4;
CREATE INDEX "tasks_recency_sample_idx" ON "tasks"("organization_id", "created_at") WHERE get_byte(uuid_send("id"), 15) < 4;
CREATE STATISTICS "companies_recency_sample_stat" ON (get_byte(uuid_send("id"), 15)) FROM "companies";
CREATE STATISTICS "contacts_recency_sample_stat" ON (get_byte(uuid_send("id"), 15)) FROM "contacts";
CREATE STATISTICS "deals_recency_sample_stat" ON (get_byte(uuid_send("id"), 15)) FROM "deals";
CREATE STATISTICS "tasks_recency_sample_stat" ON (get_byte(uuid_send("id"), 15)) FROM "tasks";
