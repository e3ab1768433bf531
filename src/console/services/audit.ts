// The console's audit log page: rows with the current names of the users and workspaces they refer to.
import type { Db } from '../../db/client.js';
import { visibleAuditTargetId, workspacesOf } from '../../modules/installation/audit-reader.js';
import { offsetOf, offsetPage } from './offset-page.js';

export function createConsoleAuditService(deps: { db: Db }) {
  const { db } = deps;
  return {
    /**
     * A page of the audit log, each row with the names of the users and workspaces it refers to as they are now (null
     * when deleted since: the ids stay in the row, and the actor's username as it was when the row was written). A
     * workspace's record ids (rules, imports) are shown only to its members, as the API's installation audit does.
     */
    async list(readerId: string, filter: { actor: string; action: string; page: number }) {
      const rows = await db.auditLog.findMany({
        where: {
          ...(filter.actor
            ? {
                OR: [
                  { actorUsername: { contains: filter.actor, mode: 'insensitive' as const } },
                  { actorApiKeyName: { contains: filter.actor, mode: 'insensitive' as const } },
                ],
              }
            : {}),
          ...(filter.action ? { action: filter.action } : {}),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        ...offsetOf(filter.page),
      });
      const { rows: shown, hasNext } = offsetPage(rows);
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
      const userIds = new Set<string>();
      const workspaceIds = new Set<string>();
      for (const row of shown) {
        if (row.actorUserId) userIds.add(row.actorUserId);
        if (row.organizationId) workspaceIds.add(row.organizationId);
        if (row.targetId && uuid.test(row.targetId) && row.targetType === 'user') userIds.add(row.targetId);
        if (row.targetId && uuid.test(row.targetId) && row.targetType === 'organization') workspaceIds.add(row.targetId);
      }
      const [users, workspaces, memberOf] = await Promise.all([
        db.user.findMany({ where: { id: { in: [...userIds] } }, select: { id: true, username: true } }),
        db.organization.findMany({ where: { id: { in: [...workspaceIds] } }, select: { id: true, name: true } }),
        workspacesOf(db, readerId),
      ]);
      const usernames = new Map(users.map((u) => [u.id, u.username]));
      const names = new Map(workspaces.map((w) => [w.id, w.name]));
      const targetName = (row: (typeof shown)[number]) =>
        !row.targetId
          ? undefined
          : row.targetType === 'user'
            ? (usernames.get(row.targetId) ?? null)
            : row.targetType === 'organization'
              ? (names.get(row.targetId) ?? null)
              : undefined;
      return {
        rows: shown.map((row) => ({
          ...row,
          targetId: visibleAuditTargetId(row, memberOf),
          actorName: row.actorUserId ? (usernames.get(row.actorUserId) ?? null) : null,
          targetName: targetName(row),
          workspaceName: row.organizationId ? (names.get(row.organizationId) ?? null) : null,
        })),
        hasNext,
      };
    },
  };
}

export type ConsoleAuditService = ReturnType<typeof createConsoleAuditService>;
