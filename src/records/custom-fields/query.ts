// Custom fields in the query language: `custom.<key>` (and `company.custom.<key>`) resolved to typed SQL over the
// record's `custom_fields` jsonb, with the operators of the field's type; archived fields resolve to nothing.
import type { FieldSpec } from '../filter/fields.js';
import type { FieldResolver } from '../filter/resolve.js';
import { INDEXED_VALUE_FUNCTIONS, type CustomField, type CustomFieldType } from './definitions.js';

export const CUSTOM_PREFIX = 'custom.';
const COMPANY_CUSTOM_PREFIX = `company.${CUSTOM_PREFIX}`;

/** How the query language sees each custom field type. */
const SPEC_TYPES: Record<CustomFieldType, FieldSpec['type']> = {
  text: 'text',
  long_text: 'text',
  email: 'text',
  url: 'text',
  number: 'number',
  decimal: 'decimal',
  boolean: 'boolean',
  date: 'date',
  datetime: 'datetime',
  select: 'enum',
  multi_select: 'multi_select',
  member: 'uuid',
};

/** The SQL cast of a value read as text (`->>`); none for text. Values were checked on write, so the casts hold. */
const CASTS: Partial<Record<FieldSpec['type'], string>> = {
  number: 'numeric',
  decimal: 'numeric',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  uuid: 'uuid',
};

export const customFieldSpec = (field: CustomField): FieldSpec => {
  const type = SPEC_TYPES[field.type];
  return type === 'enum' || type === 'multi_select' ? { type, values: field.options.map((option) => option.value) } : { type };
};

/** The value of `field` in the row of `alias` as SQL (its key matched `^[a-z][a-z0-9_]*$` when created). */
export function customFieldSql(alias: string, field: CustomField): string {
  const spec = customFieldSpec(field);
  if (spec.type === 'multi_select') return `(${alias}.custom_fields -> '${field.key}')`;
  const cast = CASTS[spec.type];
  return cast ? `((${alias}.custom_fields ->> '${field.key}')::${cast})` : `(${alias}.custom_fields ->> '${field.key}')`;
}

/**
 * The value of `field` as its index holds it (ordered types only; src/modules/custom-fields/index-job.ts): IMMUTABLE
 * for the index and LEAKPROOF so that the index serves it under the workspace policy. A plpgsql call per row, so only
 * conditions read through the index use it (a range's candidates, a sort's order); filters compare the plain cast
 * above, which costs a fraction.
 */
export function customFieldIndexSql(alias: string, field: CustomField): string | undefined {
  const indexed = INDEXED_VALUE_FUNCTIONS[field.type];
  return indexed ? `${indexed}(${alias}.custom_fields, '${field.key}')` : undefined;
}

const activeField = (fields: readonly CustomField[], key: string) => fields.find((field) => field.key === key && !field.archived);

/** The custom fields of a query's record type and, for a type linked to a company, the companies' ones. */
export interface QueryCustomFields {
  own: readonly CustomField[];
  company?: { column: string; fields: readonly CustomField[] };
}

/** `base` (standard fields) extended with `custom.<key>` and `company.custom.<key>` of active fields. */
export function withCustomFieldResolver(base: FieldResolver, table: string, custom: QueryCustomFields): FieldResolver {
  return (name) => {
    if (name.startsWith(CUSTOM_PREFIX)) {
      const field = activeField(custom.own, name.slice(CUSTOM_PREFIX.length));
      if (!field) return undefined;
      return {
        name,
        spec: customFieldSpec(field),
        sql: customFieldSql(table, field),
        json: { column: `${table}.custom_fields`, key: field.key },
        // Only while its indexes exist: without them the function costs a plpgsql call per row where the cast does not.
        ...(field.indexed ? { indexSql: customFieldIndexSql(table, field) } : {}),
      };
    }
    if (name.startsWith(COMPANY_CUSTOM_PREFIX) && custom.company) {
      const field = activeField(custom.company.fields, name.slice(COMPANY_CUSTOM_PREFIX.length));
      if (!field) return undefined;
      // The linked company's value, null without a company: one row at most, by the companies' primary key.
      const sql =
        `(SELECT ${customFieldSql('linked_company', field)} FROM companies AS linked_company ` +
        `WHERE linked_company.organization_id = ${table}.organization_id AND linked_company.id = ${table}.${custom.company.column})`;
      return { name, spec: customFieldSpec(field), sql };
    }
    return base(name);
  };
}

/**
 * Whether `name` (`custom.<key>` or `company.custom.<key>`) names an archived field of the record type (or of its
 * company): what lets a saved view that names one answer `view_field_archived` rather than "unknown field".
 */
export function isArchivedCustomField(name: string, custom: QueryCustomFields): boolean {
  const archived = (fields: readonly CustomField[], key: string) =>
    fields.some((field) => field.key === key && field.archived) && !activeField(fields, key);
  if (name.startsWith(CUSTOM_PREFIX)) return archived(custom.own, name.slice(CUSTOM_PREFIX.length));
  if (name.startsWith(COMPANY_CUSTOM_PREFIX) && custom.company) {
    return archived(custom.company.fields, name.slice(COMPANY_CUSTOM_PREFIX.length));
  }
  return false;
}
