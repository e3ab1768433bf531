// TypeBox schemas of the automations area: rules, their per-action settings, runs and the test result.
import { Type, type Static, type TSchema, type TUnion } from '@sinclair/typebox';
import { IgnoredOrganizationFields } from '../crm/record-schemas.js';
import { Email, Nullable, NullableTimestamp, OrganizationParamsSchema, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';

export const TriggerSchema = Type.Union(
  [
    Type.Literal('company.created'),
    Type.Literal('company.updated'),
    Type.Literal('contact.created'),
    Type.Literal('contact.updated'),
    Type.Literal('import.finished'),
  ],
  { description: 'The CRM event that starts the rule.' },
);

export const RunStatusSchema = Type.Union(
  [Type.Literal('queued'), Type.Literal('running'), Type.Literal('success'), Type.Literal('failed'), Type.Literal('skipped')],
  {
    description:
      '`queued` (waiting, also between retries), `running`, `success`, `failed` (see `error_message`), `skipped` ' +
      '(a `send_email` refused by the sending policy, see `SendEmailConfig`; `error_message` says why; not retried).',
  },
);

export const SendEmailConfigSchema = StrictObject(
  {
    to: Type.Array(Email(), {
      minItems: 1,
      maxItems: 50,
      description:
        'Recipients (1-50); one message addressed to all. Without an active default email account of its own, a workspace ' +
        "sends through the installation fallback and may then mail only its own members' addresses.",
    }),
    // No line breaks: the subject becomes a mail header.
    subject: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\r\\n]*$' }),
    body: Type.String({ minLength: 1, maxLength: 10_000, description: 'Plain text; blank lines separate paragraphs.' }),
  },
  {
    title: 'SendEmailConfig',
    description:
      'Sending policy, checked on every run: through the installation fallback account (the workspace has no active ' +
      'default account of its own) every recipient must be a member of the workspace; and a workspace sends at most ' +
      'AUTOMATION_EMAILS_PER_HOUR automation messages in any hour (default 100, test runs included). A run refused by ' +
      'either rule ends `skipped` with an `error_message` saying which.',
  },
);
export type SendEmailConfig = Static<typeof SendEmailConfigSchema>;

export const WebhookConfigInputSchema = StrictObject(
  {
    url: Type.String({
      format: 'uri',
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      maxLength: 2048,
      description: 'http(s) URL without credentials.',
    }),
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Signing secret; stored encrypted, never returned.' })),
  },
  { title: 'WebhookConfigInput' },
);
export type WebhookConfigInput = Static<typeof WebhookConfigInputSchema>;

const WebhookConfigSchema = Type.Object(
  {
    url: Type.String({ description: 'The webhook URL; only its origin for callers without MANAGE_AUTOMATIONS.' }),
    has_secret: Type.Boolean({ description: 'Whether deliveries are signed; the secret itself is never returned.' }),
  },
  { title: 'WebhookConfig' },
);

function createBody<A extends string, C extends TSchema>(actionType: A, config: C, title: string) {
  return StrictObject(
    {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      trigger: TriggerSchema,
      action_type: Type.Literal(actionType),
      action_config: config,
      is_active: Type.Optional(Type.Boolean({ default: true, description: 'Set once at creation (rules cannot be changed).' })),
      ...IgnoredOrganizationFields,
    },
    { title },
  );
}

const SendEmailAutomationCreateSchema = createBody('send_email', SendEmailConfigSchema, 'SendEmailAutomationCreate');
const WebhookAutomationCreateSchema = createBody('webhook', WebhookConfigInputSchema, 'WebhookAutomationCreate');

/**
 * `oneOf` told apart by one property (Ajv's `discriminator`): the body is validated against the branch its tag names
 * only, so errors name that branch's fields. Typed as the TypeBox union it is built from (same static type).
 */
function discriminatedUnion<T extends TUnion>(union: T, propertyName: string, title: string): T {
  const { anyOf, ...rest } = union;
  return { ...rest, title, type: 'object', oneOf: anyOf, discriminator: { propertyName } } as unknown as T;
}

/** One body per action type, so `action_config` is checked against the settings of that action only. */
export const AutomationCreateSchema = discriminatedUnion(
  Type.Union([SendEmailAutomationCreateSchema, WebhookAutomationCreateSchema]),
  'action_type',
  'AutomationCreate',
);
export type AutomationCreate = Static<typeof AutomationCreateSchema>;

export const AutomationSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    trigger: TriggerSchema,
    action_type: Type.Union([Type.Literal('send_email'), Type.Literal('webhook')]),
    action_config: Type.Union([SendEmailConfigSchema, WebhookConfigSchema]),
    is_active: Type.Boolean(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { title: 'Automation' },
);
export type AutomationDto = Static<typeof AutomationSchema>;

const EventPayloadSchema = Type.Object(
  {
    event: TriggerSchema,
    organization_id: Uuid(),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'The record after the change, as the API returns it.' }),
    occurred_at: Timestamp(),
    test: Type.Optional(Type.Boolean({ description: 'true on runs started through the test endpoint.' })),
  },
  { title: 'AutomationEvent', description: 'The event JSON; also the body a webhook receives.' },
);

export const AutomationRunSchema = Type.Object(
  {
    id: Uuid(),
    automation_id: Uuid(),
    trigger: TriggerSchema,
    status: RunStatusSchema,
    payload: EventPayloadSchema,
    error_message: Nullable(Type.String(), { description: 'Why the last attempt failed; null after a success.' }),
    attempts: Type.Integer({ description: 'Attempts made so far (the worker retries transient failures).' }),
    created_at: Timestamp(),
    started_at: NullableTimestamp({ description: 'Start of the latest attempt.' }),
    finished_at: NullableTimestamp({ description: 'Set once the run is success, failed or skipped.' }),
  },
  { title: 'AutomationRun' },
);
export type AutomationRunDto = Static<typeof AutomationRunSchema>;

export const AutomationTestSchema = StrictObject(
  {
    data: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        maxProperties: 100,
        description: 'Sample record sent as the event `data` (default `{}`).',
      }),
    ),
  },
  { title: 'AutomationTest', description: 'Optional; the body may also be omitted.' },
);
export type AutomationTest = Static<typeof AutomationTestSchema>;

export const AutomationTestResultSchema = Type.Object(
  { status: RunStatusSchema, run: AutomationRunSchema },
  { title: 'AutomationTestResult' },
);

export const AutomationParamsSchema = Type.Object({
  ...OrganizationParamsSchema.properties,
  automation_id: Uuid({ description: 'Automation UUID.' }),
});
