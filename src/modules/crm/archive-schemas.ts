// The `archived` list filter the archivable CRM records share (deals; companies and contacts follow the same shape).
import { StringEnum } from '../../lib/http-schemas.js';

export const ArchivedFilterSchema = StringEnum(['active', 'archived', 'all'], {
  $id: 'ArchivedFilter',
  description: 'Which records a list holds: `active` (not archived, the default), `archived` (only archived ones) or `all`.',
});
export type ArchivedFilter = 'active' | 'archived' | 'all';

/** The Prisma condition on `archivedAt` of an `archived` filter (default `active`). */
export const archivedCondition = (filter: ArchivedFilter | undefined) =>
  filter === 'all' ? {} : filter === 'archived' ? { archivedAt: { not: null } } : { archivedAt: null };
