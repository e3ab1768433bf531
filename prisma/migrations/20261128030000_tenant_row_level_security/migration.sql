-- Written by hand (Prisma does not model row-level security).
-- Every table with an organization_id admits, to any role that RLS binds (the serving role; not a superuser or a
-- BYPASSRLS owner), only the rows of the workspace set for the current transaction with
-- set_config('app.organization_id', <uuid>, true). Unset (or empty), the condition is NULL: no row is read, and no
-- row is written (WITH CHECK, the same condition, refuses inserts and updates into any workspace). FORCE makes it bind
-- the tables' owner too unless that role is a superuser or has BYPASSRLS (docs/tenant-isolation.md).
--
-- The condition is an equality on organization_id, the leading column of each table's indexes, with a value fixed for
-- the statement (current_setting is stable): the planner uses it as an index condition beside the application's own.
--
-- memberships and invitations, which a person reaches across workspaces (sign-in, accepting an invitation), get no
-- wider policy: those flows take the installation path, and no flow of the serving role needs more.
-- audit_log's installation entries (organization_id NULL) are read and written on the installation path only.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY[
    'api_keys', 'audit_log', 'automation_email_sends', 'automation_runs', 'automations', 'companies', 'contacts',
    'crm_activities', 'crm_deletions', 'deal_pipeline_totals', 'deals', 'email_accounts', 'import_chunks',
    'import_errors', 'imports', 'invitations', 'memberships', 'tasks'
  ] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY workspace_isolation ON %I USING (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid) '
      'WITH CHECK (organization_id = nullif(current_setting(''app.organization_id'', true), '''')::uuid)', t);
  END LOOP;
END
$$;

-- A workspace's first customer code creates its sequence: the serving role may not create objects, so the function
-- runs as its owner (it only creates and advances that workspace's counter).
ALTER FUNCTION "next_customer_number"(uuid) SECURITY DEFINER SET search_path = public, pg_temp;
-- Deleting a workspace drops that counter (the organizations' delete trigger): only its owner may drop it.
ALTER FUNCTION "drop_customer_numbers"() SECURITY DEFINER SET search_path = public, pg_temp;

-- The job queue's tables admit only their owner (graphile-worker enables row-level security on them, with no
-- policy). A CRM write of the serving role queues its automation runs' jobs in the same statement: through this
-- function, which runs as its owner and returns the job's id. plpgsql: the job queue's schema is installed after the
-- migrations, and the body is resolved only when called.
CREATE FUNCTION "crm_add_job"(identifier text, payload json, job_key text, max_attempts integer, job_key_mode text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (graphile_worker.add_job($1, $2, job_key := $3, max_attempts := $4, job_key_mode := $5)).id;
END $$;

-- Under a policy, PostgreSQL uses a condition as an index condition only when its operator is leakproof: the search's
-- `LIKE` (trigram GIN index) and `@@` over crm_gram_pairs (the pairs index) are not marked so, and every search would read the workspace's
-- rows one by one. Both raise errors only from their pattern or query, never from a row's value, so they leak nothing
-- of rows a policy hides; marking them needs a superuser, which the embedded database's owner is. An owner that is not
-- one is told (and search then runs without its indexes until a superuser runs these two statements).
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION pg_catalog.textlike(text, text) LEAKPROOF;
    ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    ALTER FUNCTION crm_gram_pairs(text) LEAKPROOF;
  ELSE
    RAISE WARNING 'search under row-level security needs a superuser to run: ALTER FUNCTION pg_catalog.textlike(text, text) LEAKPROOF; ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF; ALTER FUNCTION crm_gram_pairs(text) LEAKPROOF;';
  END IF;
END
$$;
