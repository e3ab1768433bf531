// JWT authentication: `app.authenticate` (Bearer access token required), `app.authenticateOptional`, `app.tokens`.
import fp from 'fastify-plugin';
import fastifyJwt from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import { forbidden, unauthorized } from '../lib/problem.js';
import { isUuid } from '../lib/http-schemas.js';
import { createTokenService, type TokenService } from '../modules/auth/token-service.js';
import type { AuditContext } from '../modules/audit/audit-log.js';

export interface CurrentUser {
  id: string;
  username: string;
  email: string;
  isSuperuser: boolean;
  tokenVersion: number;
}

const invalidAccess = () => unauthorized('token_not_valid', 'Given token not valid for any token type.');

export interface AccessClaims {
  sub: string;
  sid: string;
  ver: number;
}

/**
 * Columns (over `users u`, with the token's user id as $1 and session id as $2) that authenticate a request in the
 * same round trip as whatever else a query fetches: the user, and whether the session (refresh family) is live.
 */
export const AUTHENTICATED_USER_COLUMNS = `u.id, u.username, u.email, u.is_superuser AS "isSuperuser",
  u.token_version AS "tokenVersion", u.is_active AS "isActive",
  EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.family_id = $2 AND r.revoked_at IS NULL
          AND r.used_at IS NULL AND r.expires_at > now()) AS "sessionLive"`;

export type AuthenticatedRow = CurrentUser & { sessionLive: boolean; isActive: boolean };

/**
 * 401 unless the row exists, is active (a deactivated user's tokens stop at once), carries the token's version (no
 * password change since) and a live session.
 */
export function checkAuthenticatedRow(row: AuthenticatedRow | undefined, claims: AccessClaims): CurrentUser {
  if (!row?.isActive || row.tokenVersion !== claims.ver || !row.sessionLive) throw invalidAccess();
  return { id: row.id, username: row.username, email: row.email, isSuperuser: row.isSuperuser, tokenVersion: row.tokenVersion };
}

export default fp(
  async (app) => {
    await app.register(fastifyJwt, {
      secret: app.config.jwtSecret,
      sign: { algorithm: 'HS256' },
      verify: { algorithms: ['HS256'] },
    });
    const tokens = createTokenService({
      db: app.db,
      jwt: {
        sign: (payload, options) => app.jwt.sign(payload, { expiresIn: options.expiresIn }),
        verify: (token) => app.jwt.verify<Record<string, unknown>>(token),
      },
      accessTtl: app.config.accessTokenTtl,
      refreshTtl: app.config.refreshTokenTtl,
    });
    app.decorate('tokens', tokens);
    app.decorateRequest('currentUser', null);

    /** Verifies the Bearer access token's signature, expiry and claims (no database access). */
    function accessClaims(request: FastifyRequest): AccessClaims {
      const header = request.headers.authorization;
      const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
      if (!match?.[1]) throw unauthorized();
      let claims: Record<string, unknown>;
      try {
        claims = app.jwt.verify<Record<string, unknown>>(match[1]);
      } catch {
        throw invalidAccess();
      }
      const { typ, sub, sid, ver } = claims;
      if (typ !== 'access' || !isUuid(sub) || !isUuid(sid) || typeof ver !== 'number') throw invalidAccess();
      return { sub, sid, ver };
    }

    async function resolveUser(request: FastifyRequest): Promise<CurrentUser> {
      const claims = accessClaims(request);
      const { rows } = await app.pg.query<AuthenticatedRow>({
        name: 'authenticate-access-token',
        text: `SELECT ${AUTHENTICATED_USER_COLUMNS} FROM users u WHERE u.id = $1`,
        values: [claims.sub, claims.sid],
      });
      return checkAuthenticatedRow(rows[0], claims);
    }

    app.decorate('accessClaims', accessClaims);
    app.decorate('authenticate', async (request: FastifyRequest) => {
      request.currentUser = await resolveUser(request);
    });
    // For endpoints open to anonymous callers that behave differently for signed-in ones (invitation accept).
    app.decorate('authenticateOptional', async (request: FastifyRequest) => {
      if (request.headers.authorization !== undefined) request.currentUser = await resolveUser(request);
    });
  },
  { name: 'auth', dependencies: ['db'] },
);

/** 403 unless the user is an installation administrator; `action` completes "Only an installation administrator can …". */
export function assertInstallationAdmin(user: CurrentUser, action: string): void {
  if (!user.isSuperuser) throw forbidden('installation_admin_required', `Only an installation administrator can ${action}.`);
}

/** The signed-in user of a route guarded by `app.authenticate`. */
export function requireUser(request: FastifyRequest): CurrentUser {
  if (!request.currentUser) throw unauthorized();
  return request.currentUser;
}

/** The audit context of a signed-in request: the user as actor, and the client address the app sees. */
export function userAudit(request: FastifyRequest): AuditContext {
  const user = requireUser(request);
  return { actor: { type: 'user', userId: user.id, username: user.username }, ip: request.ip };
}

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService;
    /** Verifies the Bearer access token without touching the database; throws 401. */
    accessClaims: (request: FastifyRequest) => AccessClaims;
    authenticate: (request: FastifyRequest) => Promise<void>;
    authenticateOptional: (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    currentUser: CurrentUser | null;
  }
}
