// The index of a custom field that ranges and sorts read: one partial b-tree per (workspace, field) of the types that
// compare by order, built and dropped by a job with CONCURRENTLY, so that no definition change stops record writes.
import type pg from 'pg';
import type { TaskList } from 'graphile-worker';
import { JOBS, rowIdOf } from '../../jobs/queue.js';
import { customFieldIndexSql, customFieldSpec } from '../../records/custom-fields/query.js';
import {
  CUSTOM_OBJECT_TABLES,
  ORDERED_TYPES,
  toCustomField,
  type CustomFieldType,
  type CustomObject,
  type DefinitionRow,
} from '../../records/custom-fields/definitions.js';
import { sortKeys } from '../../records/query-service.js';

/** The index's name: the definition's id, which never changes (a uuid's 32 hex digits fit the 63-byte limit). */
export const customFieldIndexName = (definitionId: string) => `custom_field_${definitionId.replaceAll('-', '')}`;

/** The definition as the job reads it, as the owner: its workspace and record type beside what the kernel uses. */
interface DefinitionState extends Omit<DefinitionRow, 'id'> {
  organization_id: string;
  object: CustomObject;
  archived_at: Date | null;
}

/**
 * The index statement of an active ordered field. Its key is the query language's own sort of the field, ascending
 * (empty values last, the value, the id: `sortKeys`), so a range is an index condition on its second column and an
 * ascending sort reads the index in order. Partial on the workspace: the same key may hold another type elsewhere,
 * and only this workspace's rows were checked to cast; the planner proves the predicate from the page statement's
 * `organization_id = $1`, which is unnamed and so planned with its values.
 */
function indexStatement(name: string, definitionId: string, row: DefinitionState): string {
  const table = CUSTOM_OBJECT_TABLES[row.object];
  const field = toCustomField({ ...row, id: definitionId });
  const sql = customFieldIndexSql(table, field) as string;
  const keys = sortKeys({ name: `custom.${field.key}`, spec: customFieldSpec(field), sql, indexSql: sql }, false);
  const columns = [...keys.map((key) => `(${key.sql})`), `id`].join(', ');
  // The workspace id comes from the definitions table (a uuid column), never from a request.
  return `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${table} (${columns}) WHERE organization_id = '${row.organization_id}'`;
}

export interface CustomFieldIndexDeps {
  /** The owner's pool: creating an index needs the table's owner, which the serving role is not. */
  pool: pg.Pool;
}

/**
 * Brings the index of one definition in line with it: built while the field is active and ordered, dropped once it is
 * archived (a restore builds it again). Reads the definition's current state, so a job run late or twice is
 * harmless. A build interrupted by a crash leaves an invalid index (`indisvalid = false`, still updated by writes):
 * it is dropped and built again.
 */
export async function syncCustomFieldIndex(deps: CustomFieldIndexDeps, definitionId: string): Promise<void> {
  const name = customFieldIndexName(definitionId);
  const { rows } = await deps.pool.query<DefinitionState>(
    `SELECT organization_id, object, key, label, type, required, options, description, archived_at
     FROM custom_field_definitions WHERE id = $1`,
    [definitionId],
  );
  const { rows: present } = await deps.pool.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
    [name],
  );
  const row = rows[0];
  const wanted = row !== undefined && row.archived_at === null && ORDERED_TYPES.has(row.type as CustomFieldType);
  const existing = present[0];
  if (existing && (!wanted || !existing.valid)) await deps.pool.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  if (wanted && !existing?.valid) await deps.pool.query(indexStatement(name, definitionId, row));
}

/** The job of a definition whose index may have to change (its create, archive and restore queue it). */
export function customFieldIndexTasks(deps: CustomFieldIndexDeps): TaskList {
  return {
    [JOBS.customFieldIndex.task]: async (payload) => syncCustomFieldIndex(deps, rowIdOf(payload)),
  };
}
