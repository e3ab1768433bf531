-- Written by hand (a function Prisma does not model).
-- The search asks the trigram index for a term's rare part (search-statistics.ts), told by search_text's statistics
-- which trigrams are common. pg_stats shows a table's statistics only to a role that row-level security does not bind,
-- so the serving role sees none: this function, run with its owner's rights, answers which of the given trigrams are
-- common in the statistics sample (in at least `share` of its values), never the sampled values themselves, which are
-- other workspaces' rows. NULL when there is no sample to tell (no ANALYZE yet, or an owner that row-level security
-- binds too, which pg_stats hides the same rows from: the search then asks the index for the whole term).
CREATE FUNCTION crm_common_grams(relation text, grams text[], share double precision) RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH sample AS (
    SELECT unnest(coalesce(s.most_common_vals::text::text[], '{}') || coalesce(s.histogram_bounds::text::text[], '{}')) AS value
    FROM pg_stats s
    WHERE s.schemaname = 'public' AND s.tablename = relation AND s.attname = 'search_text'
  ),
  size AS (SELECT count(*) AS n FROM sample)
  SELECT CASE WHEN (SELECT n FROM size) = 0 THEN NULL ELSE coalesce(array_agg(gram), '{}') END
  FROM unnest(grams) AS gram
  WHERE (SELECT count(*) FROM sample WHERE strpos(sample.value, gram) > 0) >= share * (SELECT n FROM size)
$$;
