// Request and response schemas of the workspace API key endpoints, each a named OpenAPI component.
import { Type, type Static } from '@sinclair/typebox';
import {
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

/** The capabilities a key may hold: the CRM ones, never member, settings or deletion rights. */
export const API_KEY_CAPABILITIES = ['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS'] as const;
export type ApiKeyCapability = (typeof API_KEY_CAPABILITIES)[number];

export const ApiKeyCapabilitySchema = StringEnum(API_KEY_CAPABILITIES, {
  $id: 'ApiKeyCapability',
  description:
    'A CRM capability an API key can be given: `VIEW_CRM` (read companies, contacts, automations and runs), `MANAGE_CRM` ' +
    '(write companies and contacts), `MANAGE_AUTOMATIONS` (write automations).',
});

export const ApiKeySchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the key (`crm_live_` and 8 more), to tell keys apart.' }),
    capabilities: Type.Array(Ref(ApiKeyCapabilitySchema)),
    created_by: Nullable(Uuid({ description: 'The user who created the key (null once that user is deleted).' })),
    created_at: Timestamp(),
    last_used_at: NullableTimestamp({ description: 'Last authenticated request (updated at most once a minute).' }),
    expires_at: NullableTimestamp({ description: 'Refused from this instant on; null: never expires.' }),
  },
  { ...named('ApiKey'), description: 'A workspace API key; the secret itself is never shown again.' },
);
export type ApiKeyDto = Static<typeof ApiKeySchema>;

export const ApiKeyCreatedSchema = Type.Object(
  {
    ...ApiKeySchema.properties,
    key: Type.String({ description: 'The key, shown only in this answer: `crm_live_` then 43 base64url characters.' }),
  },
  { ...named('ApiKeyCreated'), description: 'A new API key with its secret, shown once.' },
);
export type ApiKeyCreatedDto = Static<typeof ApiKeyCreatedSchema>;

export const ApiKeyCreateSchema = StrictObject(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    capabilities: Type.Array(Ref(ApiKeyCapabilitySchema), {
      minItems: 1,
      uniqueItems: true,
      description: 'A non-empty subset of VIEW_CRM, MANAGE_CRM, MANAGE_AUTOMATIONS.',
    }),
    expires_at: Type.Optional(Timestamp({ description: 'Any future instant; omitted: the key never expires.' })),
  },
  named('ApiKeyCreate'),
);
export type ApiKeyCreate = Static<typeof ApiKeyCreateSchema>;

export const ApiKeyParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ key_id: Type.String({ description: 'API key UUID.' }) }),
]);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const API_KEY_SCHEMAS = [ApiKeyCapabilitySchema, ApiKeySchema, ApiKeyCreatedSchema, ApiKeyCreateSchema];
