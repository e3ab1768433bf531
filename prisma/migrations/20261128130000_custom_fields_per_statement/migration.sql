-- Written by hand. A record's custom fields as the API shows them, computed from two values read once per statement
-- (each an uncorrelated subquery of the statement's workspace, $1: an InitPlan) instead of one look-up of the
-- definitions per row: every active key of the workspace's record type, null where the row holds no value
-- (`template || stored`), without the values of archived fields (`- archived`), which the row keeps for a restore.

-- Every active field of `record_object` in workspace `org`, each with a JSON null.
CREATE FUNCTION crm_custom_field_template(org uuid, record_object text) RETURNS jsonb
  LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(jsonb_object_agg(d.key, NULL::jsonb), '{}'::jsonb)
  FROM custom_field_definitions d
  WHERE d.organization_id = org AND d.object = record_object AND d.archived_at IS NULL
$$;

-- The keys of the archived fields of `record_object` in workspace `org`.
CREATE FUNCTION crm_custom_field_archived(org uuid, record_object text) RETURNS text[]
  LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT coalesce(array_agg(d.key), '{}'::text[])
  FROM custom_field_definitions d
  WHERE d.organization_id = org AND d.object = record_object AND d.archived_at IS NOT NULL
$$;

-- The per-row function these replace.
DROP FUNCTION crm_custom_fields(uuid, text, jsonb);
