// Bearer access tokens: JWT signing/verification (`app.jwtCodec`) and the `authenticate` hooks that set `request.currentUser`.
import fp from 'fastify-plugin';
import fastifyJwt from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import { forbidden, unauthorized } from '../lib/problem.js';
import { looksLikeApiKey } from '../lib/api-key-format.js';
import { isUuid } from '../lib/http-schemas.js';
import type { AccessClaims, CurrentUser } from '../lib/current-user.js';
import type { JwtCodec } from '../lib/jwt-codec.js';
import { authenticateClaims, invalidAccessToken } from '../db/authentication.js';

/** The credential of an `Authorization: Bearer <credential>` header, if one is sent. */
export function bearerCredential(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return (header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null)?.[1];
}

export default fp(
  async (app) => {
    await app.register(fastifyJwt, {
      secret: app.config.jwtSecret,
      sign: { algorithm: 'HS256' },
      verify: { algorithms: ['HS256'] },
    });
    app.decorate('jwtCodec', {
      sign: (payload, options) => app.jwt.sign(payload, { expiresIn: options.expiresIn }),
      verify: (token) => app.jwt.verify<Record<string, unknown>>(token),
    } satisfies JwtCodec);
    app.decorateRequest('currentUser', null);

    /** Verifies the Bearer access token's signature, expiry and claims (no database access). */
    function accessClaims(request: FastifyRequest): AccessClaims {
      const credential = bearerCredential(request);
      if (!credential) throw unauthorized();
      // Routes that take keys resolve them before asking for claims: any other route is not a key's to call.
      if (looksLikeApiKey(credential)) {
        throw forbidden('api_key_not_allowed', 'API keys may call only the workspace CRM endpoints; this one needs a signed-in user.');
      }
      let claims: Record<string, unknown>;
      try {
        claims = app.jwt.verify<Record<string, unknown>>(credential);
      } catch {
        throw invalidAccessToken();
      }
      const { typ, sub, sid, ver } = claims;
      if (typ !== 'access' || !isUuid(sub) || !isUuid(sid) || typeof ver !== 'number') throw invalidAccessToken();
      return { sub, sid, ver };
    }

    app.decorate('accessClaims', accessClaims);
    app.decorate('authenticate', async (request: FastifyRequest) => {
      request.currentUser = await authenticateClaims(app.pg, accessClaims(request));
    });
    // For endpoints open to anonymous callers that behave differently for signed-in ones (invitation accept).
    app.decorate('authenticateOptional', async (request: FastifyRequest) => {
      if (request.headers.authorization !== undefined) request.currentUser = await authenticateClaims(app.pg, accessClaims(request));
    });
  },
  { name: 'auth', dependencies: ['db'] },
);

declare module 'fastify' {
  interface FastifyInstance {
    jwtCodec: JwtCodec;
    /** Verifies the Bearer access token without touching the database; throws 401. */
    accessClaims: (request: FastifyRequest) => AccessClaims;
    /** onRequest hook of the `user` context: 401 unless a valid access token of an active user with a live session. */
    authenticate: (request: FastifyRequest) => Promise<void>;
    /** The same when an Authorization header is sent; anonymous otherwise. */
    authenticateOptional: (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    currentUser: CurrentUser | null;
  }
}
