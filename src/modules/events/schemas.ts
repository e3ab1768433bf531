// Schemas of the change feed: an event as the feed hands it out, the feed's query, and a stream ticket.
import { Type, type Static } from '@sinclair/typebox';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../lib/pagination.js';
import { named, Ref, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { TriggerSchema } from '../automations/schemas.js';

export const CrmEventSchema = Type.Object(
  {
    id: Uuid({ description: "The event's id: the feed's cursor (`after`, `Last-Event-ID`) and its webhooks' `webhook-id`." }),
    event: Ref(TriggerSchema),
    organization_id: Uuid(),
    data: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The record after the change, as the API returns it (on `*.deleted`, the record as it was).',
    }),
    occurred_at: Timestamp(),
  },
  { ...named('CrmEvent'), description: 'An event of the workspace: the JSON its webhooks receive, with its id.' },
);
export type CrmEventDto = Static<typeof CrmEventSchema>;

export const EventListQuerySchema = Type.Object({
  after: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'The events after this one (an event id). Unknown, or older than the 7 days events are kept: 410 ' +
        '`cursor_expired`; not an event id: 400. Without it: a list starts at the oldest kept event, a stream with the ' +
        'next event logged.',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Page size of a list (1-200, default 50).' }),
  ),
  ticket: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        "A ticket from `POST …/events/tickets/`, in place of an Authorization header (which a browser's EventSource " +
        'cannot send): single use, 60 seconds. Ignored when an Authorization header is sent.',
    }),
  ),
});

export const EventTicketSchema = Type.Object(
  {
    ticket: Type.String({ description: 'Opens one stream, once: `GET …/events/?ticket=<ticket>`. Shown only here.' }),
    expires_at: Timestamp({ description: 'The ticket is refused (401 `ticket_not_valid`) from this instant, used or not.' }),
  },
  { ...named('EventStreamTicket'), description: 'A single-use ticket that opens one change stream without an Authorization header.' },
);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const EVENT_SCHEMAS = [CrmEventSchema, EventTicketSchema];
