// Creates and updates of CRM records together with their automation event, in one statement on the shared pool:
// the row and the queued runs of the organization's active rules, with their jobs, commit together (one statement is one
// transaction) in one round trip, without Prisma's per-query compilation. Bound to one organization like the page
// reader: `organization_id = $1` in every part of the statement, tables and columns from the services' `pageTable`
// definitions, request values only as parameters.
import type pg from 'pg';
import type { CrmEventName } from '../lib/crm-events.js';
import { RUN_JOBS_SQL } from '../jobs/queue.js';
import type { PageTable } from './tenant-pages.js';

/** Column values of a write: undefined leaves a column alone (its default on insert), null clears it. */
export type ColumnValues = Record<string, unknown>;

/**
 * The statement's tail: queues one run per active rule of `$1` for the event (its name the last-but-one parameter,
 * the time the last one), whose payload is the event JSON with the written record (`record`, in API shape) as data,
 * and each run's job. A SELECT in WITH runs only when read, hence the job count the final row is filtered on.
 */
function queueRuns(event: string, occurredAt: string): string {
  return (
    `, runs AS (INSERT INTO automation_runs (id, organization_id, automation_id, trigger, payload) ` +
    `SELECT gen_random_uuid(), a.organization_id, a.id, a.trigger, jsonb_build_object('event', ${event}::text, ` +
    `'organization_id', a.organization_id, 'data', to_jsonb(record), 'occurred_at', ${occurredAt}::text) ` +
    `FROM automations a CROSS JOIN record WHERE a.organization_id = $1 AND a.trigger = ${event}::automation_trigger AND a.is_active ` +
    'RETURNING id), ' +
    `jobs AS (SELECT ${RUN_JOBS_SQL} AS queued) ` +
    'SELECT record.* FROM record, jobs WHERE jobs.queued >= 0'
  );
}

/** A pool or one checked-out client (a transaction of the caller's): whatever runs the statements. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** The writer a tenant-scoped service receives: it can only create and change rows of `organizationId`. */
export function scopeWrites(pool: Queryable, organizationId: string) {
  /** The columns of `values` the table's API writes (never `id`), with their parameters after `$1`. */
  function assignments(spec: PageTable<unknown, string>, values: ColumnValues, parameters: unknown[]) {
    return Object.entries(values)
      .filter(([column, value]) => value !== undefined && column !== 'id' && spec.columns.includes(column))
      .map(([column, value]) => ({ column, parameter: `$${parameters.push(value)}` }));
  }
  const eventParameters = (parameters: unknown[], event: CrmEventName) => {
    const name = `$${parameters.push(event)}`;
    return queueRuns(name, `$${parameters.push(new Date().toISOString())}`);
  };

  return {
    /** Inserts the record and queues its event; answers it in API shape. */
    async insert<Row extends pg.QueryResultRow>(spec: PageTable<Row, string>, values: ColumnValues, event: CrmEventName): Promise<Row> {
      const parameters: unknown[] = [organizationId];
      const set = assignments(spec, values, parameters);
      const columns = ['id', 'organization_id', ...set.map((s) => s.column), 'created_at', 'updated_at'];
      const row = ['gen_random_uuid()', '$1', ...set.map((s) => s.parameter), 'now()', 'now()'];
      const text =
        `WITH record AS (INSERT INTO ${spec.table} (${columns.join(', ')}) VALUES (${row.join(', ')}) RETURNING ${spec.selectList})` +
        eventParameters(parameters, event);
      const [inserted] = (await pool.query<Row>(text, parameters)).rows;
      if (!inserted) throw new Error(`INSERT INTO ${spec.table} returned no row`);
      return inserted;
    },
    /** Changes the record's given columns and queues its event; undefined when the organization has no such record. */
    async update<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      id: string,
      values: ColumnValues,
      event: CrmEventName,
      /** Only when the record's updated_at is one of these (an If-Match); undefined when it is not, as when absent. */
      expected?: Date[],
    ): Promise<Row | undefined> {
      const parameters: unknown[] = [organizationId, id];
      const set = assignments(spec, values, parameters).map((s) => `${s.column} = ${s.parameter}`);
      const condition =
        expected === undefined ? '' : ` AND updated_at = ANY($${parameters.push(expected.map((d) => d.toISOString()))}::timestamptz[])`;
      // Strictly later than before, even within one millisecond: updated_at is the record's version (its ETag).
      const text =
        `WITH record AS (UPDATE ${spec.table} SET ${[...set, "updated_at = greatest(now(), updated_at + interval '1 millisecond')"].join(', ')} ` +
        `WHERE organization_id = $1 AND id = $2${condition} RETURNING ${spec.selectList})` +
        eventParameters(parameters, event);
      return (await pool.query<Row>(text, parameters)).rows[0];
    },
    /**
     * Deletes the record (only at one of the `expected` versions, when given) and queues its event, whose data is the
     * record as it was; undefined when the organization has no such record (or not at those versions).
     */
    async delete<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      id: string,
      event: CrmEventName,
      expected?: Date[],
    ): Promise<Row | undefined> {
      const parameters: unknown[] = [organizationId, id];
      const condition =
        expected === undefined ? '' : ` AND updated_at = ANY($${parameters.push(expected.map((d) => d.toISOString()))}::timestamptz[])`;
      const text =
        `WITH record AS (DELETE FROM ${spec.table} WHERE organization_id = $1 AND id = $2${condition} RETURNING ${spec.selectList})` +
        eventParameters(parameters, event);
      return (await pool.query<Row>(text, parameters)).rows[0];
    },
    /**
     * Inserts many records in one statement and queues no event (an import's rows): each value object holds the
     * table's API columns, typed by the table's own row type (`jsonb_populate_recordset`). Answers how many went in.
     */
    async insertMany(spec: PageTable<unknown, string>, columns: readonly string[], rows: ColumnValues[]): Promise<number> {
      if (rows.length === 0) return 0;
      const set = columns.filter((column) => column !== 'id' && spec.columns.includes(column));
      const text =
        `INSERT INTO ${spec.table} (id, organization_id, ${set.join(', ')}, created_at, updated_at) ` +
        `SELECT gen_random_uuid(), $1, ${set.map((c) => `r.${c}`).join(', ')}, now(), now() ` +
        `FROM jsonb_populate_recordset(NULL::${spec.table}, $2::jsonb) r`;
      return (await pool.query(text, [organizationId, JSON.stringify(rows)])).rowCount ?? 0;
    },
    /**
     * Sets `columns` of many records (each value object names its `id`) in one statement, no event; a null in a
     * `keep` column leaves that column unchanged. Answers how many records of the organization changed.
     */
    async updateMany(
      spec: PageTable<unknown, string>,
      columns: readonly string[],
      keep: readonly string[],
      rows: ColumnValues[],
    ): Promise<number> {
      if (rows.length === 0) return 0;
      const set = columns
        .filter((column) => column !== 'id' && spec.columns.includes(column))
        .map((c) => (keep.includes(c) ? `${c} = COALESCE(r.${c}, t.${c})` : `${c} = r.${c}`));
      const text =
        `UPDATE ${spec.table} t SET ${[...set, 'updated_at = now()'].join(', ')} ` +
        `FROM jsonb_populate_recordset(NULL::${spec.table}, $2::jsonb) r WHERE t.organization_id = $1 AND t.id = r.id`;
      return (await pool.query(text, [organizationId, JSON.stringify(rows)])).rowCount ?? 0;
    },
  };
}

export type TenantWrites = ReturnType<typeof scopeWrites>;
