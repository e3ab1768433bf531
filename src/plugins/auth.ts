// JWT authentication: `app.authenticate` (Bearer access token required), `app.authenticateOptional`, `app.tokens`.
import fp from 'fastify-plugin';
import fastifyJwt from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import { unauthorized } from '../lib/problem.js';
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
      const [user, live] = await Promise.all([
        app.db.user.findUnique({
          where: { id: claims.sub },
          select: { id: true, username: true, email: true, isSuperuser: true, tokenVersion: true },
        }),
        tokens.sessionIsLive(claims.sid),
      ]);
      if (!user || user.tokenVersion !== claims.ver || !live) throw invalidAccess();
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
