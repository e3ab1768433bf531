-- A deleted custom field definition queues its index job, so the job drops the field's own indexes (which it then
-- finds without a definition). A definition is deleted only by cascade, with its workspace or the user whose
-- personal workspace it was, and no service sees those rows go: a trigger is the one place that sees every path.
-- Only a definition with an index (the value index or the recency index) queues a job; the job's key and attempts are those of
-- JOBS.customFieldIndex in src/jobs/queue.ts.
CREATE FUNCTION "crm_custom_field_definition_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('custom_field_' || replace(OLD.id::text, '-', '')) IS NOT NULL
     OR to_regclass('custom_field_' || replace(OLD.id::text, '-', '') || '_recent') IS NOT NULL THEN
    PERFORM crm_add_job('custom_field_index', json_build_object('id', OLD.id), 'custom_field_index:' || OLD.id, 6);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "custom_field_definitions_deleted" AFTER DELETE ON "custom_field_definitions"
FOR EACH ROW EXECUTE FUNCTION "crm_custom_field_definition_deleted"();
