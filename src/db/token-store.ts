// The token endpoints' statements on the refresh-token store: named SQL on the pool, no query compilation per request.
import type pg from 'pg';

export interface SignInUser {
  id: string;
  passwordHash: string;
  tokenVersion: number;
  isActive: boolean;
  twoFactorEnabled: boolean;
}

/** The client a refresh token was issued to, shown in the session list (user agent cut to the column's size). */
export interface SessionClient {
  userAgent: string | null;
  ip: string | null;
}

/** The account a sign-in names, if any. */
export async function findSignInUser(pool: pg.Pool, username: string): Promise<SignInUser | undefined> {
  const { rows } = await pool.query<SignInUser>({
    name: 'sign-in-user',
    text: `SELECT id, password_hash AS "passwordHash", token_version AS "tokenVersion", is_active AS "isActive",
             two_factor_enabled_at IS NOT NULL AS "twoFactorEnabled"
           FROM users WHERE username = $1`,
    values: [username],
  });
  return rows[0];
}

/**
 * Opens a session in one statement: records the login on the user row (which locks it, like every change that
 * revokes sessions) and stores the session's first refresh token. False when the user is gone.
 */
export async function openSession(
  pool: pg.Pool,
  session: { userId: string; tokenId: string; familyId: string; expiresAt: Date; client: SessionClient },
): Promise<boolean> {
  const { rowCount } = await pool.query({
    name: 'open-session',
    text: `WITH signed_in AS (UPDATE users SET last_login = now(), updated_at = now() WHERE id = $1 RETURNING id)
           INSERT INTO refresh_tokens (id, user_id, family_id, expires_at, user_agent, client_ip)
           SELECT $2, id, $3, $4, left($5, 512), $6 FROM signed_in`,
    values: [session.userId, session.tokenId, session.familyId, session.expiresAt, session.client.userAgent, session.client.ip],
  });
  return rowCount === 1;
}

export type RotationResult = { outcome: 'rotated'; tokenVersion: number } | { outcome: 'refused' };

/**
 * Exchanges refresh token `tokenId` for `next` in one transaction, serialized on the user row with every revocation
 * (password change and reset update that row first; a family revocation happens here under the lock): a successor
 * is either committed before a revocation starts, and revoked with the rest, or issued after it with the new state.
 * The claimed token is marked used even when the user was deactivated meanwhile (then nothing is issued). A token
 * that was already used comes back from someone holding a copy: its whole family (the sign-in) ends.
 */
export async function rotateRefreshToken(
  pool: pg.Pool,
  claims: { userId: string; tokenId: string; familyId: string },
  next: { tokenId: string; expiresAt: Date; client: SessionClient },
): Promise<RotationResult> {
  const client = await pool.connect();
  let failed = false;
  try {
    await client.query('BEGIN');
    const { rows: users } = await client.query<{ tokenVersion: number; isActive: boolean }>({
      name: 'rotate-lock-user',
      text: 'SELECT token_version AS "tokenVersion", is_active AS "isActive" FROM users WHERE id = $1 FOR NO KEY UPDATE',
      values: [claims.userId],
    });
    const user = users[0];
    let result: RotationResult = { outcome: 'refused' };
    if (user) {
      const { rows: claimed } = await client.query<{ issued: boolean }>({
        name: 'rotate-claim',
        text: `WITH claimed AS (
                 UPDATE refresh_tokens SET used_at = now(), replaced_by_id = CASE WHEN $6 THEN $4::uuid END
                 WHERE id = $2 AND user_id = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
                 RETURNING id
               ), issued AS (
                 INSERT INTO refresh_tokens (id, user_id, family_id, expires_at, user_agent, client_ip)
                 SELECT $4, $1, $3, $5, left($7, 512), $8 FROM claimed WHERE $6
                 RETURNING id
               )
               SELECT EXISTS (SELECT 1 FROM issued) AS issued FROM claimed`,
        values: [
          claims.userId,
          claims.tokenId,
          claims.familyId,
          next.tokenId,
          next.expiresAt,
          user.isActive,
          next.client.userAgent,
          next.client.ip,
        ],
      });
      if (claimed[0]?.issued) result = { outcome: 'rotated', tokenVersion: user.tokenVersion };
      else if (claimed.length === 0) {
        await client.query({
          name: 'rotate-revoke-reused-family',
          text: `UPDATE refresh_tokens SET revoked_at = now()
                 WHERE revoked_at IS NULL
                   AND family_id = (SELECT family_id FROM refresh_tokens WHERE id = $1 AND used_at IS NOT NULL)`,
          values: [claims.tokenId],
        });
      }
    }
    await client.query('COMMIT');
    return result;
  } catch (error) {
    failed = true;
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    // A connection that failed mid-transaction is not given back to the pool in an unknown state.
    client.release(failed);
  }
}

/** Logout: blacklists a live refresh token of the user; false when there is none. */
export async function revokeRefreshToken(pool: pg.Pool, tokenId: string, userId: string): Promise<boolean> {
  const { rowCount } = await pool.query({
    name: 'revoke-refresh-token',
    text: `UPDATE refresh_tokens SET revoked_at = now()
           WHERE id = $1 AND user_id = $2 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()`,
    values: [tokenId, userId],
  });
  return rowCount === 1;
}

/** A live session (refresh-token family) as the session list shows it. */
export interface SessionRow {
  id: string;
  createdAt: Date;
  lastUsedAt: Date;
  userAgent: string | null;
  clientIp: string | null;
}

/**
 * The user's live sessions, newest use first: a family is live while its newest refresh token is unused, unrevoked
 * and unexpired. It starts with the sign-in's token and was last used when its newest token was issued (sign-in or
 * refresh); the client shown is the one of that newest token.
 */
export async function listSessions(pool: pg.Pool, userId: string): Promise<SessionRow[]> {
  const { rows } = await pool.query<SessionRow>({
    name: 'list-sessions',
    text: `SELECT family_id AS id, min(created_at) AS "createdAt", max(created_at) AS "lastUsedAt",
             (array_agg(user_agent ORDER BY created_at DESC))[1] AS "userAgent",
             (array_agg(client_ip ORDER BY created_at DESC))[1] AS "clientIp"
           FROM refresh_tokens WHERE user_id = $1
           GROUP BY family_id
           HAVING bool_or(revoked_at IS NULL AND used_at IS NULL AND expires_at > now())
           ORDER BY max(created_at) DESC, family_id`,
    values: [userId],
  });
  return rows;
}
