// The custom fields of records a read statement returns raw, shaped as the API shows them by this process from the
// definitions the statement names by their stamp: the shaping in SQL rebuilt each row's jsonb twice.
import type pg from 'pg';
import { keepBounded } from '../lib/bounded-map.js';
import { customFieldDefinitionsStatement, definitionsStamp, definitionsStampSql } from './custom-field-definitions.js';

/** The jsonb column of a record's custom field values (keyed by field key), which writes merge rather than replace. */
export const CUSTOM_FIELDS = 'custom_fields';

/** The column a read statement names the workspace's definitions by (their stamp, computed once per statement). */
export const CUSTOM_FIELDS_STAMP = 'custom_fields_stamp';

/**
 * The read list's columns of the custom fields of `table`'s rows (record type `object`, workspace `$1`): the stored
 * values, and the stamp of the definitions in the statement's own snapshot (an uncorrelated subquery: once per
 * statement), which `shapeCustomFields` shapes them by.
 */
export const rawCustomFieldsSql = (table: string, object: string) =>
  `${table}.${CUSTOM_FIELDS} AS ${CUSTOM_FIELDS}, ${definitionsStampSql(`'${object}'`)} AS ${CUSTOM_FIELDS_STAMP}`;

/** What shapes one record type's values: its active keys in jsonb's key order, and its archived keys. */
interface Shape {
  stamp: string;
  active: readonly string[];
  activeKeys: ReadonlySet<string>;
  archived: ReadonlySet<string>;
}

/** Workspaces' record types kept at most (the least recently shaped go first): a bound on the process's memory. */
const KEPT = 1000;
const shapes = new Map<string, Shape>();

/**
 * jsonb's order of object keys (shorter first, then byte by byte), which the API's `custom_fields` has always had and
 * writes, shaped by the database, still answer with: a record reads the same from a write and from a list.
 */
function jsonbKeyOrder(a: string, b: string): number {
  return Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function shapeOf(stamp: string, definitions: readonly Record<string, unknown>[]): Shape {
  const active = definitions.filter((row) => row.archived_at === null).map((row) => String(row.key));
  active.sort(jsonbKeyOrder);
  const archived = new Set(definitions.filter((row) => row.archived_at !== null).map((row) => String(row.key)));
  return { stamp, active, activeKeys: new Set(active), archived };
}

/**
 * The values as the API shows them: every active field, null where the row holds no value; no archived field's value
 * (kept for a restore); a value under a key of no definition as stored. What `crm_custom_field_template(…) ||
 * (values - crm_custom_field_archived(…))` gives.
 */
function shaped(shape: Shape, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let stored = 0;
  for (const key of shape.active) {
    // Own keys only: a field may be named as an Object.prototype member (`constructor`).
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    if (value === undefined) out[key] = null;
    else {
      out[key] = value;
      stored += 1;
    }
  }
  // Usually every stored key is an active field's; else the others are sorted in, archived ones left out.
  const keys = Object.keys(values);
  if (keys.length === stored) return out;
  const others = keys.filter((key) => !shape.activeKeys.has(key) && !shape.archived.has(key));
  if (others.length === 0) return out;
  const all: Record<string, unknown> = {};
  for (const key of [...shape.active, ...others].sort(jsonbKeyOrder)) all[key] = Object.hasOwn(out, key) ? out[key] : values[key];
  return all;
}

/**
 * Shapes the custom fields of `rows` in place, their `CUSTOM_FIELDS_STAMP` made undefined, which every serializer
 * drops (deleting a property from a row's middle would make it a slow dictionary for every later read and copy). The
 * definitions come from this process's memory while their stamp is the rows' one, else are read on `pool` (the
 * reading statement's pool or transaction: a batch shapes by its own writes), so they are never older than the
 * statement's.
 */
export async function shapeCustomFields<Row extends object>(
  pool: Pick<pg.Pool, 'query'>,
  organizationId: string,
  spec: { readonly customObject?: string },
  rows: Row[],
): Promise<Row[]> {
  const object = spec.customObject;
  if (!object) return rows;
  const key = `${organizationId}:${object}`;
  let shape = shapes.get(key);
  // Read at most once: definitions changed between the statement and the read are shaped by as read.
  let read = false;
  for (const row of rows as Record<string, unknown>[]) {
    const stamp = row[CUSTOM_FIELDS_STAMP];
    row[CUSTOM_FIELDS_STAMP] = undefined;
    if (!shape || (shape.stamp !== stamp && !read)) {
      const definitions = (await pool.query<Record<string, unknown>>(customFieldDefinitionsStatement(organizationId, object))).rows;
      shape = shapeOf(definitionsStamp(definitions), definitions);
      read = true;
      keepBounded(shapes, key, shape, KEPT);
    }
    const values = row[CUSTOM_FIELDS];
    if (values !== null && typeof values === 'object') row[CUSTOM_FIELDS] = shaped(shape, values as Record<string, unknown>);
  }
  return rows;
}
