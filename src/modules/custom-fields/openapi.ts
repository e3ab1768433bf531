// A workspace's own OpenAPI document: the static one with each record's `custom_fields` (answer, create and update
// bodies) replaced by the workspace's active fields as typed properties, so a client generated from it names them.
import { createHash } from 'node:crypto';
import type { TenantDb } from '../../db/tenant-scope.js';
import { keepBounded } from '../../lib/bounded-map.js';
import {
  CUSTOM_OBJECTS,
  DECIMAL_PATTERN,
  toCustomField,
  type CustomField,
  type CustomObject,
} from '../../records/custom-fields/definitions.js';

type Schema = Record<string, unknown>;
type Document = { components?: { schemas?: Record<string, Schema> } } & Record<string, unknown>;

/** The component name of each record type's answer; `<Name>Create` and `<Name>Update` are its bodies. */
const COMPONENTS: Record<CustomObject, string> = { company: 'Company', contact: 'Contact', deal: 'Deal', task: 'Task' };

/** The JSON schema of a value of `field` (not null). */
function valueSchema(field: CustomField): Schema {
  const values = field.options.map((option) => option.value);
  switch (field.type) {
    case 'text':
      return { type: 'string', maxLength: 1000 };
    case 'long_text':
      return { type: 'string', maxLength: 65536 };
    case 'email':
      return { type: 'string', format: 'email', maxLength: 254 };
    case 'url':
      return { type: 'string', format: 'uri', maxLength: 2048 };
    case 'number':
      return { type: 'number' };
    case 'decimal':
      return { type: 'string', pattern: DECIMAL_PATTERN };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'datetime':
      return { type: 'string', format: 'date-time' };
    case 'select':
      return { type: 'string', enum: values };
    case 'multi_select':
      return { type: 'array', items: { type: 'string', enum: values }, uniqueItems: true };
    case 'member':
      return { type: 'string', format: 'uuid', description: 'The user id of a member of this workspace.' };
  }
}

const describe = (field: CustomField) =>
  `${field.label} (\`${field.type}\`${field.required ? ', required' : ''}).${field.description ? ` ${field.description}` : ''}`;

/** A field's property: nullable unless `nonNull` (a required field in a write body). */
const property = (field: CustomField, nonNull: boolean): Schema =>
  nonNull
    ? { ...valueSchema(field), description: describe(field) }
    : { anyOf: [valueSchema(field), { type: 'null' }], description: describe(field) };

/** The typed `custom_fields` of a record answer, a create body or an update body. */
function customFieldsSchema(fields: readonly CustomField[], use: 'record' | 'create' | 'update'): Schema {
  const properties = Object.fromEntries(fields.map((field) => [field.key, property(field, use !== 'record' && field.required)]));
  const required =
    use === 'record' ? fields.map((field) => field.key) : use === 'create' ? fields.filter((f) => f.required).map((f) => f.key) : [];
  const descriptions = {
    record: "This workspace's custom fields of the record type: every one, null where the record holds no value.",
    create: 'Custom fields by key; the required ones must be given. An unknown key answers 400.',
    update: "Custom fields by key, merged into the record's; null clears one (not a required one).",
  };
  return {
    type: 'object',
    description: descriptions[use],
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/** `document` (a copy of the static one) with the typed custom fields of `fields` (active ones, by record type). */
export function workspaceDocument(staticDocument: object, fields: Record<CustomObject, CustomField[]>): Document {
  const document = structuredClone(staticDocument) as Document;
  const schemas = document.components?.schemas ?? {};
  for (const object of CUSTOM_OBJECTS) {
    const name = COMPONENTS[object];
    const own = fields[object];
    for (const [component, use] of [
      [name, 'record'],
      [`${name}Create`, 'create'],
      [`${name}Update`, 'update'],
    ] as const) {
      const schema = schemas[component];
      const properties = schema?.properties as Record<string, Schema> | undefined;
      if (!schema || !properties?.custom_fields) continue;
      properties.custom_fields = customFieldsSchema(own, use);
      // The static examples show made-up fields: this workspace's examples show its own, unset.
      for (const example of (schema.examples as Array<Record<string, unknown>> | undefined) ?? []) {
        if (example && typeof example === 'object' && 'custom_fields' in example) {
          example.custom_fields = Object.fromEntries(own.map((field) => [field.key, null]));
        }
      }
      if (use === 'create' && own.some((field) => field.required)) {
        schema.required = [...new Set([...((schema.required as string[] | undefined) ?? []), 'custom_fields'])];
      }
    }
  }
  // Every record's map is typed now: the static union of value types is no longer referred to.
  delete schemas.CustomFieldValue;
  return document;
}

/** Documents of recent workspaces, as JSON text, each with the signature of the definitions it was built from. */
const cache = new Map<string, { signature: string; text: string }>();
const CACHED_WORKSPACES = 100;

/**
 * The workspace's document as JSON text. Its definitions are read on every request (one small indexed read) and the
 * built document is reused while they are the same: any change of a definition, in any process, changes the signature.
 */
export async function workspaceDocumentText(db: TenantDb, organizationId: string, staticDocument: () => object): Promise<string> {
  const rows = await db.customFieldDefinition.findMany({
    where: { archivedAt: null },
    orderBy: [{ position: 'asc' }, { createdAt: 'asc' }],
    select: {
      id: true,
      object: true,
      key: true,
      label: true,
      type: true,
      required: true,
      options: true,
      description: true,
      archivedAt: true,
    },
  });
  const signature = createHash('sha256').update(JSON.stringify(rows)).digest('base64url');
  const hit = cache.get(organizationId);
  if (hit?.signature === signature) return hit.text;
  const fields = Object.fromEntries(CUSTOM_OBJECTS.map((object) => [object, [] as CustomField[]])) as Record<CustomObject, CustomField[]>;
  for (const row of rows) fields[row.object as CustomObject]?.push(toCustomField(row));
  const text = JSON.stringify(workspaceDocument(staticDocument(), fields));
  // A hit above is re-inserted on rebuild only: the oldest build goes first.
  keepBounded(cache, organizationId, { signature, text }, CACHED_WORKSPACES);
  return text;
}
