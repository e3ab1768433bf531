// A user's sessions (refresh-token families): the list with where and when each was used, and ending them.
import type pg from 'pg';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { listSessions } from '../../db/token-store.js';
import { notFound } from '../../lib/problem.js';
import { isUuid } from '../../lib/http-schemas.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';

type Tx = Prisma.TransactionClient;

const sessionNotFound = () => notFound('No such live session of yours.', 'session_not_found');

export interface SessionDto {
  id: string;
  created_at: string;
  last_used_at: string;
  user_agent: string | null;
  client_ip: string | null;
  current: boolean;
}

/**
 * Revokes every refresh token of the user's sessions that `families` selects, after locking the user row as rotation
 * does: a refresh in flight either committed its successor first (revoked here) or finds its token revoked. Access
 * tokens of those sessions fail from the next request on (each request checks its session). Returns the ended ids.
 */
async function revokeFamilies(tx: Tx, userId: string, families: Prisma.StringFilter<'RefreshToken'> | string): Promise<string[]> {
  await tx.$queryRaw`SELECT 1 FROM users WHERE id = ${userId}::uuid FOR NO KEY UPDATE`;
  const now = new Date();
  const live = await tx.refreshToken.findMany({
    where: { userId, familyId: families, revokedAt: null, usedAt: null, expiresAt: { gt: now } },
    select: { familyId: true },
  });
  const ids = live.map((row) => row.familyId);
  if (ids.length > 0)
    await tx.refreshToken.updateMany({ where: { userId, familyId: { in: ids }, revokedAt: null }, data: { revokedAt: now } });
  return ids;
}

/** Ends, with an audit row each, every session of the user but the calling one (revoke-others, turning two-factor on). */
export async function endOtherSessions(tx: Tx, userId: string, currentSessionId: string, audit: AuditContext): Promise<number> {
  const ended = await revokeFamilies(tx, userId, { not: currentSessionId });
  for (const id of ended) await recordAudit(tx, { ...audit, action: 'account.session_ended', target: { type: 'session', id } });
  return ended.length;
}

export function createSessionService(deps: { db: Db; pool: pg.Pool }) {
  const { db, pool } = deps;

  async function list(userId: string, currentSessionId: string): Promise<SessionDto[]> {
    const rows = await listSessions(pool, userId);
    return rows.map((row) => ({
      id: row.id,
      created_at: row.createdAt.toISOString(),
      last_used_at: row.lastUsedAt.toISOString(),
      user_agent: row.userAgent,
      client_ip: row.clientIp,
      current: row.id === currentSessionId,
    }));
  }

  /** Ends one live session of the user (the current one included: that is a sign-out); 404 for any other id. */
  async function end(userId: string, sessionId: string, audit: AuditContext): Promise<void> {
    if (!isUuid(sessionId)) throw sessionNotFound();
    await db.$transaction(async (tx) => {
      if ((await revokeFamilies(tx, userId, sessionId)).length === 0) throw sessionNotFound();
      await recordAudit(tx, { ...audit, action: 'account.session_ended', target: { type: 'session', id: sessionId } });
    });
  }

  /** Ends every session of the user but the calling one; answers how many ended. */
  const endOthers = (userId: string, currentSessionId: string, audit: AuditContext): Promise<number> =>
    db.$transaction((tx) => endOtherSessions(tx, userId, currentSessionId, audit));

  return { list, end, endOthers };
}

export type SessionService = ReturnType<typeof createSessionService>;
