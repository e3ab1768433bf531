// The webhook deliveries as the OpenAPI document's `webhooks` section describes them: one named event body per trigger, and the headers of every delivery.
import { type TSchema, Type } from '@sinclair/typebox';
import type { CrmEventName } from '../../lib/crm-events.js';
import { named, Ref, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { RUN_ATTEMPTS } from '../../jobs/automation-runs.js';
import { CompanySchema } from '../companies/schemas.js';
import { ContactSchema } from '../contacts/schemas.js';
import { DealSchema, DealStageSchema } from '../deals/schemas.js';
import { ImportSchema } from '../imports/schemas.js';
import { TaskSchema } from '../tasks/schemas.js';
import { NoteSchema } from '../notes/schemas.js';
import { LEGACY_SIGNATURE_UNTIL, WEBHOOK_SECRET_OVERLAP_MS, WEBHOOK_TIMEOUT_MS } from './webhook.js';

/** What each event's `data` holds (a Record over the event names: a new trigger without its entry fails to compile). */
const EVENTS: Record<CrmEventName, { data: TSchema; summary: string }> = {
  'company.created': { data: Ref(CompanySchema), summary: 'A company was created (`data`: the company).' },
  'company.updated': { data: Ref(CompanySchema), summary: 'A company was changed (`data`: the company after the change).' },
  'company.deleted': {
    data: Ref(CompanySchema),
    summary: 'A company was deleted (`data`: as it was; its contacts went with it, without a `contact.deleted` each).',
  },
  'contact.created': { data: Ref(ContactSchema), summary: 'A contact was created (`data`: the contact).' },
  'contact.updated': { data: Ref(ContactSchema), summary: 'A contact was changed (`data`: the contact after the change).' },
  'contact.deleted': { data: Ref(ContactSchema), summary: 'A contact was deleted (`data`: as it was).' },
  'import.finished': { data: Ref(ImportSchema), summary: 'A CSV import ended, whatever its outcome (`data`: the import).' },
  'deal.stage_changed': {
    data: Type.Intersect([
      Ref(DealSchema),
      Type.Object({ previous_stage: Ref(DealStageSchema, { description: 'The stage the deal left.' }) }),
    ]),
    summary: 'A deal changed stage (`data`: the deal after the move, with `previous_stage`).',
  },
  'task.completed': { data: Ref(TaskSchema), summary: 'A task became completed (`data`: the task).' },
  'note.created': { data: Ref(NoteSchema), summary: 'A note was written (`data`: the note with its targets).' },
};

/** `company.created` → `CompanyCreated`. */
const pascal = (event: string) =>
  event
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

/** The body of one event's deliveries (and a run's `payload`): a named component per event, tagged by `event`. */
const eventSchema = (event: CrmEventName) =>
  Type.Object(
    {
      event: Type.Literal(event),
      organization_id: Uuid({ description: 'The workspace the event happened in.' }),
      data: EVENTS[event].data,
      occurred_at: Timestamp({ description: 'When the change was made (the same on every retry of one event).' }),
      test: Type.Optional(
        Type.Boolean({ description: 'Only on deliveries of the test endpoint (true); their `data` is what the test request gave.' }),
      ),
    },
    { ...named(`${pascal(event)}Event`), description: EVENTS[event].summary },
  );

const EVENT_NAMES = Object.keys(EVENTS) as CrmEventName[];

const header = (name: string, description: string, required: boolean, extra: Record<string, unknown> = {}) => ({
  name,
  in: 'header',
  required,
  description,
  schema: { type: 'string' },
  ...extra,
});

const overlapHours = WEBHOOK_SECRET_OVERLAP_MS / 3_600_000;

/** The headers every delivery carries (Standard Webhooks, plus the deprecated signature until its end date). */
const DELIVERY_HEADERS = [
  header(
    'webhook-id',
    "The event's id (as in the change feed, `GET …/events/`; a test run's own id): the same on every retry of one event, so a " +
      'receiver drops duplicates by it (Standard Webhooks). Two rules of one workspace on one event send the same id.',
    true,
  ),
  header(
    'webhook-timestamp',
    'Unix seconds of this attempt. Verifiers refuse one more than 5 minutes from now, so a captured delivery does not replay.',
    true,
  ),
  header(
    'webhook-signature',
    'Only when the rule has a secret: `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with ' +
      "the `whsec_` secret's base64-decoded bytes (another secret: its UTF-8 bytes). For " +
      `${overlapHours} hours after a rotation, two signatures separated by a space (the new secret's, then the old one's). ` +
      'Verify with any Standard Webhooks library, e.g. `standardwebhooks` on npm.',
    false,
  ),
  header(
    'X-Webhook-Signature',
    `Deprecated, sent until ${LEGACY_SIGNATURE_UNTIL} and then removed: \`sha256=<hex HMAC-SHA256 of the body>\` with the ` +
      'current secret, when the rule has one. It dates nothing, so a captured delivery replays: verify `webhook-signature`.',
    false,
    { deprecated: true },
  ),
  header('X-Webhook-Event', 'The event name, as in the body.', true),
  header('X-Webhook-Delivery', 'Equal to `webhook-id`.', true),
];

const RESPONSES = {
  '2XX': { description: 'Received: the run becomes `success`. The answer body is ignored.' },
  default: {
    description:
      `A timeout (${WEBHOOK_TIMEOUT_MS / 1000} s), a refused connection, 408, 429 or 5xx is retried with backoff ` +
      `(${RUN_ATTEMPTS} attempts in all); a redirect (not followed) or another 4xx fails the run at once.`,
  },
};

/** The OpenAPI 3.1 `webhooks` section: one POST per trigger event, named like the event. */
export function webhooksDocument(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_NAMES.map((event) => [
      event,
      {
        post: {
          operationId: `${pascal(event).charAt(0).toLowerCase()}${pascal(event).slice(1)}Webhook`,
          tags: ['webhooks'],
          summary: EVENTS[event].summary,
          description:
            `Sent to the \`url\` of each active webhook rule whose trigger is \`${event}\`, by the background worker once the ` +
            'change has committed, as `POST` with `Content-Type: application/json` and `User-Agent: WorkspaceCRM-Webhook/1.0`.',
          security: [],
          parameters: DELIVERY_HEADERS,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${pascal(event)}Event` } } },
          },
          responses: RESPONSES,
        },
      },
    ]),
  );
}

/** The named schemas of the deliveries' bodies, for app.addSchema (after the records they refer to). */
export const WEBHOOK_SCHEMAS = EVENT_NAMES.map(eventSchema);
