// The custom fields of a workspace's record type as the kernel reads them: their types, keys and options, loaded from
// `custom_field_definitions` through the tenant-scoped client or the tenant-bound page reader.
import type { TenantPages } from '../../db/tenant-pages.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';

/** The record types that take custom fields (notes do not), by the `object` name the API uses. */
export const CUSTOM_OBJECTS = ['company', 'contact', 'deal', 'task'] as const;
export type CustomObject = (typeof CUSTOM_OBJECTS)[number];

export const CUSTOM_FIELD_TYPES = [
  'text',
  'long_text',
  'number',
  'decimal',
  'boolean',
  'date',
  'datetime',
  'email',
  'url',
  'select',
  'multi_select',
  'member',
] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];

/**
 * The types a range (`lt`, `gte`, …) or a sort compares by order, each with the SQL function that reads its value
 * from the map (migration `custom_field_indexes`): each such field gets an index of its own on that function
 * (src/modules/custom-fields/index-job.ts). Equality of the others is a containment test the records table's GIN
 * index serves.
 */
export const INDEXED_VALUE_FUNCTIONS: Readonly<Partial<Record<CustomFieldType, string>>> = {
  number: 'crm_custom_number',
  decimal: 'crm_custom_number',
  date: 'crm_custom_date',
  datetime: 'crm_custom_timestamptz',
};
export const ORDERED_TYPES: ReadonlySet<CustomFieldType> = new Set(Object.keys(INDEXED_VALUE_FUNCTIONS) as CustomFieldType[]);

/** The types whose definition carries `options`. */
export const SELECT_TYPES: ReadonlySet<CustomFieldType> = new Set(['select', 'multi_select']);

export const KEY_PATTERN = '^[a-z][a-z0-9_]{0,39}$';
export const OPTION_VALUE_PATTERN = '^[a-z0-9_]{1,40}$';
export const DECIMAL_PATTERN = '^-?\\d{1,15}(\\.\\d{1,6})?$';
/** Active fields per record type of a workspace; creating or restoring past it answers 400. */
export const MAX_ACTIVE_FIELDS = 100;

export interface CustomFieldOption {
  value: string;
  label: string;
}

/** One definition as the kernel uses it. */
export interface CustomField {
  id: string;
  key: string;
  label: string;
  type: CustomFieldType;
  required: boolean;
  options: CustomFieldOption[];
  description: string | null;
  archived: boolean;
  /** Whether its own indexes exist (`indexed_at`, set by its job): queries then compile to their function. */
  indexed: boolean;
}

/** The records table of each record type (fixed names, never from a request). */
export const CUSTOM_OBJECT_TABLES: Record<CustomObject, string> = {
  company: 'companies',
  contact: 'contacts',
  deal: 'deals',
  task: 'tasks',
};

/** A definition row as Prisma or the page reader return it. */
export interface DefinitionRow {
  id: string;
  key: string;
  label: string;
  type: string;
  required: boolean;
  options: unknown;
  description: string | null;
  archivedAt?: Date | null;
  archived_at?: Date | string | null;
  indexedAt?: Date | null;
  indexed_at?: Date | string | null;
}

export const toCustomField = (row: DefinitionRow): CustomField => ({
  id: row.id,
  key: row.key,
  label: row.label,
  type: row.type as CustomFieldType,
  required: row.required,
  options: Array.isArray(row.options) ? (row.options as CustomFieldOption[]) : [],
  description: row.description,
  archived: (row.archivedAt ?? row.archived_at ?? null) !== null,
  indexed: (row.indexedAt ?? row.indexed_at ?? null) !== null,
});

/** Every field of `object` in this workspace, archived ones too, in their order. */
export async function loadCustomFields(db: TenantDb | TenantTx, object: CustomObject): Promise<CustomField[]> {
  const rows = await db.customFieldDefinition.findMany({
    where: { object },
    orderBy: [{ position: 'asc' }, { createdAt: 'asc' }],
  });
  return rows.map(toCustomField);
}

/** The fields of definition rows as raw SQL reads them (`customFieldDefinitionsStatement`). */
export const customFieldsOfRows = (rows: readonly Record<string, unknown>[]): CustomField[] =>
  rows.map((row) => toCustomField(row as unknown as DefinitionRow));

/** What reads definitions in one prepared statement: the tenant-bound page reader or writer (`TenantWrites`). */
export type DefinitionsReader = Pick<TenantPages, 'customFieldDefinitions'>;

/**
 * The same through the tenant-bound page reader or writer: one prepared statement, where Prisma's `findMany` costs a
 * record write twice a plain read's CPU (docs/benchmarks.md); the writer's connection is a batch's transaction.
 */
export async function readCustomFields(reader: DefinitionsReader, object: CustomObject): Promise<CustomField[]> {
  return customFieldsOfRows(await reader.customFieldDefinitions(object));
}
