// Operator actions on accounts (deactivate, reactivate, sign out everywhere), each one transaction with its audit row.
import type { Db } from '../db/client.js';
import { recordAudit, type AuditContext } from '../audit/audit-log.js';

export class UserAdminError extends Error {
  constructor(
    readonly code: 'not_found' | 'last_superuser',
    message: string,
  ) {
    super(message);
    this.name = 'UserAdminError';
  }
}

/** Ends every way the user is signed in: access tokens (token_version), refresh tokens and console sessions. */
async function endAllSessions(tx: Parameters<Parameters<Db['$transaction']>[0]>[0], userId: string, now: Date) {
  await tx.user.update({ where: { id: userId }, data: { tokenVersion: { increment: 1 } } });
  await tx.refreshToken.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: now } });
  await tx.adminSession.deleteMany({ where: { userId } });
}

/**
 * Deactivates a user and signs them out everywhere. The last active superuser is refused: the row lock on every
 * active superuser makes two concurrent deactivations see each other instead of both passing the check.
 */
export async function deactivateUser(db: Db, userId: string, audit: AuditContext): Promise<void> {
  await db.$transaction(async (tx) => {
    const supers = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM users WHERE is_superuser AND is_active FOR UPDATE`;
    const user = await tx.user.findUnique({ where: { id: userId }, select: { id: true, isSuperuser: true, isActive: true } });
    if (!user) throw new UserAdminError('not_found', 'No such user.');
    if (!user.isActive) return;
    if (user.isSuperuser && supers.length <= 1) {
      throw new UserAdminError(
        'last_superuser',
        'This is the last active superuser: deactivating it would leave nobody able to administer the installation.',
      );
    }
    await tx.user.update({ where: { id: userId }, data: { isActive: false } });
    await endAllSessions(tx, userId, new Date());
    await recordAudit(tx, { ...audit, action: 'user.deactivated', target: { type: 'user', id: userId } });
  });
}

/** Lets a deactivated user sign in again; tokens issued before stay dead (token_version was bumped). */
export async function reactivateUser(db: Db, userId: string, audit: AuditContext): Promise<void> {
  await db.$transaction(async (tx) => {
    const updated = await tx.user.updateMany({ where: { id: userId, isActive: false }, data: { isActive: true } });
    if (updated.count === 0) {
      if (!(await tx.user.findUnique({ where: { id: userId }, select: { id: true } })))
        throw new UserAdminError('not_found', 'No such user.');
      return;
    }
    await recordAudit(tx, { ...audit, action: 'user.reactivated', target: { type: 'user', id: userId } });
  });
}

/** Revokes every refresh token, access token and console session of the user. */
export async function signOutEverywhere(db: Db, userId: string, audit: AuditContext): Promise<void> {
  await db.$transaction(async (tx) => {
    if (!(await tx.user.findUnique({ where: { id: userId }, select: { id: true } })))
      throw new UserAdminError('not_found', 'No such user.');
    await endAllSessions(tx, userId, new Date());
    await recordAudit(tx, { ...audit, action: 'user.signed_out_everywhere', target: { type: 'user', id: userId } });
  });
}

/** Installation staff's actions on user accounts. */
export function createUserAdminService(deps: { db: Db }) {
  const { db } = deps;
  return {
    deactivate: (userId: string, audit: AuditContext) => deactivateUser(db, userId, audit),
    reactivate: (userId: string, audit: AuditContext) => reactivateUser(db, userId, audit),
    signOutEverywhere: (userId: string, audit: AuditContext) => signOutEverywhere(db, userId, audit),
  };
}
