// The field catalog of a record type (field name → type) and what each type admits in a filter and a sort: the one
// place a standard field is declared for queries, views and, later, custom fields and automation conditions.
import type { TenantDb } from '../../db/tenant-scope.js';

/** The types of a record's fields as a filter sees them. */
export type FieldType = 'text' | 'number' | 'decimal' | 'date' | 'datetime' | 'boolean' | 'enum' | 'uuid';

/** One field: its type, and for an enum its values in their declared order (the order an enum sorts in). */
export interface FieldSpec {
  type: FieldType;
  values?: readonly string[];
}

/** A record type's filterable and sortable fields, each a column of the same name. */
export type FieldCatalog = Readonly<Record<string, FieldSpec>>;

export const OPERATORS = [
  'eq',
  'neq',
  'in',
  'not_in',
  'lt',
  'lte',
  'gt',
  'gte',
  'contains',
  'starts_with',
  'is_empty',
  'is_not_empty',
] as const;
export type Operator = (typeof OPERATORS)[number];

const EVERY_TYPE: readonly Operator[] = ['eq', 'neq', 'in', 'not_in', 'is_empty', 'is_not_empty'];
const ORDERED: readonly Operator[] = [...EVERY_TYPE, 'lt', 'lte', 'gt', 'gte'];

/** The operators each type takes (the contract's type rules). */
export const OPERATORS_OF: Readonly<Record<FieldType, readonly Operator[]>> = {
  text: [...EVERY_TYPE, 'contains', 'starts_with'],
  number: ORDERED,
  decimal: ORDERED,
  date: ORDERED,
  datetime: ORDERED,
  boolean: EVERY_TYPE,
  enum: EVERY_TYPE,
  uuid: EVERY_TYPE,
};

/** Operators without a value. */
export const VALUELESS: ReadonlySet<Operator> = new Set(['is_empty', 'is_not_empty']);
/** Operators whose value is an array of the field's values. */
export const LISTS: ReadonlySet<Operator> = new Set(['in', 'not_in']);

/** The SQL type a value of each field type is sent as (a parameter's cast). */
export const SQL_TYPES: Readonly<Record<FieldType, string>> = {
  text: 'text',
  number: 'numeric',
  decimal: 'numeric',
  date: 'date',
  datetime: 'timestamptz',
  boolean: 'boolean',
  enum: 'text',
  uuid: 'uuid',
};

/** The fields every record has: its id and its timestamps. */
export const RECORD_FIELDS = {
  id: { type: 'uuid' },
  archived_at: { type: 'datetime' },
  created_at: { type: 'datetime' },
  updated_at: { type: 'datetime' },
} as const satisfies FieldCatalog;

/** Text fields by name, for catalogs. */
export const textFields = <const K extends string>(...names: K[]) =>
  Object.fromEntries(names.map((name) => [name, { type: 'text' }])) as Record<K, FieldSpec>;

/** An enum field of `values` (in the order it sorts). */
export const enumField = (values: readonly string[]): FieldSpec => ({ type: 'enum', values });

/**
 * The archived-field hook: whether `name`, a field name that record type `object` (`companies`, `contacts`, `deals`,
 * `tasks`) no longer resolves, is one of its archived fields in the workspace `db` is bound to. A saved view keeps the
 * field names it was saved with and is checked again at each use: any name that no longer resolves answers 400
 * `view_field_archived`, and this hook only words the message ("archived" or "no longer a field"). Standard fields are
 * never archived, so for now it knows none; custom fields (`custom.<key>`, archived by their DELETE) plug in here.
 */
export function isArchivedField(_db: TenantDb, _object: string, _name: string): Promise<boolean> {
  return Promise.resolve(false);
}
