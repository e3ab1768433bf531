// Console sessions as PostgreSQL rows (only a hash of the cookie's id is stored) and the CSRF token bound to each.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/client.js';

export const SESSION_COOKIE = 'crm_admin_session';

const hashId = (id: string) => createHash('sha256').update(id).digest('hex');

export interface ConsoleUser {
  id: string;
  username: string;
  isSuperuser: boolean;
}

export interface ConsoleSession {
  idHash: string;
  user: ConsoleUser;
}

/** Opens a session and returns the cookie value: 32 random bytes, a new one at every sign-in. */
export async function openSession(db: Db, userId: string, maxSeconds: number): Promise<string> {
  const id = randomBytes(32).toString('base64url');
  await db.adminSession.create({ data: { idHash: hashId(id), userId, expiresAt: new Date(Date.now() + maxSeconds * 1000) } });
  return id;
}

/**
 * The live session for a cookie value, or null. A session is live while within both timeouts and while its user is
 * still an active staff member; a dead one is deleted on sight. Each use moves the idle deadline.
 */
export async function findSession(db: Db, id: string, idleSeconds: number): Promise<ConsoleSession | null> {
  const idHash = hashId(id);
  const row = await db.adminSession.findUnique({
    where: { idHash },
    select: {
      expiresAt: true,
      lastSeenAt: true,
      user: { select: { id: true, username: true, isSuperuser: true, isStaff: true, isActive: true } },
    },
  });
  if (!row) return null;
  const now = Date.now();
  const live =
    row.expiresAt.getTime() > now && row.lastSeenAt.getTime() + idleSeconds * 1000 > now && row.user.isStaff && row.user.isActive;
  if (!live) {
    await db.adminSession.deleteMany({ where: { idHash } });
    return null;
  }
  await db.adminSession.update({ where: { idHash }, data: { lastSeenAt: new Date(now) } });
  return { idHash, user: { id: row.user.id, username: row.user.username, isSuperuser: row.user.isSuperuser } };
}

export async function closeSession(db: Db, idHash: string): Promise<void> {
  await db.adminSession.deleteMany({ where: { idHash } });
}

/** The session's CSRF token: an HMAC of its stored hash, so it needs no storage and dies with the session. */
export const csrfToken = (secret: string, idHash: string) =>
  createHmac('sha256', secret).update(`admin-csrf:${idHash}`).digest('base64url');

export function csrfTokenValid(secret: string, idHash: string, token: unknown): boolean {
  if (typeof token !== 'string') return false;
  const expected = Buffer.from(csrfToken(secret, idHash));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
