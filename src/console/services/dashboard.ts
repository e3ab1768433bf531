// The dashboard's figures: installation-wide counts and the database's migration state.
import type { Db } from '../../db/client.js';

export function createConsoleDashboardService(deps: { db: Db }) {
  const { db } = deps;
  return {
    async counts() {
      const now = new Date();
      const [users, activeWorkspaces, pendingHandoffs, pendingInvitations, queuedEmails, failedEmails, failedRuns] = await Promise.all([
        db.user.count(),
        db.organization.count({ where: { status: 'active' } }),
        db.organization.count({ where: { status: 'pending_owner' } }),
        db.invitation.count({ where: { acceptedAt: null, revokedAt: null, expiresAt: { gt: now } } }),
        db.emailOutbox.count({ where: { status: 'pending' } }),
        db.emailOutbox.count({ where: { status: 'failed' } }),
        db.automationRun.count({ where: { status: 'failed', createdAt: { gt: new Date(now.getTime() - 86_400_000) } } }),
      ]);
      return { users, activeWorkspaces, pendingHandoffs, pendingInvitations, queuedEmails, failedEmails, failedRuns };
    },

    /** Whether the database answers and how many migrations it has applied (the last one's name). */
    async databaseStatus(): Promise<{ ok: boolean; migrations: number; latest: string | null }> {
      try {
        const rows = await db.$queryRaw<{ migration_name: string }[]>`
          SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY finished_at DESC, migration_name DESC`;
        return { ok: true, migrations: rows.length, latest: rows[0]?.migration_name ?? null };
      } catch {
        return { ok: false, migrations: 0, latest: null };
      }
    },
  };
}

export type ConsoleDashboardService = ReturnType<typeof createConsoleDashboardService>;
