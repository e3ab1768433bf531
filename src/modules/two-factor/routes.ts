// Routes of two-factor sign-in: enrol, confirm and disable for the signed-in user; the challenge answer at sign-in.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NoContent, Ref, responses } from '../../lib/http-schemas.js';
import { requestSessionId, requireUser, sessionClient, userAudit } from '../../http/request.js';
import { TokenPairSchema } from '../auth/schemas.js';
import {
  TwoFactorCodeSchema,
  TwoFactorDisableSchema,
  TwoFactorEnrolmentSchema,
  TwoFactorRecoveryCodesSchema,
  TwoFactorSignInSchema,
} from './schemas.js';

const tags = ['auth'];

/** Answering the sign-in challenge: public, the challenge is the credential. */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const twoFactor = app.services.twoFactor;
  app.post(
    '/auth/token/two-factor/',
    {
      schema: {
        tags,
        operationId: 'createTokenTwoFactor',
        summary: 'Second step of a sign-in with two-factor on: the challenge and a code give the token pair.',
        description:
          'Send the `challenge` of the 401 `two_factor_required` answer of POST /auth/token/ with the current `code` of ' +
          'the authenticator (the previous and next 30-second steps are accepted too) or an unused `recovery_code`. A code ' +
          'is accepted once: a code of a step already used answers 401 `two_factor_code_invalid`. A challenge lives five ' +
          'minutes and takes five wrong codes; after that, or once used, it answers 401 `two_factor_challenge_invalid` ' +
          "(sign in again). Ten wrong codes in 15 minutes, over all challenges, lock the account's second step: 429 " +
          '`two_factor_attempts_exceeded` with `Retry-After`. 503 `two_factor_unavailable` when the server can no longer ' +
          'read TOTP secrets (its EMAIL_ENCRYPTION_KEY is gone): recovery codes still work.',
        body: Ref(TwoFactorSignInSchema),
        response: responses({ 200: Ref(TokenPairSchema) }, 401, 429, 503),
      },
      preHandler: app.rateLimitPreset('tokenPerIp'),
    },
    async (request) => twoFactor.signIn(request.body, sessionClient(request)),
  );
};

/** Enrolment and disabling, for the signed-in user. */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const twoFactor = app.services.twoFactor;

  app.post(
    '/auth/me/two-factor/',
    {
      schema: {
        tags,
        operationId: 'startTwoFactorEnrolment',
        summary: 'Start turning two-factor sign-in on: a new TOTP secret to add to an authenticator app.',
        description:
          'Answers the secret and its `otpauth://` URI once; nothing changes at sign-in until POST ' +
          '/auth/me/two-factor/confirm/ with a code. Calling it again before confirming replaces the secret. 409 ' +
          '`two_factor_already_enabled` when it is on; 400 `encryption_key_missing` when the server has no ' +
          'EMAIL_ENCRYPTION_KEY (secrets are stored encrypted with it). No body.',
        response: responses({ 200: Ref(TwoFactorEnrolmentSchema) }, 401, 409),
      },
    },
    async (request) => twoFactor.enrol(requireUser(request)),
  );

  app.post(
    '/auth/me/two-factor/confirm/',
    {
      schema: {
        tags,
        operationId: 'confirmTwoFactor',
        summary: 'Turn two-factor sign-in on with a first code; answers ten recovery codes, shown only now.',
        description:
          'The session making the request stays signed in (its refresh token keeps working); every other session of ' +
          'the account ends, since it was opened with the password alone. A wrong or replayed code answers 400 ' +
          "`two_factor_code_invalid` and counts against the account's limit (429 `two_factor_attempts_exceeded`).",
        body: Ref(TwoFactorCodeSchema),
        response: responses({ 200: Ref(TwoFactorRecoveryCodesSchema) }, 401, 409, 429, 503),
      },
    },
    async (request) => twoFactor.confirm(requireUser(request), requestSessionId(request), request.body.code, userAudit(request)),
  );

  app.post(
    '/auth/me/two-factor/disable/',
    {
      schema: {
        tags,
        operationId: 'disableTwoFactor',
        summary: 'Turn two-factor sign-in off with the password and a current code.',
        description:
          'Removes the secret and every recovery code; sessions stay as they are. Workspaces that require two-factor ' +
          'answer 403 `two_factor_required` again until it is back on. 400 `wrong_password`, 400 ' +
          '`two_factor_code_invalid`, 400 `two_factor_not_enabled`.',
        body: Ref(TwoFactorDisableSchema),
        response: responses({ 204: NoContent }, 401, 429, 503),
      },
      preHandler: app.rateLimitPreset('passwordChecks'),
    },
    async (request, reply) => {
      await twoFactor.disable(requireUser(request), request.body, userAudit(request));
      return reply.code(204).send(null);
    },
  );
};
