// The `custom_fields` of records and their write bodies in the static OpenAPI document: a stable map of a union of the
// value types (each workspace's own document, openapi.ts, replaces it with the workspace's typed properties).
import { Type } from '@sinclair/typebox';
import { named } from '../../lib/http-schemas.js';

export const CustomFieldValueSchema = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String())], {
  ...named('CustomFieldValue'),
  description:
    "A custom field value by the field's type: `text`, `long_text`, `email`, `url`, `date` (`YYYY-MM-DD`), `datetime` " +
    '(ISO 8601, answered in UTC), `decimal` (a string such as `"1234.50"`), `select` (an option value) and `member` (a ' +
    'user id) are strings; `number` a number; `boolean` a boolean; `multi_select` an array of distinct option values. ' +
    'The workspace document (`GET /organizations/{id}/openapi.json`) names each field with its own type.',
});

const valueOrNull = () => Type.Unsafe<unknown>({ anyOf: [{ $ref: 'CustomFieldValue' }, { type: 'null' }] });

/** A map of custom field values by key (a record's, or a write body's). */
const customFieldMap = (description: string) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: valueOrNull(), description });

/** A record's `custom_fields`: every active field of its type in the workspace, by key. */
export const customFieldsOfRecord = () =>
  customFieldMap(
    "The workspace's custom fields of this record type, by key: every active field, null where the record holds no " +
      'value (see `listCustomFields`). Archived fields are left out; their values are kept.',
  );

/** The `custom_fields` of a create or PATCH body. */
export const customFieldsOfBody = () =>
  customFieldMap(
    "Some custom fields by key. A create needs every required field; a PATCH merges these into the record's (absent " +
      'keys stay), and null clears one (a required one refuses null). An unknown or archived key, or a value of the ' +
      'wrong type, answers 400 with `errors["custom_fields.<key>"]`.',
  );

export const CUSTOM_FIELD_VALUE_SCHEMAS = [CustomFieldValueSchema];
