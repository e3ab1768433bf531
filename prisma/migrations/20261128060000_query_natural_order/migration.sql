-- The order people read text in, for the queries' text sorts and the lists' `sort=name`: ICU's root locale at
-- strength 1 (`alpha`, `Beta`, `Émile`, `zeta`), case and accents ignored. Nondeterministic, so equal-looking names
-- tie and the id, every order's last key, decides.
CREATE COLLATION IF NOT EXISTS crm_natural (provider = icu, locale = 'und-u-ks-level1', deterministic = false);

-- The lists' name orders under that collation, each an index scan from the workspace's first entry (keyset pages seek
-- them with a row comparison). Written by hand: Prisma does not model a column's collation in an index.
CREATE INDEX companies_organization_id_name_natural_id_idx ON companies (organization_id, name COLLATE crm_natural, id);
CREATE INDEX contacts_organization_id_names_natural_id_idx
  ON contacts (organization_id, last_name COLLATE crm_natural, first_name COLLATE crm_natural, id);
