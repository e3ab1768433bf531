// Request and response schemas of the custom field definitions (`/custom-fields/`).
import { Type, type Static } from '@sinclair/typebox';
import { named, Nullable, OrganizationParamsSchema, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { ArchivedQuery } from '../../records/activity-schemas.js';
import {
  CUSTOM_FIELD_TYPES,
  CUSTOM_OBJECTS,
  KEY_PATTERN,
  MAX_ACTIVE_FIELDS,
  OPTION_VALUE_PATTERN,
} from '../../records/custom-fields/definitions.js';

export const CustomFieldObjectSchema = StringEnum(CUSTOM_OBJECTS, {
  $id: 'CustomFieldObject',
  description: 'The record type a custom field belongs to.',
});

export const CustomFieldTypeSchema = StringEnum(CUSTOM_FIELD_TYPES, {
  $id: 'CustomFieldType',
  description:
    'The type of a custom field, which fixes its JSON value: `text` (≤ 1,000 characters), `long_text` (≤ 65,536), ' +
    '`number` (a finite JSON number), `decimal` (a string `^-?\\d{1,15}(\\.\\d{1,6})?$`, kept exactly), `boolean`, ' +
    '`date` (`YYYY-MM-DD`), `datetime` (ISO 8601 with a time zone, answered in UTC), `email`, `url` (http or https), ' +
    '`select` (one option value), `multi_select` (an array of distinct option values), `member` (the user id of a ' +
    'member of the workspace).',
});

export const CustomFieldOptionSchema = Type.Object(
  {
    value: Type.String({ pattern: OPTION_VALUE_PATTERN, description: 'What records hold; unique within the field.' }),
    label: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { ...named('CustomFieldOption'), additionalProperties: false },
);

const Options = Type.Array(Ref(CustomFieldOptionSchema), {
  maxItems: 200,
  description:
    'The options of a `select` or `multi_select` field, in their order (the order a select sorts in); at least one, ' +
    'values unique. Other types take none (400). Removing an option that records hold answers 409 `option_in_use`.',
});

export const CustomFieldSchema = Type.Object(
  {
    id: Uuid(),
    object: Ref(CustomFieldObjectSchema),
    key: Type.String({ description: "The field's name in `custom_fields`, queries (`custom.<key>`) and CSV columns; immutable." }),
    label: Type.String(),
    type: Ref(CustomFieldTypeSchema),
    required: Type.Boolean({ description: 'Creates must give a value and no write may clear it.' }),
    options: Type.Array(Ref(CustomFieldOptionSchema), { description: "A select's options in order; empty for other types." }),
    position: Type.Integer({ description: "Where the field goes among its record type's fields (ascending)." }),
    description: Nullable(Type.String()),
    archived_at: Nullable(Timestamp(), { description: 'When the field was archived (its values are kept); null while active.' }),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { ...named('CustomField') },
);
export type CustomFieldDto = Static<typeof CustomFieldSchema>;

const immutable = (what: string) =>
  Type.Optional(Type.Unknown({ description: `Immutable: a PATCH naming \`${what}\` answers 400, whatever its value.` }));

export const CustomFieldCreateSchema = Type.Object(
  {
    object: Ref(CustomFieldObjectSchema),
    key: Type.String({
      pattern: KEY_PATTERN,
      description: `Unique per record type in the workspace, archived fields included (400 otherwise); at most ${MAX_ACTIVE_FIELDS} active fields per record type.`,
    }),
    label: Type.String({ minLength: 1, maxLength: 100 }),
    type: Ref(CustomFieldTypeSchema),
    required: Type.Optional(Type.Boolean({ description: 'Default false. Existing records without a value keep none.' })),
    options: Type.Optional(Options),
    position: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, description: 'Default: after the last field.' })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  },
  { ...named('CustomFieldCreate'), additionalProperties: false },
);
export type CustomFieldCreate = Static<typeof CustomFieldCreateSchema>;

export const CustomFieldUpdateSchema = Type.Object(
  {
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    required: Type.Optional(Type.Boolean()),
    options: Type.Optional(Options),
    position: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    key: immutable('key'),
    type: immutable('type'),
    object: immutable('object'),
  },
  { ...named('CustomFieldUpdate'), additionalProperties: false, description: 'Any subset; absent fields stay unchanged.' },
);
export type CustomFieldUpdate = Static<typeof CustomFieldUpdateSchema>;

export const CustomFieldListQuerySchema = Type.Object({
  object: Type.Optional(Ref(CustomFieldObjectSchema, { description: 'Only the fields of this record type.' })),
  archived: ArchivedQuery,
});
export type CustomFieldListQuery = Static<typeof CustomFieldListQuerySchema>;

export const CustomFieldParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ field_id: Type.String({ description: 'Custom field UUID (a malformed one answers 404).' }) }),
]);

/** A workspace's OpenAPI document (its shape is OpenAPI 3.1's own, not restated here). */
export const OpenApiDocumentSchema = Type.Object(
  { openapi: Type.String({ description: '`3.1.0`' }) },
  { ...named('OpenApiDocument'), additionalProperties: true, description: 'An OpenAPI 3.1 document.' },
);

export const CUSTOM_FIELD_SCHEMAS = [
  OpenApiDocumentSchema,
  CustomFieldObjectSchema,
  CustomFieldTypeSchema,
  CustomFieldOptionSchema,
  CustomFieldSchema,
  CustomFieldCreateSchema,
  CustomFieldUpdateSchema,
];
