// The indexes of a custom field that ranges and sorts read: two partial b-trees per (workspace, field) of the types
// that compare by order, built and dropped by a job with CONCURRENTLY, so that no definition change stops record writes.
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
import { RECENCY_ORDER } from '../../db/query-page.js';

/** The value index's name: the definition's id, which never changes (a uuid's 32 hex digits fit the 63-byte limit). */
export const customFieldIndexName = (definitionId: string) => `custom_field_${definitionId.replaceAll('-', '')}`;
/** The recency index's name: the value index's with `_recent`. */
export const customFieldRecencyIndexName = (definitionId: string) => `${customFieldIndexName(definitionId)}_recent`;

/** The definition as the job reads it, as the owner: its workspace and record type beside what the kernel uses. */
interface DefinitionState extends Omit<DefinitionRow, 'id'> {
  organization_id: string;
  object: CustomObject;
  archived_at: Date | null;
}

/**
 * The index statements of an active ordered field, by name. Both are partial on the workspace: the same key may hold
 * another type elsewhere, and only this workspace's rows were checked to cast; the planner proves the predicate from
 * the page statement's `organization_id = $1`, which is unnamed and so planned with its values.
 * - The value index: its key is the query language's own sort of the field, ascending (empty values last, the value,
 *   the id: `sortKeys`), so a range is an index condition on its second column (a rare range's candidates) and an
 *   ascending sort reads the index in order.
 * - The recency index: the default order of a page (`RECENCY_ORDER`), then the value. A range in that order walks it
 *   newest first and checks the value in the index entry itself, so only matches are read from the table (a common
 *   range: its page lies among the newest rows, and the rows between are never visited).
 */
function indexStatements(definitionId: string, row: DefinitionState): Map<string, string> {
  const table = CUSTOM_OBJECT_TABLES[row.object];
  const field = toCustomField({ ...row, id: definitionId });
  const sql = customFieldIndexSql(table, field) as string;
  const keys = sortKeys({ name: `custom.${field.key}`, spec: customFieldSpec(field), sql, indexSql: sql }, false);
  const columns = [...keys.map((key) => `(${key.sql})`), `id`].join(', ');
  // The workspace id comes from the definitions table (a uuid column), never from a request.
  const create = (name: string, key: string) =>
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${table} (${key}) WHERE organization_id = '${row.organization_id}'`;
  return new Map([
    [customFieldIndexName(definitionId), create(customFieldIndexName(definitionId), columns)],
    [customFieldRecencyIndexName(definitionId), create(customFieldRecencyIndexName(definitionId), `${RECENCY_ORDER}, (${sql})`)],
  ]);
}

export interface CustomFieldIndexDeps {
  /** The owner's pool: creating an index needs the table's owner, which the serving role is not. */
  pool: pg.Pool;
}

/**
 * Brings the indexes of one definition in line with it: built while the field is active and ordered, dropped once it
 * is archived or deleted (a restore builds them again). Reads the definition's current state, so a job run late or
 * twice is harmless. A build interrupted by a crash leaves an invalid index (`indisvalid = false`, still updated by
 * writes): it is dropped and built again.
 */
export async function syncCustomFieldIndex(deps: CustomFieldIndexDeps, definitionId: string): Promise<void> {
  const names = [customFieldIndexName(definitionId), customFieldRecencyIndexName(definitionId)];
  const { rows } = await deps.pool.query<DefinitionState>(
    `SELECT organization_id, object, key, label, type, required, options, description, archived_at
     FROM custom_field_definitions WHERE id = $1`,
    [definitionId],
  );
  const { rows: present } = await deps.pool.query<{ name: string; valid: boolean }>(
    `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace`,
    [names],
  );
  const row = rows[0];
  const wanted = row !== undefined && row.archived_at === null && ORDERED_TYPES.has(row.type as CustomFieldType);
  const statements = wanted ? indexStatements(definitionId, row) : undefined;
  for (const name of names) {
    const existing = present.find((index) => index.name === name);
    if (existing && (!wanted || !existing.valid)) await deps.pool.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    if (statements && !existing?.valid) await deps.pool.query(statements.get(name) as string);
  }
}

/** The job of a definition whose indexes may have to change (its create, archive, restore and deletion queue it). */
export function customFieldIndexTasks(deps: CustomFieldIndexDeps): TaskList {
  return {
    [JOBS.customFieldIndex.task]: async (payload) => syncCustomFieldIndex(deps, rowIdOf(payload)),
  };
}
