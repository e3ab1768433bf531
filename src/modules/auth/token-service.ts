// Issues access/refresh JWT pairs and keeps the refresh-token store: rotation, blacklist, family revocation.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { unauthorized } from '../../lib/problem.js';

type DbClient = Db | Prisma.TransactionClient;

export interface JwtCodec {
  sign(payload: Record<string, unknown>, options: { expiresIn: number }): string;
  verify(token: string): Record<string, unknown>;
}

export interface AccessClaims {
  sub: string;
  typ: 'access';
  /** The user's token version when issued; a password change bumps it and kills older access tokens. */
  ver: number;
  /** Session (refresh family) id; logging out of the session kills its access tokens too. */
  sid: string;
}

export interface TokenPair {
  access: string;
  refresh: string;
}

const invalidToken = () => unauthorized('token_not_valid', 'Token is invalid or expired.');

/**
 * `FOR NO KEY UPDATE` on the user: conflicts with any UPDATE or DELETE of the row and with itself, but not with the
 * key-share locks that inserting a refresh token (foreign key) takes. Returns false when the user no longer exists.
 */
async function lockUser(tx: Prisma.TransactionClient, userId: string): Promise<boolean> {
  const rows = await tx.$queryRaw<unknown[]>`SELECT 1 FROM users WHERE id = ${userId}::uuid FOR NO KEY UPDATE`;
  return rows.length > 0;
}

export function createTokenService(deps: { db: Db; jwt: JwtCodec; accessTtl: number; refreshTtl: number }) {
  const { db, jwt, accessTtl, refreshTtl } = deps;

  async function issuePair(
    user: { id: string; tokenVersion: number },
    client: DbClient = db,
    familyId: string = randomUUID(),
  ): Promise<TokenPair> {
    const jti = randomUUID();
    await client.refreshToken.create({
      data: { id: jti, userId: user.id, familyId, expiresAt: new Date(Date.now() + refreshTtl * 1000) },
    });
    const access = jwt.sign({ sub: user.id, typ: 'access', ver: user.tokenVersion, sid: familyId }, { expiresIn: accessTtl });
    const refresh = jwt.sign({ sub: user.id, typ: 'refresh', jti, fam: familyId }, { expiresIn: refreshTtl });
    return { access, refresh };
  }

  /** Verifies a refresh JWT's signature, expiry and type; the store is checked by the callers. */
  function decodeRefresh(token: string): { sub: string; jti: string; fam: string } {
    let claims: Record<string, unknown>;
    try {
      claims = jwt.verify(token);
    } catch {
      throw invalidToken();
    }
    const { sub, jti, fam, typ } = claims;
    if (typ !== 'refresh' || typeof sub !== 'string' || typeof jti !== 'string' || typeof fam !== 'string') throw invalidToken();
    return { sub, jti, fam };
  }

  /** Exchanges a refresh token for a new pair; the old one is blacklisted, and reusing it revokes its family. */
  async function rotate(refreshToken: string): Promise<TokenPair> {
    const claims = decodeRefresh(refreshToken);
    const now = new Date();
    // The transaction returns null instead of throwing on a refused token: throwing would roll back the family
    // revocation of a reused token.
    const pair = await db.$transaction(async (tx) => {
      // Serialized on the user row with every revocation (password change and reset update that row first, family
      // revocation happens here under the lock): a successor inserted by a rotation in flight is then either
      // committed before a revocation starts, so it is revoked with the rest, or issued after it, with the new state.
      if (!(await lockUser(tx, claims.sub))) return null;
      const claimed = await tx.refreshToken.updateMany({
        where: { id: claims.jti, userId: claims.sub, usedAt: null, revokedAt: null, expiresAt: { gt: now } },
        data: { usedAt: now },
      });
      if (claimed.count === 0) {
        const row = await tx.refreshToken.findUnique({ where: { id: claims.jti } });
        if (row?.usedAt) {
          // A rotated token came back: someone holds a copy. End the whole login (OAuth 2.0 Security BCP).
          await tx.refreshToken.updateMany({ where: { familyId: row.familyId, revokedAt: null }, data: { revokedAt: now } });
        }
        return null;
      }
      const user = await tx.user.findUnique({ where: { id: claims.sub }, select: { id: true, tokenVersion: true, isActive: true } });
      // A deactivated user's sessions end here too; the claimed token stays used, so it cannot be tried again.
      if (!user?.isActive) return null;
      const issued = await issuePair(user, tx, claims.fam);
      const next = decodeRefresh(issued.refresh);
      await tx.refreshToken.update({ where: { id: claims.jti }, data: { replacedById: next.jti } });
      return issued;
    });
    if (!pair) throw invalidToken();
    return pair;
  }

  /** Logout: blacklists the refresh token, which must belong to the caller. */
  async function revoke(refreshToken: string, userId: string): Promise<void> {
    const claims = decodeRefresh(refreshToken);
    if (claims.sub !== userId) throw invalidToken();
    const revoked = await db.refreshToken.updateMany({
      where: { id: claims.jti, userId, usedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
      data: { revokedAt: new Date() },
    });
    if (revoked.count === 0) throw invalidToken();
  }

  /**
   * Ends every session of a user (password change or reset, account deletion). Call it in a transaction that has
   * already updated the user row, so that no rotation (which locks that row) is in flight when it runs.
   */
  async function revokeAllForUser(userId: string, client: DbClient = db): Promise<void> {
    await client.refreshToken.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: new Date() } });
  }

  return { issuePair, rotate, revoke, revokeAllForUser };
}

export type TokenService = ReturnType<typeof createTokenService>;
