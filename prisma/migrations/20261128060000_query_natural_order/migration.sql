-- The order people read text in, for query sorts: ICU's root locale at strength 1 (letters only: `alpha`, `Beta`,
-- `Émile`, `zeta`), case and accents ignored. Nondeterministic, so equal-looking names tie and the id decides.
CREATE COLLATION IF NOT EXISTS crm_natural (provider = icu, locale = 'und-u-ks-level1', deterministic = false);
