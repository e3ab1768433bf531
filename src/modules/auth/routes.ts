// Routes of the token endpoints: sign in (rate-limited), refresh with rotation, and sign out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { NoContent, problemResponse, ProblemSchema, Ref, responses } from '../../lib/http-schemas.js';
import { requireUser, sessionClient } from '../../http/request.js';
import { RefreshTokenBodySchema, SignInSchema, TokenPairSchema } from './schemas.js';
import { TwoFactorChallengeProblemSchema } from '../two-factor/schemas.js';

/** Sign in and refresh: the credentials are in the body. */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const auth = app.services.auth;
  app.post(
    '/auth/token/',
    {
      schema: {
        tags: ['auth'],
        operationId: 'createToken',
        summary: 'Sign in with a username and password.',
        description:
          'Returns an access and a refresh token; the pair starts a new session. A wrong username or password answers 401 ' +
          'without saying which; so does a deactivated account. Limited per client IP and username, and per client IP alone ' +
          '(429 with `Retry-After`). 503 `server_busy` (with `Retry-After`) when too many password checks are queued. ' +
          'With two-factor sign-in on, the right password answers 401 `two_factor_required` with a `challenge` ' +
          '(TwoFactorChallengeProblem) instead of tokens: send it with a code to POST /auth/token/two-factor/.',
        body: Ref(SignInSchema),
        response: {
          ...responses({ 200: Ref(TokenPairSchema) }, 401, 429, 503),
          401: {
            ...problemResponse(401),
            description:
              'Wrong credentials (Problem), or the password was right and a second factor is needed (TwoFactorChallengeProblem).',
            content: {
              'application/problem+json': {
                schema: Type.Union([Ref(TwoFactorChallengeProblemSchema), Ref(ProblemSchema)]),
              },
            },
          },
        },
      },
      preHandler: [app.rateLimitPreset('tokenPerIp'), app.rateLimitPreset('token')],
    },
    async (request) => auth.signIn(request.body, sessionClient(request)),
  );

  app.post(
    '/auth/token/refresh/',
    {
      schema: {
        tags: ['auth'],
        operationId: 'refreshToken',
        summary: 'Exchange a refresh token for a new pair.',
        description:
          'Rotation: the refresh token sent is blacklisted and a new one is returned; store it. Sending a blacklisted ' +
          'refresh token again answers 401 and ends its whole session (every refresh and access token of that sign-in). ' +
          'A deactivated user gets 401 (and access tokens issued before stop working at once).',
        body: Ref(RefreshTokenBodySchema),
        response: responses({ 200: Ref(TokenPairSchema) }, 401),
      },
    },
    async (request) => auth.refresh(request.body.refresh, sessionClient(request)),
  );
};

/** Sign out: the signed-in user ends one of their sessions. */
export const userRoutes: FastifyPluginAsyncTypebox = async (scope) => {
  const auth = scope.services.auth;

  scope.post(
    '/auth/logout/',
    {
      schema: {
        tags: ['auth'],
        operationId: 'logout',
        summary: 'Sign out: blacklist a refresh token of the caller.',
        description:
          'Ends the session of that refresh token: it can no longer be refreshed, and the access tokens of the session ' +
          "stop working. A refresh token that is not the caller's, already used or already blacklisted answers 401.",
        body: Ref(RefreshTokenBodySchema),
        response: responses({ 204: NoContent }, 401),
      },
    },
    async (request, reply) => {
      await auth.logout(request.body.refresh, requireUser(request).id);
      return reply.code(204).send(null);
    },
  );
};
