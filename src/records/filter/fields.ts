// The field catalog of a record type (field name → type) and what each type admits in a filter and a sort: the one
// place a field is declared for queries, views, custom fields and automation conditions.

/** The types of a record's fields as a filter sees them. */
export type FieldType = 'text' | 'number' | 'decimal' | 'date' | 'datetime' | 'boolean' | 'enum' | 'uuid' | 'multi_select';

/**
 * One field: its type, and for an enum (or a multi_select custom field) its values in their declared order (the order
 * an enum sorts in).
 */
export interface FieldSpec {
  type: FieldType;
  values?: readonly string[];
  /**
   * Never null, and for text never empty (the API refuses both): a sort on it needs no empties-last flag, so it is
   * the expression of the column's index and a page walks that index.
   */
  filled?: boolean;
  /**
   * The column's PostgreSQL type where it is no `text` (an enum, a `char(n)`): equality on the record's own row
   * compares the column as that type, so its index serves it and the planner's statistics of the column estimate it
   * (a column cast to text has neither).
   */
  sqlType?: string;
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
  // A set of option values: `contains` one, holds any of (`in`) or none of (`not_in`), empty (no value or `[]`).
  multi_select: ['contains', 'in', 'not_in', 'is_empty', 'is_not_empty'],
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
  multi_select: 'text',
};

/** The fields every record has: its id and its timestamps. */
export const RECORD_FIELDS = {
  id: { type: 'uuid', filled: true },
  archived_at: { type: 'datetime' },
  created_at: { type: 'datetime', filled: true },
  updated_at: { type: 'datetime', filled: true },
} as const satisfies FieldCatalog;

/** Text fields by name, for catalogs. */
export const textFields = <const K extends string>(...names: K[]) =>
  Object.fromEntries(names.map((name) => [name, { type: 'text' }])) as Record<K, FieldSpec>;

/** An enum field of `values` (in the order it sorts), a column of the PostgreSQL enum `sqlType`. */
export const enumField = (values: readonly string[], sqlType: string): FieldSpec => ({ type: 'enum', values, sqlType });
