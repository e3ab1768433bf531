// Issues access/refresh JWT pairs and keeps the refresh-token store: rotation, blacklist, family revocation.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type pg from 'pg';
import type { JwtCodec } from '../../lib/jwt-codec.js';
import { unauthorized } from '../../lib/problem.js';
import { isUuid } from '../../lib/http-schemas.js';
import { openSession as storeSession, revokeRefreshToken, rotateRefreshToken, type SessionClient } from '../../db/token-store.js';

export type { SessionClient };

type DbClient = Db | Prisma.TransactionClient;

export interface TokenPair {
  access: string;
  refresh: string;
}

const invalidToken = () => unauthorized('token_not_valid', 'Token is invalid or expired.');

export function createTokenService(deps: { db: Db; pool: pg.Pool; jwt: JwtCodec; accessTtl: number; refreshTtl: number }) {
  const { db, pool, jwt, accessTtl, refreshTtl } = deps;
  const refreshExpiry = () => new Date(Date.now() + refreshTtl * 1000);

  async function issuePair(
    user: { id: string; tokenVersion: number },
    client: DbClient = db,
    familyId: string = randomUUID(),
  ): Promise<TokenPair> {
    const jti = randomUUID();
    await client.refreshToken.create({ data: { id: jti, userId: user.id, familyId, expiresAt: refreshExpiry() } });
    return signPair(user, jti, familyId);
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
    if (typ !== 'refresh' || !isUuid(sub) || !isUuid(jti) || !isUuid(fam)) throw invalidToken();
    return { sub, jti, fam };
  }

  /** Signs the pair of a session whose refresh token `jti` is stored. */
  function signPair(user: { id: string; tokenVersion: number }, jti: string, familyId: string): TokenPair {
    const access = jwt.sign({ sub: user.id, typ: 'access', ver: user.tokenVersion, sid: familyId }, { expiresIn: accessTtl });
    const refresh = jwt.sign({ sub: user.id, typ: 'refresh', jti, fam: familyId }, { expiresIn: refreshTtl });
    return { access, refresh };
  }

  /** Sign-in's session: the login recorded and the first refresh token stored in one statement. */
  async function openSession(user: { id: string; tokenVersion: number }, client: SessionClient): Promise<TokenPair> {
    const session = { userId: user.id, tokenId: randomUUID(), familyId: randomUUID(), expiresAt: refreshExpiry(), client };
    if (!(await storeSession(pool, session))) throw invalidToken();
    return signPair(user, session.tokenId, session.familyId);
  }

  /** Exchanges a refresh token for a new pair; the old one is blacklisted, and reusing it revokes its family. */
  async function rotate(refreshToken: string, client: SessionClient): Promise<TokenPair> {
    const claims = decodeRefresh(refreshToken);
    const next = { tokenId: randomUUID(), expiresAt: refreshExpiry(), client };
    const result = await rotateRefreshToken(pool, { userId: claims.sub, tokenId: claims.jti, familyId: claims.fam }, next);
    if (result.outcome !== 'rotated') throw invalidToken();
    return signPair({ id: claims.sub, tokenVersion: result.tokenVersion }, next.tokenId, claims.fam);
  }

  /** Logout: blacklists the refresh token, which must belong to the caller. */
  async function revoke(refreshToken: string, userId: string): Promise<void> {
    const claims = decodeRefresh(refreshToken);
    if (claims.sub !== userId || !(await revokeRefreshToken(pool, claims.jti, userId))) throw invalidToken();
  }

  /**
   * Ends every session of a user (password change or reset, account deletion). Call it in a transaction that has
   * already updated the user row, so that no rotation (which locks that row) is in flight when it runs.
   */
  async function revokeAllForUser(userId: string, client: DbClient = db): Promise<void> {
    await client.refreshToken.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: new Date() } });
  }

  return { issuePair, openSession, rotate, revoke, revokeAllForUser };
}

export type TokenService = ReturnType<typeof createTokenService>;
