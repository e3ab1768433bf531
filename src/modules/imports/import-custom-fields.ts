// An import's custom field cells (`custom.<key>` columns): each read as the JSON value the API takes for the field's
// type and checked by the API's own value checker, so a row fails exactly where a create or PATCH body would.
import { scopeWrites, type ColumnValues, type Queryable } from '../../db/tenant-writes.js';
import { ProblemError } from '../../lib/problem.js';
import { customFieldsOfRows, type CustomField } from '../../records/custom-fields/definitions.js';
import { CUSTOM_PREFIX } from '../../records/custom-fields/query.js';
import { checkCustomValues } from '../../records/custom-fields/values.js';

/** The body column a record's custom field values are written to (merged into the record's on an update). */
const CUSTOM_FIELDS = 'custom_fields';

/** A JSON number as text (the export writes numbers so); anything else stays text and the checker refuses it. */
const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A non-empty cell as the value the API would take for `field`: a number or a boolean parsed (`true`/`false` in any
 * case, as spreadsheets write them), a multi_select's values split on `;` (as the export joins them), text as is.
 * A cell of no such form stays a string, which the checker answers with the API's message.
 */
export function cellValue(field: CustomField | undefined, cell: string): unknown {
  switch (field?.type) {
    case 'number':
      return NUMBER.test(cell.trim()) ? Number(cell) : cell;
    case 'boolean': {
      const lower = cell.trim().toLowerCase();
      return lower === 'true' ? true : lower === 'false' ? false : cell;
    }
    case 'multi_select':
      return cell.split(';').map((value) => value.trim());
    default:
      return cell;
  }
}

/** A row on its way in, as far as its custom field cells go. */
export interface CustomCellsRow {
  body: ColumnValues;
  /** The row's `custom.<key>` cells by key (formula prefix undone; empty for an empty cell). */
  custom?: Record<string, string>;
  error?: string;
  /** The record an upsert updates; none for a create. */
  target?: string;
}

/** The job's custom field columns: the key of each `custom.<key>` field, by column position (null elsewhere). */
export const customKeys = (fields: readonly (string | null)[]) =>
  fields.map((field) => (field?.startsWith(CUSTOM_PREFIX) ? field.slice(CUSTOM_PREFIX.length) : null));

/** The definitions of the job's record type, read on the job's connection when it starts (archived ones too). */
export async function importCustomFields(sql: Queryable, organizationId: string, object: string): Promise<CustomField[]> {
  return customFieldsOfRows(await scopeWrites(sql, organizationId).customFieldDefinitions(object));
}

/** Whether the job writes `custom_fields`: it has custom columns, or a create must be refused for a required field. */
export const writesCustomFields = (fields: readonly (string | null)[], custom: readonly CustomField[]) =>
  customKeys(fields).some((key) => key !== null) || custom.some((field) => field.required && !field.archived);

/**
 * Checks each valid row's custom cells: a create needs every required field (an empty cell is no value), an update
 * (upsert) merges the given keys, an empty cell clearing one (a required one's empty cell leaves it unchanged, as an
 * empty required standard field does). The checked map goes to `body.custom_fields`; a failing row gets its error,
 * each problem named by its column (`custom.<key>: …`). Member values are then looked up once for the batch.
 */
export async function checkCustomCells(
  sql: Queryable,
  organizationId: string,
  custom: readonly CustomField[],
  rows: CustomCellsRow[],
): Promise<void> {
  const byKey = new Map(custom.map((field) => [field.key, field]));
  for (const row of rows) {
    if (row.error) continue;
    const input: Record<string, unknown> = {};
    for (const [key, cell] of Object.entries(row.custom ?? {})) {
      const field = byKey.get(key);
      if (cell !== '') input[key] = cellValue(field, cell);
      else if (row.target && !field?.required) input[key] = null;
    }
    try {
      row.body[CUSTOM_FIELDS] = checkCustomValues(custom, input, !row.target);
    } catch (error) {
      if (!(error instanceof ProblemError) || !error.errors) throw error;
      row.error = Object.entries(error.errors)
        .map(([path, messages]) => `${path.replace(`${CUSTOM_FIELDS}.`, CUSTOM_PREFIX)}: ${messages.join(' ')}`)
        .join('; ');
    }
  }
  const members = custom.filter((field) => field.type === 'member');
  if (members.length === 0) return;
  const memberOf = (row: CustomCellsRow) =>
    members
      .map((field) => [field.key, (row.body[CUSTOM_FIELDS] as Record<string, unknown> | undefined)?.[field.key]] as const)
      .filter((pair): pair is readonly [string, string] => typeof pair[1] === 'string');
  const ids = [...new Set(rows.filter((row) => !row.error).flatMap((row) => memberOf(row).map(([, id]) => id)))];
  if (ids.length === 0) return;
  const { rows: found } = await sql.query<{ user_id: string }>(
    'SELECT user_id::text AS user_id FROM memberships WHERE organization_id = $1 AND user_id = ANY($2::uuid[])',
    [organizationId, ids],
  );
  const known = new Set(found.map((member) => member.user_id));
  for (const row of rows) {
    if (row.error) continue;
    const unknown = memberOf(row).filter(([, id]) => !known.has(id));
    if (unknown.length > 0) row.error = unknown.map(([key]) => `${CUSTOM_PREFIX}${key}: Not a member of this workspace.`).join('; ');
  }
}
