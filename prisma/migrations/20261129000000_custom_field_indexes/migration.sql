-- Written by hand. The typed value of a custom field as one function of the record's map and the field's key, for
-- the query language and for the index of each number, decimal, date and datetime field
-- (src/modules/custom-fields/index-job.ts): the same expression in both, so that the planner matches them.
--
-- IMMUTABLE, because an index can hold nothing else (text::date is only STABLE: it reads DateStyle for ambiguous
-- input). They read the one form the API stores (a JSON number; `YYYY-MM-DD`; `YYYY-MM-DDTHH:MM:SS.sssZ`, UTC as
-- toISOString writes it) and answer NULL for anything else, never an error.
--
-- LEAKPROOF, because under a row-level security policy PostgreSQL uses a condition as an index condition only when
-- every function in it is leakproof (docs/tenant-isolation.md, "Search under the policies"). Raising no error on any
-- value, they reveal nothing of rows the policy hides. plpgsql, so that PostgreSQL never inlines them into the
-- non-leakproof operators they are made of. Declaring a function LEAKPROOF needs a superuser, which the embedded
-- database's owner is; an owner that is not one gets them without it (ranges then read without their index under
-- the policy) and a warning with the statements a superuser runs.

CREATE FUNCTION crm_custom_number(fields jsonb, field text) RETURNS numeric
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE value jsonb := fields -> field;
BEGIN
  IF jsonb_typeof(value) = 'number' THEN RETURN value::numeric; END IF;
  IF jsonb_typeof(value) = 'string' AND value #>> '{}' ~ '^-?[0-9]{1,15}(\.[0-9]{1,6})?$' THEN RETURN (value #>> '{}')::numeric; END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION crm_custom_date(fields jsonb, field text) RETURNS date
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE value text := fields ->> field;
BEGIN
  IF value !~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$' OR left(value, 4) = '0000' THEN RETURN NULL; END IF;
  -- The first of the month plus the days: no day number can make it fail (the API stores real dates only).
  RETURN make_date(left(value, 4)::int, substr(value, 6, 2)::int, 1) + (substr(value, 9, 2)::int - 1);
END $$;

CREATE FUNCTION crm_custom_timestamptz(fields jsonb, field text) RETURNS timestamptz
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE value text := fields ->> field;
BEGIN
  IF value !~ '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z$'
     OR left(value, 4) = '0000' THEN
    RETURN NULL;
  END IF;
  RETURN (make_timestamp(left(value, 4)::int, substr(value, 6, 2)::int, 1, 0, 0, 0)
          + make_interval(days => substr(value, 9, 2)::int - 1, hours => substr(value, 12, 2)::int,
                          mins => substr(value, 15, 2)::int, secs => substr(value, 18, 6)::float8)) AT TIME ZONE 'UTC';
END $$;

-- numeric's comparisons raise no error either, but are not marked (date's and timestamptz's are); nor is jsonb's
-- containment, the operator of the custom fields' GIN index (`custom.<key> eq`).
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION crm_custom_number(jsonb, text) LEAKPROOF;
    ALTER FUNCTION crm_custom_date(jsonb, text) LEAKPROOF;
    ALTER FUNCTION crm_custom_timestamptz(jsonb, text) LEAKPROOF;
    ALTER FUNCTION pg_catalog.numeric_lt(numeric, numeric) LEAKPROOF;
    ALTER FUNCTION pg_catalog.numeric_le(numeric, numeric) LEAKPROOF;
    ALTER FUNCTION pg_catalog.numeric_gt(numeric, numeric) LEAKPROOF;
    ALTER FUNCTION pg_catalog.numeric_ge(numeric, numeric) LEAKPROOF;
    ALTER FUNCTION pg_catalog.numeric_eq(numeric, numeric) LEAKPROOF;
    ALTER FUNCTION pg_catalog.jsonb_contains(jsonb, jsonb) LEAKPROOF;
  ELSE
    RAISE WARNING 'custom field ranges and equality under row-level security need a superuser to run: ALTER FUNCTION crm_custom_number(jsonb, text) LEAKPROOF; ALTER FUNCTION crm_custom_date(jsonb, text) LEAKPROOF; ALTER FUNCTION crm_custom_timestamptz(jsonb, text) LEAKPROOF; ALTER FUNCTION pg_catalog.numeric_lt(numeric, numeric) LEAKPROOF; (and numeric_le, numeric_gt, numeric_ge, numeric_eq) ALTER FUNCTION pg_catalog.jsonb_contains(jsonb, jsonb) LEAKPROOF;';
  END IF;
END
$$;
