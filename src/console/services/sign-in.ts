// Console sign-in, sign-out and the session behind a request's cookie.
import type { Db } from '../../db/client.js';
import { burnPasswordCheck, verifyPassword } from '../../lib/passwords.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { closeSession, findSession, openSession, type ConsoleSession } from '../sessions.js';

export function createConsoleSignInService(deps: { db: Db; idleSeconds: number; maxSeconds: number }) {
  const { db, idleSeconds, maxSeconds } = deps;
  return {
    /** The live session of a cookie value, or null (see sessions.ts). */
    session: (cookieValue: string): Promise<ConsoleSession | null> => findSession(db, cookieValue, idleSeconds),

    /**
     * Checks staff credentials and opens a session (its cookie value), or returns null. Every refusal costs the same
     * argon2 work and leaves an `admin.sign_in_failed` row naming the account only when it exists (never the input).
     * `replacing`: the session the browser had, which ends (no fixation).
     */
    async signIn(credentials: { username: string; password: string }, ip: string, replacing?: string): Promise<string | null> {
      const user = await db.user.findUnique({
        where: { username: credentials.username },
        select: { id: true, username: true, passwordHash: true, isStaff: true, isActive: true },
      });
      if (!user) await burnPasswordCheck(credentials.password);
      const ok = user !== null && (await verifyPassword(user.passwordHash, credentials.password)) && user.isStaff && user.isActive;
      if (!ok) {
        await recordAudit(db, {
          actor: { type: 'system' },
          ip,
          action: 'admin.sign_in_failed',
          target: { type: 'user', id: user?.id ?? null },
        });
        return null;
      }
      const id = await db.$transaction(async (tx) => {
        const opened = await openSession(tx as unknown as Db, user.id, maxSeconds);
        // A console sign-in is a sign-in: the Users page's "Last sign-in" counts it as it counts the API's.
        await tx.user.update({ where: { id: user.id }, data: { lastLogin: new Date() } });
        await recordAudit(tx, {
          actor: { type: 'user', userId: user.id, username: user.username },
          ip,
          action: 'admin.signed_in',
          target: { type: 'user', id: user.id },
        });
        return opened;
      });
      if (replacing !== undefined) await closeSession(db, replacing);
      return id;
    },

    async signOut(idHash: string, audit: AuditContext): Promise<void> {
      await db.$transaction(async (tx) => {
        await closeSession(tx as unknown as Db, idHash);
        const userId = audit.actor.type === 'user' ? audit.actor.userId : null;
        await recordAudit(tx, { ...audit, action: 'admin.signed_out', target: { type: 'user', id: userId } });
      });
    },
  };
}
