// TypeBox schemas of the automations area: rules, their per-action settings, runs and the test result.
import { Type, type Static, type TSchema, type TUnion } from '@sinclair/typebox';
import { IgnoredOrganizationFields } from '../../records/record-schemas.js';
import { TRIGGERS } from '../../lib/crm-events.js';
import {
  DocumentedAs,
  Email,
  named,
  Nullable,
  NullableTimestamp,
  OrganizationParamsSchema,
  Ref,
  StrictObject,
  StringEnum,
  Timestamp,
  Uuid,
} from '../../lib/http-schemas.js';

export const TriggerSchema = StringEnum(TRIGGERS, {
  $id: 'AutomationTrigger',
  description:
    'The event that starts the rule: a company or a contact was created (`*.created`), changed (`*.updated`) or deleted ' +
    '(`*.deleted`, with the record as it was; deleting a company deletes its contacts without a `contact.deleted` each), ' +
    'a CSV import ended (`import.finished`), a deal changed stage (`deal.stage_changed`: the deal plus `previous_stage`) ' +
    'a task was completed (`task.completed`) or a note was written (`note.created`).',
});

export const RunStatusSchema = StringEnum(['queued', 'running', 'success', 'failed', 'skipped'], {
  $id: 'AutomationRunStatus',
  description:
    '`queued` (waiting, also between retries), `running`, `success`, `failed` (see `error_message`), `skipped` ' +
    "(the rule's `condition` did not hold on the event's record, the rule was deleted before the run started, or a " +
    '`send_email` was refused by the sending policy, see `SendEmailConfig`; `error_message` gives the reason; not retried).',
});

export const ActionTypeSchema = StringEnum(['send_email', 'webhook'], {
  $id: 'AutomationActionType',
  description: 'What the rule does: `send_email` (settings: `SendEmailConfig`) or `webhook` (settings: `WebhookConfig`).',
});

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
    ...named('SendEmailConfig'),
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
    secret: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'Signing secret; stored encrypted, never returned. `whsec_<base64>` (Standard Webhooks) signs with the decoded ' +
          'bytes, any other string with its UTF-8 bytes. Omitted (and no `generate_secret`): deliveries are unsigned.',
      }),
    ),
    generate_secret: Type.Optional(
      Type.Boolean({
        description:
          'true: the server generates a `whsec_` secret (32 random bytes) and returns it once, in the answer ' +
          '(`action_config.secret`). Not together with `secret`.',
      }),
    ),
  },
  named('WebhookConfigInput'),
);
export type WebhookConfigInput = Static<typeof WebhookConfigInputSchema>;

const WebhookConfigSchema = Type.Object(
  {
    url: Type.String({ description: 'The webhook URL; only its origin for callers without MANAGE_AUTOMATIONS.' }),
    has_secret: Type.Boolean({ description: 'Whether deliveries are signed; the secret itself is never returned.' }),
    secret: Type.Optional(
      Type.String({ description: 'Only in the answer to a creation with `generate_secret: true`: the generated secret, shown this once.' }),
    ),
  },
  named('WebhookConfig'),
);

export const WebhookSecretRotationSchema = Type.Object(
  {
    secret: Type.String({ description: 'The new `whsec_` secret, shown this once; it signs every delivery from now on.' }),
    previous_secret_expires_at: NullableTimestamp({
      description:
        'Until then the replaced secret signs beside the new one (`webhook-signature` holds both signatures, space-separated); ' +
        'null when the rule had no secret.',
    }),
  },
  {
    ...named('WebhookSecretRotation'),
    description: 'The answer to a secret rotation: the new secret, once, and the end of the 24-hour overlap.',
  },
);
export type WebhookSecretRotation = Static<typeof WebhookSecretRotationSchema>;

/**
 * A rule's `condition`: checked by the service against the trigger's record type (each problem at its path, as a
 * query's `filter`), so the route passes it through; documented as the query language's `Filter`.
 */
const Condition = (extra = '') =>
  DocumentedAs<unknown>(
    { anyOf: [{ $ref: '#/components/schemas/Filter' }, { type: 'null' }] },
    {
      description:
        "A filter tree of the query language (`Filter`) on the event's record: the record after the change, or as it was " +
        'for `*.deleted` (with `company.<field>`, the linked company as it is when the run starts). When it does not hold ' +
        "the run ends `skipped`. Fields of the trigger's record type (company.* triggers: company fields; contact.*: contact " +
        'fields and `company.<field>`; `deal.stage_changed`: deal fields; `task.completed`: task fields), and the ' +
        "workspace's active custom fields of that type as `custom.<key>` (`company.custom.<key>` where `company.<field>` " +
        "is taken), read from the event record's `custom_fields`; a field archived after the rule was saved makes its " +
        'runs `skipped` with the reason. `import.finished` and `note.created` take none (400). A malformed tree answers 400 with the path of each problem in `errors` ' +
        `(\`condition.and.0.field\`). Null or absent: every event of the trigger.${extra}`,
    },
  );

function createBody<A extends string, C extends TSchema>(actionType: A, config: C, name: string) {
  return StrictObject(
    {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      trigger: Ref(TriggerSchema),
      action_type: Type.Literal(actionType),
      action_config: config,
      is_active: Type.Optional(Type.Boolean({ default: true, description: 'Inactive rules queue no runs (PATCH to change).' })),
      condition: Type.Optional(Condition()),
      ...IgnoredOrganizationFields,
    },
    named(name),
  );
}

const SendEmailAutomationCreateSchema = createBody('send_email', Ref(SendEmailConfigSchema), 'SendEmailAutomationCreate');
const WebhookAutomationCreateSchema = createBody('webhook', Ref(WebhookConfigInputSchema), 'WebhookAutomationCreate');

/**
 * `oneOf` of named branches told apart by one property (Ajv's `discriminator`, which follows the `$ref`s): the body is
 * validated against the branch its tag names only, so errors name that branch's fields. The document maps each tag
 * value to its branch (src/plugins/openapi.ts). Typed as the union of the branches.
 */
function discriminatedUnion<const T extends TSchema[]>(branches: T, propertyName: string, name: string): TUnion<T> {
  return {
    ...named(name),
    type: 'object',
    oneOf: branches.map((branch) => Ref(branch)),
    discriminator: { propertyName },
  } as unknown as TUnion<T>;
}

/** One body per action type, so `action_config` is checked against the settings of that action only. */
export const AutomationCreateSchema = discriminatedUnion(
  [SendEmailAutomationCreateSchema, WebhookAutomationCreateSchema],
  'action_type',
  'AutomationCreate',
);
export type AutomationCreate = Static<typeof AutomationCreateSchema>;

export const AutomationUpdateSchema = StrictObject(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    trigger: Type.Optional(Ref(TriggerSchema)),
    action_config: Type.Optional(
      Type.Union([Ref(SendEmailConfigSchema), Ref(WebhookConfigInputSchema)], {
        description:
          "The rule's action settings, replaced whole; of the rule's own `action_type` (which cannot change). A webhook rule " +
          'keeps its signing secret unless `secret` or `generate_secret: true` is given.',
      }),
    ),
    is_active: Type.Optional(Type.Boolean({ description: 'false pauses the rule: events queue no runs for it meanwhile.' })),
    condition: Type.Optional(Condition(' On PATCH, null removes it; a changed `trigger` is checked against the condition the rule keeps.')),
    ...IgnoredOrganizationFields,
  },
  { ...named('AutomationUpdate'), description: 'The fields to change; those left out keep their value.' },
);
export type AutomationUpdate = Static<typeof AutomationUpdateSchema>;

export const AutomationSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    trigger: Ref(TriggerSchema),
    action_type: Ref(ActionTypeSchema),
    action_config: Type.Union([Ref(SendEmailConfigSchema), Ref(WebhookConfigSchema)]),
    is_active: Type.Boolean(),
    condition: DocumentedAs<unknown>(
      { anyOf: [{ $ref: '#/components/schemas/Filter' }, { type: 'null' }] },
      { description: "The filter a run checks on the event's record before acting (see `AutomationCreate`); null: none." },
    ),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { ...named('Automation'), description: 'A rule: when `trigger` happens in the workspace, run the action.' },
);
export type AutomationDto = Static<typeof AutomationSchema>;

const EventPayloadSchema = Type.Object(
  {
    event: Ref(TriggerSchema),
    organization_id: Uuid(),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'The record after the change, as the API returns it.' }),
    occurred_at: Timestamp(),
    test: Type.Optional(Type.Boolean({ description: 'true on runs started through the test endpoint.' })),
  },
  { ...named('AutomationEvent'), description: 'The event JSON; also the body a webhook receives.' },
);

export const AutomationRunSchema = Type.Object(
  {
    id: Uuid(),
    automation_id: Uuid({ description: 'The rule; kept after the rule is deleted (the rule then answers 404).' }),
    event_id: Nullable(Uuid(), {
      description: "The event the run was queued for (its id in the change feed, and its webhook's `webhook-id`); null on test runs.",
    }),
    trigger: Ref(TriggerSchema),
    status: Ref(RunStatusSchema),
    payload: Ref(EventPayloadSchema),
    error_message: Nullable(Type.String(), {
      description: 'Why the last attempt failed, or why the run was skipped (its reason); null after a success.',
    }),
    attempts: Type.Integer({ description: 'Attempts made so far (the worker retries transient failures).' }),
    created_at: Timestamp(),
    started_at: NullableTimestamp({ description: 'Start of the latest attempt.' }),
    finished_at: NullableTimestamp({ description: 'Set once the run is success, failed or skipped.' }),
  },
  { ...named('AutomationRun'), description: 'One execution of a rule for one event.' },
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
  { ...named('AutomationTest'), description: 'Optional; the body may also be omitted.' },
);
export type AutomationTest = Static<typeof AutomationTestSchema>;

export const AutomationTestResultSchema = Type.Object(
  { status: Ref(RunStatusSchema), run: Ref(AutomationRunSchema) },
  named('AutomationTestResult'),
);

export const AutomationParamsSchema = Type.Object({
  ...OrganizationParamsSchema.properties,
  automation_id: Uuid({ description: 'Automation UUID.' }),
});

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const AUTOMATION_SCHEMAS = [
  TriggerSchema,
  RunStatusSchema,
  ActionTypeSchema,
  SendEmailConfigSchema,
  WebhookConfigInputSchema,
  WebhookConfigSchema,
  WebhookSecretRotationSchema,
  SendEmailAutomationCreateSchema,
  WebhookAutomationCreateSchema,
  AutomationCreateSchema,
  AutomationUpdateSchema,
  AutomationSchema,
  EventPayloadSchema,
  AutomationRunSchema,
  AutomationTestSchema,
  AutomationTestResultSchema,
];
