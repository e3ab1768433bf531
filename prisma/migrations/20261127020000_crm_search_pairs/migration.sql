-- Written by hand (Prisma does not model functions or expression indexes).
-- The index of short search terms (those without three word characters in a row, which pg_trgm cannot serve) held
-- each row's 1- and 2-character substrings (crm_short_grams): about 90 keys a row, and half of a company insert's
-- index time (a 1,000-row import batch on the bench's two million companies: 152 ms, 74 ms without it). It now holds
-- the pairs alone, as a tsvector whose prefix search finds single characters: about 65 keys a row, and 38 % less time
-- per row written (114 → 71 ms for 1,000 rows beside 400,000).
--
-- crm_gram_pairs: the 2-character substrings of a text and of its end, U+0002 appended, so that every character of
-- the text begins one of them (the last one with U+0002). Cut by regexp_replace/string_to_array in C, from odd then
-- from even positions; a piece with a U+0001 of the text (search terms cannot hold control characters) is cut
-- short, never lost: what remains still begins with the same character.
CREATE FUNCTION crm_gram_pairs(t text) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT array_to_tsvector(array_remove(
    string_to_array(regexp_replace(t || E'\x02', '(..)', E'\\1\x01', 'g'), E'\x01')
    || string_to_array(regexp_replace(substr(t || E'\x02', 2), '(..)', E'\\1\x01', 'g'), E'\x01'), ''))
$$;

-- What a search asks crm_gram_pairs for (the term lower-cased): all of a term's pairs; for a term of one character,
-- that character as a prefix (every pair beginning with it). Each of its characters is in one of those pairs, so the
-- rows holding them are a superset of the matches (the search tests each candidate for the whole term). Each piece is
-- quoted as tsquery input wants it (a backslash or a quote escaped), so every character stays literal; an empty term
-- asks for nothing (NULL). IMMUTABLE, so the planner folds it over a known term.
CREATE FUNCTION crm_gram_pairs_query(t text) RETURNS tsquery LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT string_agg('''' || replace(replace(piece, '\', '\\'), '''', '''''') || CASE WHEN length(piece) = 1 THEN ''':*' ELSE '''' END,
                    ' & ')::tsquery
  FROM (SELECT DISTINCT substr(t, i, 2) AS piece FROM generate_series(1, greatest(length(t) - 1, 1)) AS i) AS pieces
  WHERE piece <> ''
$$;

CREATE INDEX "companies_search_text_pairs_idx" ON "companies" USING GIN (crm_gram_pairs("search_text"))
  WITH (gin_pending_list_limit = 256);
CREATE INDEX "contacts_search_text_pairs_idx" ON "contacts" USING GIN (crm_gram_pairs("search_text"))
  WITH (gin_pending_list_limit = 256);

DROP INDEX "companies_search_text_short_grams_idx";
DROP INDEX "contacts_search_text_short_grams_idx";
DROP FUNCTION crm_short_gram_query(text);
DROP FUNCTION crm_short_grams(text);
