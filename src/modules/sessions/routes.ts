// Routes of the signed-in user's sessions: list them, end one, end all but the current one.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { NoContent, Ref, responses } from '../../lib/http-schemas.js';
import { requestSessionId, requireUser, userAudit } from '../../http/request.js';
import { SessionParamsSchema, SessionSchema, SessionsEndedSchema } from './schemas.js';

const tags = ['auth'];
const REVOCATION =
  'An ended session cannot be refreshed any more, and its access tokens are refused from the very next request (each ' +
  'request checks that its session is live: the bound is zero, not the access-token lifetime).';

export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const sessions = app.services.sessions;

  app.get(
    '/auth/sessions/',
    {
      schema: {
        tags,
        operationId: 'listSessions',
        summary: 'Where you are signed in: your live sessions, most recently used first.',
        description:
          'One entry per sign-in (refresh-token family), with the client of its last sign-in or refresh; `current` marks ' +
          'the session of the access token used. Not paginated: a user has one entry per live sign-in.',
        response: responses({ 200: Type.Array(Ref(SessionSchema), { description: 'Live sessions, most recently used first.' }) }, 401),
      },
    },
    async (request) => sessions.list(requireUser(request).id, requestSessionId(request)),
  );

  app.delete(
    '/auth/sessions/:session_id/',
    {
      schema: {
        tags,
        operationId: 'endSession',
        summary: 'End one of your sessions (a lost laptop, say).',
        description: `${REVOCATION} Ending the current session signs you out. Ids that are not a live session of yours answer 404.`,
        params: SessionParamsSchema,
        response: responses({ 204: NoContent }, 401, 404),
      },
    },
    async (request, reply) => {
      await sessions.end(requireUser(request).id, request.params.session_id, userAudit(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/auth/sessions/revoke-others/',
    {
      schema: {
        tags,
        operationId: 'endOtherSessions',
        summary: 'Sign out everywhere else: end every session but the current one.',
        description: `${REVOCATION} No body.`,
        response: responses({ 200: Ref(SessionsEndedSchema) }, 401),
      },
    },
    async (request) => ({ ended: await sessions.endOthers(requireUser(request).id, requestSessionId(request), userAudit(request)) }),
  );
};
