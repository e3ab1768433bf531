// Routes of the change feed: a workspace's events as a list or as Server-Sent Events, and the tickets that open a stream.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { DEFAULT_LIMIT } from '../../lib/pagination.js';
import { linkNext } from '../../http/pagination.js';
import { requireTenant } from '../../http/request.js';
import { CrmEventSchema, EventListQuerySchema, EventTicketSchema } from './schemas.js';

const documented = { tags: ['sync'] };
const FEED_NOTE =
  'Needs VIEW_CRM (every role; API keys with VIEW_CRM too). Every event of the workspace that an automation trigger ' +
  'names, whether or not a rule matches it, as its webhooks receive it plus its `id` (the `webhook-id` of its ' +
  'deliveries), in the order the changes committed, each once; kept 7 days. See docs/change-feed.md. ';

/** Whether the request asks for Server-Sent Events rather than a JSON page. */
const wantsStream = (request: FastifyRequest) => (request.headers.accept ?? '').toLowerCase().includes('text/event-stream');

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const events = app.services.events;

  app.get(
    '/events/',
    {
      schema: {
        ...documented,
        operationId: 'listEvents',
        summary: "The workspace's change feed: its events as a list, or as Server-Sent Events.",
        description:
          FEED_NOTE +
          'As a list (JSON): oldest first, after `after` (from the oldest kept event without one). The feed never ends: ' +
          'every page links on (`Link: rel="next"`, after its last event), and a page shorter than `limit` means "caught ' +
          'up for now": poll its link later. With `Accept: text/event-stream`, a stream: each event as `id:` (its id), ' +
          '`event:` (its type) and `data:` (the same JSON), a comment line at least every 15 seconds; it starts after ' +
          '`Last-Event-ID` (sent by a reconnecting EventSource), else after `after`, else with the next event logged. An ' +
          'event reaches open streams within moments of its commit, once every transaction that began before it has ' +
          'ended. An instance shutting down ends its streams; clients resume with Last-Event-ID and lose nothing. A ' +
          'cursor naming no event the workspace keeps: 410 `cursor_expired`; a malformed one: 400. A workspace holds at ' +
          'most EVENT_STREAMS_PER_WORKSPACE open streams (default 100) across all instances: one more is 429 ' +
          '`event_streams_exhausted`. Without an Authorization header, `ticket` (from `POST …/events/tickets/`) ' +
          'authenticates the request, once: 401 `ticket_not_valid` when it is unknown, used or expired.',
        params: OrganizationParamsSchema,
        querystring: EventListQuerySchema,
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({ maxLength: 100, description: 'Streams: resume after this event (EventSource sends it when reconnecting).' }),
          ),
        }),
        response: responses(
          {
            200: {
              description: 'The events after the cursor, oldest first: a JSON page, or a stream of them.',
              headers: {
                Link: Type.String({
                  description: 'Lists: RFC 8288 link to the next page: `<url>; rel="next"` (always: the feed never ends).',
                }),
              },
              content: {
                'application/json': { schema: Type.Array(Ref(CrmEventSchema)) },
                'text/event-stream': {
                  schema: Type.String({
                    description:
                      'Server-Sent Events: `id: <event id>`, `event: <type>`, `data: <the event JSON>`; `: keep-alive` comments.',
                  }),
                },
              },
            },
          },
          400,
          401,
          403,
          404,
          410,
          429,
        ),
      },
      config: { access: 'VIEW_CRM', apiKeys: true, streamTickets: true },
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      const { after } = request.query;
      if (wantsStream(request)) {
        const lastEventId = request.headers['last-event-id'];
        const cursor =
          lastEventId !== undefined && lastEventId !== ''
            ? { value: lastEventId, field: 'Last-Event-ID' }
            : after !== undefined
              ? { value: after, field: 'after' }
              : undefined;
        const stream = await events.openStream(tenant, cursor);
        // No proxy buffering (nginx honours the header): each event goes out as it is written.
        return reply.type('text/event-stream; charset=utf-8').header('x-accel-buffering', 'no').send(stream.body);
      }
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const page = await events.list(tenant, after, limit);
      linkNext(request, reply, page.next, limit, { param: 'after', drop: ['ticket'] });
      return reply.type('application/json; charset=utf-8').send(page.items);
    },
  );

  app.post(
    '/events/tickets/',
    {
      schema: {
        ...documented,
        operationId: 'createEventTicket',
        summary: 'A single-use ticket that opens one change stream without an Authorization header.',
        description:
          "Needs VIEW_CRM (API keys with VIEW_CRM too). A browser's EventSource sends no Authorization header: open the " +
          'stream as `GET …/events/?ticket=<ticket>` instead. The ticket works once, for 60 seconds (`expires_at`), in ' +
          'this workspace only, and acts as its creator (a member or an API key) as they are when it is used. Only its ' +
          "hash is stored; it appears in no log. EventSource's automatic reconnection reuses the used ticket and is " +
          'refused (401): create another ticket and reopen with `after=<the last event id received>`.',
        params: OrganizationParamsSchema,
        response: responses({ 201: Ref(EventTicketSchema) }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const tenant = requireTenant(request);
      const holder = request.apiKey
        ? { membershipId: null, apiKeyId: request.apiKey.id }
        : { membershipId: tenant.membershipId, apiKeyId: null };
      reply.code(201);
      return events.createTicket(tenant, holder);
    },
  );
};
