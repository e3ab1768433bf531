// The indexes of a custom field that ranges and sorts read: two partial b-trees per (workspace, field) of the types
// that compare by order in workspaces large enough to need them, built and dropped by a job with CONCURRENTLY, so that
// no definition change stops record writes.
import type pg from 'pg';
import { parseCronItems, type ParsedCronItem, type TaskList } from 'graphile-worker';
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

/**
 * The records a workspace holds of a record type before its ordered fields get their indexes. Every partial index
 * costs each statement on its table, whichever workspace it serves (docs/records.md, "Scale"), and below this a
 * workspace's ranges and sorts read all its rows in a few milliseconds without one. Indexes stay until the workspace
 * falls below half of it, so that one near the size does not build and drop them in turn.
 */
export const INDEXED_WORKSPACE_RECORDS = 10_000;

export interface CustomFieldIndexDeps {
  /** The owner's pool: creating an index needs the table's owner, which the serving role is not. */
  pool: pg.Pool;
  /** INDEXED_WORKSPACE_RECORDS unless given (tests index small workspaces). */
  minRecords?: number;
}

/**
 * How many records of `table` the workspace `organization` (SQL) holds, as SQL, counted up to `cap` (SQL) only: an
 * index read of at most `cap` entries.
 */
const recordsUpToSql = (table: string, organization: string, cap: string) =>
  `(SELECT count(*)::int FROM (SELECT FROM ${table} AS r WHERE r.organization_id = ${organization} LIMIT ${cap}) AS counted)`;

/** How many records of `table` the workspace holds, counted up to `cap` only. */
async function recordsUpTo(pool: pg.Pool, table: string, organizationId: string, cap: number): Promise<number> {
  if (cap <= 0) return 0;
  const { rows } = await pool.query<{ n: number }>(`SELECT ${recordsUpToSql(table, '$1', '$2')} AS n`, [organizationId, cap]);
  return rows[0]?.n ?? 0;
}

/**
 * Brings the indexes of one definition in line with it: built while the field is active and ordered and its workspace
 * holds `minRecords` of the record type (kept down to half of that), dropped otherwise (archive, deletion, a workspace
 * that shrank; a restore builds them again). Reads the current state, so a job run late or twice is harmless. Marks
 * the definition `indexed_at` once both exist and are valid, and clears it before dropping them: queries read the
 * indexes' function only while it is set, and the definition's new row version refreshes the processes' caches of
 * definitions. A build interrupted by a crash leaves an invalid index (`indisvalid = false`, still updated by writes):
 * it is dropped and built again.
 */
export async function syncCustomFieldIndex(deps: CustomFieldIndexDeps, definitionId: string): Promise<void> {
  const names = [customFieldIndexName(definitionId), customFieldRecencyIndexName(definitionId)];
  const { rows } = await deps.pool.query<DefinitionState & { indexed_at: Date | null }>(
    `SELECT organization_id, object, key, label, type, required, options, description, archived_at, indexed_at
     FROM custom_field_definitions WHERE id = $1`,
    [definitionId],
  );
  const { rows: present } = await deps.pool.query<{ name: string; valid: boolean }>(
    `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace`,
    [names],
  );
  const row = rows[0];
  const minRecords = deps.minRecords ?? INDEXED_WORKSPACE_RECORDS;
  const ordered = row !== undefined && row.archived_at === null && ORDERED_TYPES.has(row.type as CustomFieldType);
  const built = present.some((index) => index.valid);
  const needed = built ? Math.ceil(minRecords / 2) : minRecords;
  const wanted =
    ordered && (needed <= 0 || (await recordsUpTo(deps.pool, CUSTOM_OBJECT_TABLES[row.object], row.organization_id, needed)) >= needed);
  const mark = (indexed: boolean) =>
    deps.pool.query(`UPDATE custom_field_definitions SET indexed_at = ${indexed ? 'now()' : 'NULL'} WHERE id = $1`, [definitionId]);
  if (!wanted && row?.indexed_at) await mark(false);
  const statements = wanted ? indexStatements(definitionId, row) : undefined;
  for (const name of names) {
    const existing = present.find((index) => index.name === name);
    if (existing && (!wanted || !existing.valid)) await deps.pool.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    if (statements && !existing?.valid) await deps.pool.query(statements.get(name) as string);
  }
  if (wanted && !row.indexed_at) await mark(true);
}

/**
 * Queues the job of every ordered field whose indexes its workspace's size no longer matches: not indexed though the
 * workspace holds `minRecords` of the record type, or indexed though it holds fewer than half of that. What the
 * definitions' own changes do not see: a workspace that grows (or shrinks) by its records. Installation-wide, hence
 * the owner's pool; each count reads at most `minRecords` index entries.
 */
export async function queueResizedCustomFieldIndexes(deps: CustomFieldIndexDeps): Promise<number> {
  const minRecords = deps.minRecords ?? INDEXED_WORKSPACE_RECORDS;
  const half = Math.ceil(minRecords / 2);
  let queued = 0;
  for (const [object, table] of Object.entries(CUSTOM_OBJECT_TABLES)) {
    const counted = (cap: string) => recordsUpToSql(table, 'd.organization_id', cap);
    const { rowCount } = await deps.pool.query(
      `SELECT crm_add_job($1::text, json_build_object('id', d.id), $1 || ':' || d.id, $2::int)
       FROM custom_field_definitions AS d
       WHERE d.object = $3 AND d.archived_at IS NULL AND d.type = ANY($4::text[])
         AND CASE WHEN d.indexed_at IS NULL THEN ${counted('$5')} >= $5 ELSE ${counted('$6')} < $6 END`,
      [JOBS.customFieldIndex.task, JOBS.customFieldIndex.attempts + 1, object, [...ORDERED_TYPES], minRecords, half],
    );
    queued += rowCount ?? 0;
  }
  return queued;
}

/** The task that queues the jobs of fields whose workspace changed size (`queueResizedCustomFieldIndexes`). */
export const CUSTOM_FIELD_INDEX_SWEEP_TASK = 'custom_field_index_sweep';

/**
 * The job of a definition whose indexes may have to change (its create, archive, restore and deletion queue it, and
 * the sweep), and the sweep.
 */
export function customFieldIndexTasks(deps: CustomFieldIndexDeps): TaskList {
  return {
    [JOBS.customFieldIndex.task]: async (payload) => syncCustomFieldIndex(deps, rowIdOf(payload)),
    [CUSTOM_FIELD_INDEX_SWEEP_TASK]: async () => {
      await queueResizedCustomFieldIndexes(deps);
    },
  };
}

/** Every ten minutes; a run missed while all instances were down is run when one starts. */
export const CUSTOM_FIELD_INDEX_CRON_ITEMS: ParsedCronItem[] = parseCronItems([
  {
    task: CUSTOM_FIELD_INDEX_SWEEP_TASK,
    match: '*/10 * * * *',
    identifier: CUSTOM_FIELD_INDEX_SWEEP_TASK,
    options: { backfillPeriod: 600_000 },
  },
]);
