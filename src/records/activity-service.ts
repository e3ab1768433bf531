// The activity timeline of a company or contact: its entries newest first, in keyset pages. The entries are written
// by the record writes themselves (db/tenant-writes.ts), in the same statement as the change.
import type { CrmActivity } from '../generated/prisma/client.js';
import type { TenantDb } from '../db/tenant-scope.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../lib/pagination.js';
import type { ActivityDto } from './activity-schemas.js';

export const toActivityDto = (entry: CrmActivity): ActivityDto => ({
  id: entry.id,
  kind: entry.kind as ActivityDto['kind'],
  fields: entry.fields,
  subject_id: entry.subjectId,
  actor_type: entry.actorType as ActivityDto['actor_type'],
  actor_id: entry.actorId,
  actor_name: entry.actorName,
  created_at: entry.createdAt.toISOString(),
});

/** One page of the timeline of the record `{companyId}` or `{contactId}` (the caller checked the record exists). */
export async function activityPage(
  db: TenantDb,
  record: { companyId: string } | { contactId: string },
  page: PageRequest,
): Promise<Page<ActivityDto>> {
  const rows = await db.crmActivity.findMany({
    where: { ...record, ...afterPosition(page.after) },
    orderBy: newestFirst,
    take: page.limit + 1,
  });
  return pageOfDtos(rows, page.limit, toActivityDto);
}
