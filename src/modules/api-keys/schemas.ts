// Request and response schemas of the workspace API key endpoints, each a named OpenAPI component.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, NullableTimestamp, OrganizationParamsSchema, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';

/** The capabilities a key may hold: the CRM ones, never member, settings or deletion rights. */
export const API_KEY_CAPABILITIES = ['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS'] as const;
export type ApiKeyCapability = (typeof API_KEY_CAPABILITIES)[number];

export const ApiKeyCapabilitySchema = Type.Unsafe<ApiKeyCapability>({
  type: 'string',
  enum: [...API_KEY_CAPABILITIES],
  $id: 'ApiKeyCapability',
  title: 'ApiKeyCapability',
  description: 'A CRM capability an API key can be given.',
});

export const ApiKeySchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the key (`crm_live_` and 8 more), to tell keys apart.' }),
    capabilities: Type.Array(Type.Ref(ApiKeyCapabilitySchema)),
    created_by: Nullable(Uuid({ description: 'The user who created the key (null once that user is deleted).' })),
    created_at: Timestamp(),
    last_used_at: NullableTimestamp({ description: 'Last authenticated request (updated at most once a minute).' }),
    expires_at: NullableTimestamp({ description: 'Refused from this instant on; null: never expires.' }),
  },
  { $id: 'ApiKey', title: 'ApiKey', description: 'A workspace API key; the secret itself is never shown again.' },
);
export type ApiKeyDto = Static<typeof ApiKeySchema>;

export const ApiKeyCreatedSchema = Type.Object(
  {
    ...ApiKeySchema.properties,
    key: Type.String({ description: 'The key, shown only in this answer: `crm_live_` then 43 base64url characters.' }),
  },
  { $id: 'ApiKeyCreated', title: 'ApiKeyCreated', description: 'A new API key with its secret, shown once.' },
);
export type ApiKeyCreatedDto = Static<typeof ApiKeyCreatedSchema>;

export const ApiKeyCreateSchema = StrictObject(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    capabilities: Type.Array(Type.String({ enum: [...API_KEY_CAPABILITIES] }), {
      minItems: 1,
      uniqueItems: true,
      description: 'A non-empty subset of VIEW_CRM, MANAGE_CRM, MANAGE_AUTOMATIONS.',
    }),
    expires_at: Type.Optional(Timestamp({ description: 'Any future instant; omitted: the key never expires.' })),
  },
  { $id: 'ApiKeyCreate', title: 'ApiKeyCreate' },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreateSchema>;

export const ApiKeyParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ key_id: Type.String({ description: 'API key UUID.' }) }),
]);

/** The named components of this module, registered once with the app. */
export const API_KEY_SCHEMAS = [ApiKeyCapabilitySchema, ApiKeySchema, ApiKeyCreatedSchema];
