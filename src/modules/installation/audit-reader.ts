// The audit log as installation staff read it (the API's and the console's pages): newest first, with the ids of a
// workspace's records shown only to its members.
import type { Db } from '../../db/client.js';
import { isUuid } from '../../lib/http-schemas.js';
import { afterPosition, newestFirst, type PageRequest } from '../../lib/pagination.js';
import type { AuditEntryDto } from './schemas.js';

export interface AuditFilter {
  /** A user id or API key id, or a username (exact, case-insensitive). */
  actor?: string;
  action?: string;
  since?: string;
}

type AuditRow = Awaited<ReturnType<Db['auditLog']['findMany']>>[number];

/**
 * Audit targets that are a workspace's CRM records (an automation rule, an import, a saved view): the installation-wide answers
 * name the workspace but never its records, so their id is given only for workspaces the caller is a member of.
 */
const WORKSPACE_RECORD_TARGETS = new Set(['automation', 'import', 'view']);

/** The target id of an audit row as installation staff may see it (see WORKSPACE_RECORD_TARGETS): the API and console. */
export const visibleAuditTargetId = (
  row: { targetType: string; targetId: string | null; organizationId: string | null },
  memberOf: ReadonlySet<string>,
): string | null =>
  WORKSPACE_RECORD_TARGETS.has(row.targetType) && !(row.organizationId !== null && memberOf.has(row.organizationId)) ? null : row.targetId;

/** The workspaces a user is a member of (whose record ids the audit answers may name). */
export const workspacesOf = async (db: Db, userId: string): Promise<ReadonlySet<string>> =>
  new Set((await db.membership.findMany({ where: { userId }, select: { organizationId: true } })).map((m) => m.organizationId));

/** An audit row as installation staff see it; `memberOf`: the workspaces of the reader. */
export const toAuditDto = (row: AuditRow, memberOf: ReadonlySet<string>): AuditEntryDto => ({
  id: row.id,
  created_at: row.createdAt.toISOString(),
  actor_type: row.actorType,
  actor_user_id: row.actorUserId,
  actor_username: row.actorUsername,
  actor_api_key_id: row.actorApiKeyId,
  actor_api_key_name: row.actorApiKeyName,
  actor_api_key_prefix: row.actorApiKeyPrefix,
  action: row.action,
  target_type: row.targetType,
  target_id: visibleAuditTargetId(row, memberOf),
  organization_id: row.organizationId,
  client_ip: row.clientIp,
});

/** A page of the audit log, newest first: `limit + 1` rows for the pager. */
export async function readAuditLog(db: Db, reader: { id: string }, filter: AuditFilter, page: PageRequest): Promise<AuditEntryDto[]> {
  const actor = filter.actor;
  const rows = await db.auditLog.findMany({
    where: {
      AND: [
        actor === undefined
          ? {}
          : isUuid(actor)
            ? { OR: [{ actorUserId: actor }, { actorApiKeyId: actor }] }
            : { actorUsername: { equals: actor, mode: 'insensitive' } },
        filter.action === undefined ? {} : { action: filter.action },
        filter.since === undefined ? {} : { createdAt: { gte: new Date(filter.since) } },
        afterPosition(page.after),
      ],
    },
    orderBy: newestFirst,
    take: page.limit + 1,
  });
  const memberOf = await workspacesOf(db, reader.id);
  return rows.map((row) => toAuditDto(row, memberOf));
}
