// The console's users: the list, one user's details, the password reset an operator sends, and the operator as actor.
import type { Db } from '../../db/client.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { requestPasswordReset } from '../../modules/account/password-service.js';
import { USER_COLUMNS } from '../../users/user-columns.js';
import { offsetOf, offsetPage } from './offset-page.js';

export interface UserFilter {
  search: string;
  staff: '' | 'yes' | 'no';
  active: '' | 'yes' | 'no';
  page: number;
}

export function createConsoleUserService(deps: { db: Db }) {
  const { db } = deps;
  return {
    async list(filter: UserFilter) {
      const where = {
        ...(filter.search
          ? {
              OR: [
                { username: { contains: filter.search, mode: 'insensitive' as const } },
                { email: { contains: filter.search, mode: 'insensitive' as const } },
              ],
            }
          : {}),
        ...(filter.staff ? { isStaff: filter.staff === 'yes' } : {}),
        ...(filter.active ? { isActive: filter.active === 'yes' } : {}),
      };
      const rows = await db.user.findMany({
        where,
        orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }],
        ...offsetOf(filter.page),
        select: USER_COLUMNS,
      });
      return offsetPage(rows);
    },

    async detail(userId: string) {
      const user = await db.user.findUnique({
        where: { id: userId },
        select: {
          ...USER_COLUMNS,
          twoFactorEnabledAt: true,
          memberships: {
            select: { role: true, organization: { select: { name: true, slug: true, requireTwoFactor: true } } },
            orderBy: { createdAt: 'asc' },
          },
        },
      });
      if (!user) return null;
      const liveSessions = await db.adminSession.count({ where: { userId, expiresAt: { gt: new Date() } } });
      return { ...user, liveSessions };
    },

    /** Queues the ordinary reset email (the same worker path as the API's request) with its audit row; false: no such user. */
    async sendPasswordReset(userId: string, audit: AuditContext): Promise<boolean> {
      return db.$transaction(async (tx) => {
        const user = await tx.user.findUnique({ where: { id: userId }, select: { email: true } });
        if (!user) return false;
        await requestPasswordReset(tx as unknown as Db, user.email);
        await recordAudit(tx, { ...audit, action: 'user.password_reset_sent', target: { type: 'user', id: userId } });
        return true;
      });
    },

    /** The console user as the provisioning services' actor: the API's rules (superuser or the creator) still apply. */
    actor: (userId: string) =>
      db.user.findUniqueOrThrow({
        where: { id: userId },
        select: { id: true, username: true, email: true, isSuperuser: true, tokenVersion: true },
      }),
  };
}

export type ConsoleUserService = ReturnType<typeof createConsoleUserService>;
