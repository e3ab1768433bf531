-- Indexes for the query language's common filters on a workspace's companies (issue 46's cells):
-- an owner's companies in the order people read names (`assigned_to = … ORDER BY name`), walked in that order so a
-- page reads about its own rows; the owner's rows of any other order come from its prefix as a bitmap. Written by
-- hand: Prisma does not model a column's collation in an index.
CREATE INDEX companies_organization_id_assigned_to_name_natural_id_idx
  ON companies (organization_id, assigned_to, name COLLATE crm_natural, id);

-- A country's companies (`country = …`), as a bitmap however rare the country; a common one is found as fast by
-- walking the order's own index, which the planner chooses from the column's statistics.
CREATE INDEX "companies_organization_id_country_idx" ON "companies"("organization_id", "country");
