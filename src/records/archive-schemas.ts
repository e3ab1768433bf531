// The `archived` list filter of the records read through Prisma (deals, tasks); its schema, `ArchivedFilter`, is the one
// companies and contacts use (crm/activity-schemas.ts).
import type { ArchivedFilter } from '../db/page-query.js';

/** The Prisma condition on `archivedAt` of an `archived` filter (default `active`). */
export const archivedCondition = (filter: ArchivedFilter | undefined) =>
  filter === 'all' ? {} : filter === 'archived' ? { archivedAt: { not: null } } : { archivedAt: null };
