// JWT authentication: `app.authenticate` (Bearer access token required), `app.authenticateOptional`, `app.tokens`.
import fp from 'fastify-plugin';
import fastifyJwt from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import { unauthorized } from '../lib/problem.js';
import { isUuid } from '../lib/http-schemas.js';
import { createTokenService, type TokenService } from '../modules/auth/token-service.js';

export interface CurrentUser {
  id: string;
  username: string;
  email: string;
  isSuperuser: boolean;
  tokenVersion: number;
}

const invalidAccess = () => unauthorized('token_not_valid', 'Given token not valid for any token type.');

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

    async function resolveUser(request: FastifyRequest): Promise<CurrentUser> {
      const header = request.headers.authorization;
      const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
      if (!match?.[1]) throw unauthorized();
      let claims: Record<string, unknown>;
      try {
        claims = app.jwt.verify<Record<string, unknown>>(match[1]);
      } catch {
        throw invalidAccess();
      }
      if (claims.typ !== 'access' || typeof claims.sub !== 'string' || typeof claims.sid !== 'string') throw invalidAccess();
      if (!isUuid(claims.sub) || !isUuid(claims.sid)) throw invalidAccess();
      // One round trip: the user and whether the token's session (refresh family) is still live (not logged out).
      const { rows } = await app.pg.query<CurrentUser & { live: boolean }>({
        name: 'authenticate-access-token',
        text: `SELECT u.id, u.username, u.email, u.is_superuser AS "isSuperuser", u.token_version AS "tokenVersion",
                 EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.family_id = $2 AND r.revoked_at IS NULL
                         AND r.used_at IS NULL AND r.expires_at > now()) AS live
               FROM users u WHERE u.id = $1`,
        values: [claims.sub, claims.sid],
      });
      const row = rows[0];
      if (!row || row.tokenVersion !== claims.ver || !row.live) throw invalidAccess();
      const { live: _live, ...user } = row;
      return user;
    }

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

/** The signed-in user of a route guarded by `app.authenticate`. */
export function requireUser(request: FastifyRequest): CurrentUser {
  if (!request.currentUser) throw unauthorized();
  return request.currentUser;
}

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService;
    authenticate: (request: FastifyRequest) => Promise<void>;
    authenticateOptional: (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    currentUser: CurrentUser | null;
  }
}
