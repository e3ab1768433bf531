-- A contact's names are ordered only in the collation crm_natural (lists' `sort=name`, query sorts: the index
-- contacts_organization_id_names_natural_id_idx of migration query_natural_order); nothing reads them in code-point
-- order any more, so that index only cost every contact write.
DROP INDEX "contacts_organization_id_last_name_first_name_id_idx";
