-- A custom field's indexes are built only for a workspace large enough to need them (every partial index costs each
-- statement on its table, whichever workspace it serves: docs/records.md, "Scale"). The job marks the definition once
-- they exist, and queries read them only then. Fields indexed before this migration are marked here; where the
-- migrating role is bound by the definitions' policy this marks none, and the job's sweep marks them instead.
ALTER TABLE "custom_field_definitions" ADD COLUMN "indexed_at" TIMESTAMPTZ(3);

UPDATE "custom_field_definitions" AS d SET "indexed_at" = now()
WHERE d."archived_at" IS NULL
  AND EXISTS (SELECT FROM pg_index i WHERE i.indisvalid AND i.indexrelid = to_regclass('custom_field_' || replace(d."id"::text, '-', '')))
  AND EXISTS (SELECT FROM pg_index i WHERE i.indisvalid AND i.indexrelid = to_regclass('custom_field_' || replace(d."id"::text, '-', '') || '_recent'));
