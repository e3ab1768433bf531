// Creates and updates of CRM records together with their automation event, in one statement on the shared pool:
// the row and the queued runs of the organization's active rules, with their jobs, commit together (one statement is one
// transaction) in one round trip, without Prisma's per-query compilation. Bound to one organization like the page
// reader: `organization_id = $1` in every part of the statement, tables and columns from the services' `pageTable`
// definitions, request values only as parameters. Every write answers the record's version (its ETag), and updates and
// deletes can be made conditional on it.
import type pg from 'pg';
import type { CrmEventName } from '../lib/crm-events.js';
import { RUN_JOBS_SQL } from '../jobs/queue.js';
import type { PageTable } from './tenant-pages.js';

/** Column values of a write: undefined leaves a column alone (its default on insert), null clears it. */
export type ColumnValues = Record<string, unknown>;

/**
 * A row's version: it changes with every write of the row by anyone (xmin is the transaction that wrote this row
 * version; row locks and VACUUM's freezing leave it), hashed with the id so that it shows neither the installation's
 * transaction counter (other workspaces' activity) nor any content. Read and compared in the same statement as the
 * write, so a conditional write is race-free: a concurrent update makes PostgreSQL re-check the condition on the new
 * row version, whose xmin differs.
 */
const VERSION = `left(encode(sha256(convert_to(id::text || ':' || xmin::text, 'UTF8')), 'hex'), 32)`;

/** A record with its version. */
export interface Versioned<Row> {
  record: Row;
  version: string;
}

/** Splits the `row_version` column a statement adds off the record. */
function versioned<Row>(row: (Row & { row_version: string }) | undefined): Versioned<Row> | undefined {
  if (!row) return undefined;
  const { row_version: version, ...record } = row;
  return { record: record as Row, version };
}

/**
 * The statement's tail: queues one run per active rule of `$1` for the event (its name the last-but-one parameter,
 * the time the last one), whose payload is the event JSON with the written record (`record`, in API shape) as data,
 * and each run's job. A SELECT in WITH runs only when read, hence the job count the final row is filtered on.
 */
function queueRuns(event: string, occurredAt: string): string {
  return (
    `, runs AS (INSERT INTO automation_runs (id, organization_id, automation_id, trigger, payload) ` +
    `SELECT gen_random_uuid(), a.organization_id, a.id, a.trigger, jsonb_build_object('event', ${event}::text, ` +
    `'organization_id', a.organization_id, 'data', to_jsonb(record) - 'row_version', 'occurred_at', ${occurredAt}::text) ` +
    `FROM automations a CROSS JOIN record WHERE a.organization_id = $1 AND a.trigger = ${event}::automation_trigger AND a.is_active ` +
    'RETURNING id), ' +
    `jobs AS (SELECT ${RUN_JOBS_SQL} AS queued) ` +
    'SELECT record.* FROM record, jobs WHERE jobs.queued >= 0'
  );
}

/** The writer a tenant-scoped service receives: it can only create and change rows of `organizationId`. */
export function scopeWrites(pool: pg.Pool, organizationId: string) {
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

  /** `AND <version> = ANY(…)` when the write is conditional (If-Match), else nothing. */
  const versionCondition = (parameters: unknown[], expected: readonly string[] | undefined) =>
    expected ? ` AND ${VERSION} = ANY($${parameters.push(expected)}::text[])` : '';

  return {
    /** Inserts the record and queues its event; answers it in API shape with its version. */
    async insert<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      values: ColumnValues,
      event: CrmEventName,
    ): Promise<Versioned<Row>> {
      const parameters: unknown[] = [organizationId];
      const set = assignments(spec, values, parameters);
      const columns = ['id', 'organization_id', ...set.map((s) => s.column), 'created_at', 'updated_at'];
      const row = ['gen_random_uuid()', '$1', ...set.map((s) => s.parameter), 'now()', 'now()'];
      const text =
        `WITH record AS (INSERT INTO ${spec.table} (${columns.join(', ')}) VALUES (${row.join(', ')}) ` +
        `RETURNING ${spec.selectList}, ${VERSION} AS row_version)` +
        eventParameters(parameters, event);
      const inserted = versioned((await pool.query<Row & { row_version: string }>(text, parameters)).rows[0]);
      if (!inserted) throw new Error(`INSERT INTO ${spec.table} returned no row`);
      return inserted;
    },
    /**
     * Changes the record's given columns and queues its event; undefined when the organization has no such record or,
     * with `expected` versions, when its version is none of them (tell the two apart with `current`).
     */
    async update<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      id: string,
      values: ColumnValues,
      event: CrmEventName,
      expected?: readonly string[],
    ): Promise<Versioned<Row> | undefined> {
      const parameters: unknown[] = [organizationId, id];
      const set = assignments(spec, values, parameters).map((s) => `${s.column} = ${s.parameter}`);
      const text =
        `WITH record AS (UPDATE ${spec.table} SET ${[...set, 'updated_at = now()'].join(', ')} ` +
        `WHERE organization_id = $1 AND id = $2${versionCondition(parameters, expected)} ` +
        `RETURNING ${spec.selectList}, ${VERSION} AS row_version)` +
        eventParameters(parameters, event);
      return versioned((await pool.query<Row & { row_version: string }>(text, parameters)).rows[0]);
    },
    /** Deletes the record (with `expected`, only at one of these versions); answers how many rows went (0 or 1). */
    async remove(spec: PageTable<unknown, string>, id: string, expected?: readonly string[]): Promise<number> {
      const parameters: unknown[] = [organizationId, id];
      const text = `DELETE FROM ${spec.table} WHERE organization_id = $1 AND id = $2${versionCondition(parameters, expected)}`;
      return (await pool.query(text, parameters)).rowCount ?? 0;
    },
    /** The record as it stands, with its version, in one statement (so the two always belong together). */
    async current<Row extends pg.QueryResultRow>(spec: PageTable<Row, string>, id: string): Promise<Versioned<Row> | undefined> {
      const text = `SELECT ${spec.selectList}, ${VERSION} AS row_version FROM ${spec.table} WHERE organization_id = $1 AND id = $2`;
      return versioned((await pool.query<Row & { row_version: string }>(text, [organizationId, id])).rows[0]);
    },
  };
}

export type TenantWrites = ReturnType<typeof scopeWrites>;
