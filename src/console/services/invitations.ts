// The console's workspace invitations: every workspace's, by state, and revoking one through the API's own service.
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { bindOrganization } from '../../db/tenant.js';
import type { AuditContext } from '../../audit/audit-log.js';
import type { InvitationManager, InvitationService } from '../../modules/invitations/service.js';
import { linkStatus, usableAt } from '../../modules/invitations/invitation-link.js';
import { offsetOf, offsetPage } from './offset-page.js';

export const INVITATION_STATUSES = ['pending', 'accepted', 'expired', 'revoked'] as const;

export function createConsoleInvitationService(deps: { db: Db; pool: pg.Pool; invitations: InvitationService }) {
  const { db, pool, invitations } = deps;
  return {
    async list(status: string, page: number) {
      const now = new Date();
      const where =
        status === 'pending'
          ? usableAt(now)
          : status === 'accepted'
            ? { acceptedAt: { not: null } }
            : status === 'revoked'
              ? { revokedAt: { not: null } }
              : status === 'expired'
                ? { acceptedAt: null, revokedAt: null, expiresAt: { lte: now } }
                : {};
      const found = await db.invitation.findMany({
        where,
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        ...offsetOf(page),
        select: {
          id: true,
          email: true,
          role: true,
          expiresAt: true,
          acceptedAt: true,
          revokedAt: true,
          organization: { select: { name: true } },
          invitedBy: { select: { username: true } },
        },
      });
      const { rows, hasNext } = offsetPage(found);
      return { rows: rows.map((r) => ({ ...r, status: linkStatus(r, now) })), hasNext };
    },

    /**
     * The API's own revocation, acting with an owner's reach over the workspace's ordinary invitations; false when
     * there is no such invitation.
     */
    async revoke(invitationId: string, user: InvitationManager['user'], audit: AuditContext): Promise<boolean> {
      const invitation = await db.invitation.findUnique({ where: { id: invitationId }, select: { id: true, organization: true } });
      if (!invitation) return false;
      const tenant = bindOrganization(db, pool, invitation.organization, 'owner');
      await invitations.revoke(tenant, user, invitation.id, audit);
      return true;
    },
  };
}

export type ConsoleInvitationService = ReturnType<typeof createConsoleInvitationService>;
