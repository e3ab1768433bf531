// Routes of first-run setup: availability, the one-time setup itself, and the SMTP test offered during it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DetailSchema, Ref, responses } from '../../lib/http-schemas.js';
import { SetupAvailabilitySchema, SetupRequestSchema, SmtpTestRequestSchema } from './schemas.js';

const GATE_DESCRIPTION =
  '403 `setup_closed` once setup has completed (or users or workspaces exist), whatever the body; ' +
  '403 `setup_unavailable` when the server has no SERVICE_SETUP_TOKEN of at least 32 characters. ' +
  'A wrong `setup_token` answers 400 with `errors.setup_token`. Rate-limited per client IP (default 5 per minute, shared ' +
  'with the other setup POST).';

/** Public: the setup token in the body is the credential. */
export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const setup = app.services.setup;
  // Every POST counts against the limit, malformed ones included, and a closed setup answers 403 before validation.
  const guarded = {
    onRequest: app.rateLimitPreset('setup'),
    preValidation: async () => setup.assertOpen(),
  };

  app.get(
    '/setup/',
    {
      schema: {
        tags: ['setup'],
        operationId: 'getSetupAvailability',
        summary: 'Whether first-run setup can run.',
        description: 'Never reveals the setup token.',
        response: responses({ 200: Ref(SetupAvailabilitySchema) }),
      },
    },
    async () => setup.availability(),
  );

  app.post(
    '/setup/',
    {
      ...guarded,
      schema: {
        tags: ['setup'],
        operationId: 'completeSetup',
        summary: 'Create the installation admin and the first workspace; closes setup for good.',
        description:
          'Creates the installation administrator, the first workspace with that administrator as Owner and, with `smtp`, ' +
          'the installation fallback SMTP account (always the default; `smtp` needs EMAIL_ENCRYPTION_KEY on the server, ' +
          'else 400 with `errors.smtp`). ' +
          GATE_DESCRIPTION,
        body: Ref(SetupRequestSchema),
        response: responses({ 201: Ref(DetailSchema) }, 403, 413, 415, 429),
      },
    },
    async (request, reply) => {
      await setup.complete(request.body, { actor: { type: 'setup' }, ip: request.ip }, request.log);
      return reply.code(201).send({ detail: 'Setup completed.' });
    },
  );

  app.post(
    '/setup/smtp-test/',
    {
      ...guarded,
      schema: {
        tags: ['setup'],
        operationId: 'testSetupSmtp',
        summary: 'Send one test message with the given SMTP settings; stores nothing.',
        description:
          '200 when the SMTP server accepted the message (not a delivery guarantee). Any connection, TLS, authentication or ' +
          'rejection failure answers 502 `smtp_failed` with a generic detail. Needs no EMAIL_ENCRYPTION_KEY: nothing is stored. ' +
          GATE_DESCRIPTION,
        body: Ref(SmtpTestRequestSchema),
        response: responses({ 200: Ref(DetailSchema) }, 403, 413, 415, 429, 502),
      },
    },
    async (request) => {
      await setup.testSmtp(request.body, request.log);
      return { detail: 'The SMTP server accepted the test message.' };
    },
  );
};
