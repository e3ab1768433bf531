// Field names of a filter or a sort resolved to SQL over a record's row: standard fields, `company.<field>` through the
// record's company; custom fields (`custom.<key>`) resolve on top of these (custom-fields/query.ts).
import type { FieldCatalog, FieldSpec } from './fields.js';

/** A field a filter or sort names, resolved: its type and its SQL expression (identifiers from catalogs only). */
export interface ResolvedField {
  name: string;
  spec: FieldSpec;
  /** The value as SQL over the row of the record's table (enums as text; a multi_select its jsonb array). */
  sql: string;
  /**
   * A custom field of the record's own row: its jsonb column and key, so that equality is a containment test
   * (`custom_fields @> {key: value}`) the column's GIN index serves.
   */
  json?: { column: string; key: string };
  /** A column of the record's own row as its own PostgreSQL type (see `FieldSpec.sqlType`). */
  native?: string;
  /** A text of the record's own row that its `search_text` holds (lowercased): a `contains` can use its GIN index. */
  searched?: boolean;
  /**
   * A custom field of the record's own row with an index of its own (ORDERED_TYPES): the value as that index holds
   * it, for the sort's order and a range's candidates (see custom-fields/query.ts).
   */
  indexSql?: string;
}

/** What a record type declares for its queries: its field catalog, its company link, its sort aliases, its search. */
export interface QueryDefinition {
  fields: FieldCatalog;
  /** The column holding the record's company and the companies' catalog (contacts, deals, tasks): `company.<field>`. */
  company?: { column: string; fields: FieldCatalog };
  /** Sort names that stand for several fields (a contact's `name`: last_name, then first_name). */
  sortAliases?: Readonly<Record<string, readonly string[]>>;
  /** Whether the list's `search` applies (the table keeps a `search_text`). */
  search: boolean;
  /** The fields `search_text` is made of (its trigger's), when it is kept. */
  searchColumns?: readonly string[];
}

/** Resolves the field names of one record type (a standard field, `company.<field>`); undefined for an unknown one. */
export type FieldResolver = (name: string) => ResolvedField | undefined;

const ownField = (catalog: FieldCatalog, name: string): FieldSpec | undefined => (Object.hasOwn(catalog, name) ? catalog[name] : undefined);

const readAs = (spec: FieldSpec, column: string) => (spec.type === 'enum' ? `${column}::text` : column);

export function fieldResolver(table: string, definition: QueryDefinition): FieldResolver {
  return (name) => {
    const spec = ownField(definition.fields, name);
    if (spec) {
      const column = `${table}.${name}`;
      const searched = definition.searchColumns?.includes(name) === true;
      return { name, spec, sql: readAs(spec, column), ...(spec.sqlType ? { native: column } : {}), ...(searched ? { searched } : {}) };
    }
    const { company } = definition;
    if (!company || !name.startsWith('company.')) return undefined;
    const field = name.slice('company.'.length);
    const own = ownField(company.fields, field);
    if (!own) return undefined;
    // Null without a company, whatever the company's column holds: never `filled` through the link.
    const { filled: _filled, ...companySpec } = own;
    // The linked company's field, null without a company: one row at most, by the companies' primary key.
    const sql =
      `(SELECT ${readAs(companySpec, `linked_company.${field}`)} FROM companies AS linked_company ` +
      `WHERE linked_company.organization_id = ${table}.organization_id AND linked_company.id = ${table}.${company.column})`;
    return { name, spec: companySpec, sql };
  };
}
