-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateIndex
CREATE INDEX "companies_organization_id_name_id_idx" ON "companies"("organization_id", "name", "id");

-- CreateIndex
CREATE INDEX "companies_organization_id_updated_at_id_idx" ON "companies"("organization_id", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "companies_search_text_trgm_idx" ON "companies" USING GIN ("search_text" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "contacts_organization_id_last_name_first_name_id_idx" ON "contacts"("organization_id", "last_name", "first_name", "id");

-- CreateIndex
CREATE INDEX "contacts_organization_id_updated_at_id_idx" ON "contacts"("organization_id", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "contacts_search_text_trgm_idx" ON "contacts" USING GIN ("search_text" gin_trgm_ops);

-- Written by hand (Prisma does not model functions, expression indexes or storage parameters).
-- The 1- and 2-character substrings of a text, for the search of terms that hold no three word characters in a row
-- (pg_trgm cannot serve them): its characters, then the pairs starting at odd positions, then at even ones, each cut
-- by regexp_replace/string_to_array in C (a loop in PL/pgSQL cost half as much again per row written). A pair that
-- contains U+0001 is lost to the cutting; search terms cannot contain control characters, so no search needs it.
CREATE FUNCTION crm_short_grams(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT string_to_array(t, NULL)
    || string_to_array(regexp_replace(t, '(..)', E'\\1\x01', 'g'), E'\x01')
    || string_to_array(regexp_replace(substr(t, 2), '(..)', E'\\1\x01', 'g'), E'\x01')
$$;

CREATE INDEX "companies_search_text_short_grams_idx" ON "companies" USING GIN (crm_short_grams("search_text"));
CREATE INDEX "contacts_search_text_short_grams_idx" ON "contacts" USING GIN (crm_short_grams("search_text"));

-- GIN indexes take writes into a pending list that every search reads through until VACUUM (or the list's limit)
-- merges it; 256 kB (the default is 4 MB) keeps that read short after a burst of creates.
ALTER INDEX "companies_search_text_trgm_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "contacts_search_text_trgm_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "companies_search_text_short_grams_idx" SET (gin_pending_list_limit = 256);
ALTER INDEX "contacts_search_text_short_grams_idx" SET (gin_pending_list_limit = 256);
