// Creates and updates of CRM records together with their automation event, in one statement on the shared pool:
// the row, its event and the queued runs of the organization's active rules commit together (one statement is one
// transaction) in one round trip, without Prisma's per-query compilation. Bound to one organization like the page
// reader: `organization_id = $1` in every part of the statement, tables and columns from the services' `pageTable`
// definitions, request values only as parameters.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { CrmEventName } from '../lib/crm-events.js';
import { WAKE_RUNS_SQL } from '../jobs/automation-runs.js';
import { CUSTOM_FIELDS, pageTypes, type PageTable } from './page-table.js';
import { shapeCustomFields } from './custom-field-shape.js';
import { customFieldDefinitionsStatement, definitionsStampSql } from './custom-field-definitions.js';

/** Column values of a write: undefined leaves a column alone (its default on insert), null clears it. */
export type ColumnValues = Record<string, unknown>;

/**
 * The statement's tail: records the event in the log (crm_events, whatever the rules) and queues one run of it per
 * active rule of `$1` (its name the last-but-one parameter, the time the last one), whose payload is the event JSON
 * with the written record (`record`, in API shape) as data, and wakes the run dispatchers when it queued any. A SELECT
 * in WITH runs only when read, hence the wake-up the final row is filtered on; the INSERTs run whether read or not.
 */
function queueRuns(event: string, occurredAt: string): string {
  return (
    `, event AS (INSERT INTO crm_events (organization_id, type, payload) ` +
    `SELECT $1, ${event}::automation_trigger, jsonb_build_object('event', ${event}::text, 'organization_id', $1::uuid, ` +
    `'data', to_jsonb(record), 'occurred_at', ${occurredAt}::text) FROM record RETURNING id, type, payload), ` +
    `runs AS (INSERT INTO automation_runs (id, organization_id, automation_id, event_id, trigger, payload) ` +
    `SELECT crm_new_id(), a.organization_id, a.id, event.id, a.trigger, event.payload ` +
    `FROM automations a CROSS JOIN event WHERE a.organization_id = $1 AND a.trigger = event.type AND a.is_active ` +
    'RETURNING id), ' +
    `wake AS (SELECT ${WAKE_RUNS_SQL} AS queued) ` +
    'SELECT record.* FROM record, wake WHERE wake.queued >= 0'
  );
}

/** Who made a change, as a timeline entry keeps it (the entry outlives the user or key). */
export interface ActivityActor {
  type: 'user' | 'api_key';
  id: string | null;
  name: string | null;
}

/**
 * The timeline entry a write adds in its own statement (table `crm_activities`, on the record's `column`). Without a
 * `kind`, an update adds `updated` with the names of the fields whose value changed (not `assigned_to`) and, when
 * `assigned_to` changed, `assigned` (the new assignee as subject); with one, an entry of that kind when anything changed.
 */
export interface ActivityEntry {
  column: 'company_id' | 'contact_id';
  actor: ActivityActor;
  kind?: string;
}

/** A per-organization number (SQL function `next(organization_id) → bigint`) that, with `prefix`, fills `column` on insert. */
export interface Numbering {
  column: string;
  next: string;
  prefix: string;
}

/** A pool or one checked-out client (a transaction of the caller's): whatever runs the statements. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/** How many write shapes a process prepares on its connections; later ones run unnamed (planned on every call). */
const MAX_PREPARED_SHAPES = 200;
/** The name of each prepared shape, by its text: a map lookup per write, cheaper than hashing the text each time. */
const preparedShapes = new Map<string, string>();

/**
 * A single-record write as a named prepared statement, named by its text (a shape: the table, the columns a body set,
 * the parts it adds): each connection parses and plans a shape once and keeps its generic plan, where an unnamed
 * statement is planned on every call, which costs PostgreSQL more than executing it (docs/benchmarks.md, Writes).
 * Bodies may combine their fields in many ways, and every connection keeps each prepared
 * shape until it closes: the first MAX_PREPARED_SHAPES shapes (the ones clients use) are prepared, the rest are not.
 */
function statement(text: string, values: unknown[]): pg.QueryConfig {
  let name = preparedShapes.get(text);
  if (name === undefined) {
    if (preparedShapes.size >= MAX_PREPARED_SHAPES) return { text, values };
    name = `crm-write-${createHash('sha1').update(text).digest('base64url').slice(0, 27)}`;
    preparedShapes.set(text, name);
  }
  return { name, text, values };
}

/** What an insert writes besides the record: its timeline entry, its number. */
type InsertOptions = { activity?: ActivityEntry; numbering?: Numbering };

/**
 * A guarded insert's condition on record type `object`'s custom field definitions: none required and active, or
 * still at the stamp the values were checked against (db/custom-field-definitions.ts). Decided in the insert.
 */
export type InsertGuard = { object: string } & ({ noneRequired: true } | { stamp: string });

/** The writer a tenant-scoped service receives: it can only create and change rows of `organizationId`. */
export function scopeWrites(pool: Queryable, organizationId: string) {
  /** The columns of `values` the table's API writes (never `id`), with their parameters after `$1`. */
  function assignments(spec: PageTable<unknown, string>, values: ColumnValues, parameters: unknown[]) {
    return Object.entries(values)
      .filter(([column, value]) => value !== undefined && column !== 'id' && spec.columns.includes(column))
      .map(([column, value]) =>
        column === CUSTOM_FIELDS
          ? { column, parameter: `$${parameters.push(JSON.stringify(value))}::jsonb`, merge: true }
          : { column, parameter: `$${parameters.push(value)}`, merge: false },
      );
  }
  /** The runs of `event` and the written record; a record type without events (a task) queues none. */
  const eventParameters = (parameters: unknown[], event: CrmEventName | null) => {
    if (event === null) return ' SELECT record.* FROM record';
    const name = `$${parameters.push(event)}`;
    return queueRuns(name, `$${parameters.push(new Date().toISOString())}`);
  };
  /** `, activity AS (INSERT … SELECT … FROM alias …)`: entries of `kind`, `fields` and `subject` (SQL over the CTE `alias`). */
  const activityInsert = (
    parameters: unknown[],
    entry: ActivityEntry,
    alias: string,
    rows: { kind: string; fields: string; subject: string; condition: string; join?: string },
  ) => {
    const actor = [entry.actor.type, entry.actor.id, entry.actor.name].map((value) => `$${parameters.push(value)}`);
    return (
      `, activity AS (INSERT INTO crm_activities (id, organization_id, ${entry.column}, kind, fields, subject_id, actor_type, ` +
      `actor_id, actor_name) SELECT crm_new_id(), $1, ${alias}.id, ${rows.kind}, ${rows.fields}, ${rows.subject}, ` +
      `${actor[0]}, ${actor[1]}::uuid, ${actor[2]} FROM ${alias}${rows.join ?? ''} WHERE ${rows.condition})`
    );
  };

  /** The names of `columns` whose value the UPDATE changed, from its row before and after (RETURNING old/new). */
  const changedFields = (columns: readonly string[]) => {
    const plain = columns.filter((c) => c !== CUSTOM_FIELDS);
    const fields = `array_remove(ARRAY[${plain.map((c) => `CASE WHEN old.${c} IS DISTINCT FROM new.${c} THEN '${c}' END`).join(', ') || 'NULL'}]::text[], NULL)`;
    if (plain.length === columns.length) return fields;
    // Each custom field by its own name, `custom.<key>`, as the timeline lists it.
    return (
      `(${fields} || ARRAY(SELECT 'custom.' || k FROM jsonb_object_keys(old.${CUSTOM_FIELDS} || new.${CUSTOM_FIELDS}) AS k ` +
      `WHERE old.${CUSTOM_FIELDS} -> k IS DISTINCT FROM new.${CUSTOM_FIELDS} -> k ORDER BY k))`
    );
  };
  /**
   * The entries of the CTE `changed` (its `changed_fields`, and `assigned_to` when `assigned`): `updated` with the names
   * of the changed fields but `assigned_to`, and `assigned` (the new assignee as subject) when that changed.
   */
  const changeEntries = (parameters: unknown[], activity: ActivityEntry, assigned: boolean) =>
    activityInsert(parameters, activity, 'changed', {
      join:
        ` CROSS JOIN LATERAL (VALUES ('updated', array_remove(changed.changed_fields, 'assigned_to'), NULL::uuid)` +
        `${assigned ? ", ('assigned', ARRAY['assigned_to'], changed.assigned_to)" : ''}) AS entry(kind, fields, subject)`,
      kind: 'entry.kind',
      fields: 'entry.fields',
      subject: 'entry.subject',
      condition:
        "(entry.kind = 'updated' AND cardinality(entry.fields) > 0) OR (entry.kind = 'assigned' AND 'assigned_to' = ANY(changed.changed_fields))",
    });
  /** The `created` entry of each row of the CTE `record`. */
  const createdEntries = (parameters: unknown[], activity: ActivityEntry) =>
    activityInsert(parameters, activity, 'record', { kind: `'created'`, fields: "'{}'", subject: 'NULL::uuid', condition: 'true' });

  /**
   * The insert of `insert`, `insertGuarded` and `insertAll`: the rows it wrote in API shape, in the order of
   * `rows` (RETURNING answers a VALUES list's rows in its order), none when the guard refused.
   */
  async function insertRecords<Row extends pg.QueryResultRow>(
    spec: PageTable<Row, string>,
    rows: readonly ColumnValues[],
    event: CrmEventName | null,
    options: InsertOptions,
    guarded?: InsertGuard,
  ): Promise<Row[]> {
    const parameters: unknown[] = [organizationId];
    const { activity, numbering } = options;
    const sets = rows.map((values) => assignments(spec, values, parameters));
    // Every column some row sets, in the table's order; a row that does not set one takes its default.
    const given = spec.columns.filter((column) => sets.some((set) => set.some((s) => s.column === column)));
    const columns = ['id', 'organization_id', ...given, ...(numbering ? [numbering.column] : []), 'created_at', 'updated_at'];
    // A sequence's number: never handed out twice, and no lock held until commit (see the function's migration).
    const prefix = numbering ? `$${parameters.push(numbering.prefix)}` : '';
    const code = numbering
      ? [`(SELECT ${prefix} || lpad(n::text, greatest(5, length(n::text)), '0') FROM ${numbering.next}($1::uuid) AS n)`]
      : [];
    const valuesOf = (set: ReturnType<typeof assignments>) => [
      'crm_new_id()',
      '$1',
      ...given.map((column) => {
        const value = set.find((s) => s.column === column);
        if (!value) return 'DEFAULT';
        return value.merge ? `jsonb_strip_nulls(${value.parameter})` : value.parameter;
      }),
      ...code,
      'now()',
      'now()',
    ];
    // A guard saves a create a definitions read: the select list (and its number) runs only when it holds.
    const [first] = sets;
    const object = guarded && `$${parameters.push(guarded.object)}`;
    const guard =
      guarded === undefined
        ? undefined
        : 'stamp' in guarded
          ? `${definitionsStampSql(object as string)} = $${parameters.push(guarded.stamp)}`
          : `NOT EXISTS (SELECT FROM custom_field_definitions WHERE organization_id = $1 AND object = ${object} AND required AND archived_at IS NULL)`;
    const source =
      guard === undefined || first === undefined || sets.length > 1
        ? `VALUES ${sets.map((set) => `(${valuesOf(set).join(', ')})`).join(', ')}`
        : `SELECT ${valuesOf(first).join(', ')} WHERE ${guard}`;
    const entry = activity ? createdEntries(parameters, activity) : '';
    const text =
      `WITH record AS (INSERT INTO ${spec.table} (${columns.join(', ')}) ${source} RETURNING ${spec.selectList})` +
      entry +
      eventParameters(parameters, event);
    // One shape per count of rows and columns: many rows' statements are not kept prepared.
    const sent = rows.length === 1 ? statement(text, parameters) : { text, values: parameters };
    return (await pool.query<Row>(sent)).rows;
  }

  return {
    /** The definitions a write's custom field values are checked against, on the write's own connection. */
    async customFieldDefinitions(object: string): Promise<Record<string, unknown>[]> {
      return (await pool.query<Record<string, unknown>>(customFieldDefinitionsStatement(organizationId, object))).rows;
    },
    /** One record as its list shows it, or undefined: on the writer's connection (a batch reads its own writes). */
    async one<Row extends pg.QueryResultRow>(spec: PageTable<Row, string>, id: string): Promise<Row | undefined> {
      const text = `SELECT ${spec.readList} FROM ${spec.table} WHERE organization_id = $1 AND id = $2`;
      const { rows } = await pool.query<Row>({ ...statement(text, [organizationId, id]), types: pageTypes });
      return (await shapeCustomFields(pool, organizationId, spec, rows))[0];
    },
    /** Inserts the record and queues its event; answers it in API shape. */
    async insert<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      values: ColumnValues,
      event: CrmEventName | null,
      options: InsertOptions = {},
    ): Promise<Row> {
      const [inserted] = await insertRecords(spec, [values], event, options);
      if (!inserted) throw new Error(`INSERT INTO ${spec.table} returned no row`);
      return inserted;
    },
    /**
     * `insert`, only while `guard` holds, decided in the statement itself: undefined when it does not (the caller then
     * reads the definitions and checks the body against them).
     */
    async insertGuarded<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      values: ColumnValues,
      event: CrmEventName | null,
      guard: InsertGuard,
      options: InsertOptions = {},
    ): Promise<Row | undefined> {
      return (await insertRecords(spec, [values], event, options, guard))[0];
    },
    /**
     * Inserts every record of `rows` in one statement, each with its event and timeline entry as `insert` writes them;
     * answers them in API shape, in the order of `rows`. One fails, none is written (the statement fails).
     */
    async insertAll<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      rows: readonly ColumnValues[],
      event: CrmEventName | null,
      options: InsertOptions = {},
    ): Promise<Row[]> {
      const inserted = rows.length === 0 ? [] : await insertRecords(spec, rows, event, options);
      if (inserted.length !== rows.length) throw new Error(`INSERT INTO ${spec.table} returned ${inserted.length} of ${rows.length} rows`);
      return inserted;
    },
    /** Changes the record's given columns and queues its event; undefined when the organization has no such record. */
    async update<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      id: string,
      values: ColumnValues,
      event: CrmEventName | null,
      /** Only when the record's updated_at is one of these (an If-Match); undefined when it is not, as when absent. */
      expected?: Date[],
      activity?: ActivityEntry,
    ): Promise<Row | undefined> {
      const parameters: unknown[] = [organizationId, id];
      const written = assignments(spec, values, parameters);
      // Custom field values merge into the record's map (a null in the change removes that key).
      const set = written.map((s) =>
        s.merge ? `${s.column} = jsonb_strip_nulls(${s.column} || ${s.parameter})` : `${s.column} = ${s.parameter}`,
      );
      const condition =
        expected === undefined ? '' : ` AND updated_at = ANY($${parameters.push(expected.map((d) => d.toISOString()))}::timestamptz[])`;
      // Strictly later than before, even within one millisecond: updated_at is the record's version (its ETag).
      const update =
        `UPDATE ${spec.table} SET ${[...set, "updated_at = greatest(now(), updated_at + interval '1 millisecond')"].join(', ')} ` +
        `WHERE organization_id = $1 AND id = $2${condition}`;
      if (!activity) {
        const text = `WITH record AS (${update} RETURNING ${spec.selectList})${eventParameters(parameters, event)}`;
        return (await pool.query<Row>(statement(text, parameters))).rows[0];
      }
      const output = [...spec.columns, ...spec.computed, 'created_at', 'updated_at'].join(', ');
      const entries = activity.kind
        ? activityInsert(parameters, activity, 'changed', {
            kind: `$${parameters.push(activity.kind)}`,
            fields: "'{}'",
            subject: 'NULL::uuid',
            condition: 'cardinality(changed.changed_fields) > 0',
          })
        : changeEntries(
            parameters,
            activity,
            written.some((s) => s.column === 'assigned_to'),
          );
      const text =
        `WITH changed AS (${update} RETURNING ${spec.selectList}, ${changedFields(written.map((s) => s.column))} AS changed_fields), ` +
        `record AS (SELECT ${output} FROM changed)${entries}${eventParameters(parameters, event)}`;
      return (await pool.query<Row>(statement(text, parameters))).rows[0];
    },
    /**
     * Deletes the record (only at one of the `expected` versions, when given) and queues its event, whose data is the
     * record as it was; undefined when the organization has no such record (or not at those versions).
     */
    async delete<Row extends pg.QueryResultRow>(
      spec: PageTable<Row, string>,
      id: string,
      event: CrmEventName | null,
      expected?: Date[],
    ): Promise<Row | undefined> {
      const parameters: unknown[] = [organizationId, id];
      const condition =
        expected === undefined ? '' : ` AND updated_at = ANY($${parameters.push(expected.map((d) => d.toISOString()))}::timestamptz[])`;
      const text =
        `WITH record AS (DELETE FROM ${spec.table} WHERE organization_id = $1 AND id = $2${condition} RETURNING ${spec.selectList})` +
        eventParameters(parameters, event);
      return (await pool.query<Row>(statement(text, parameters))).rows[0];
    },
    /**
     * Inserts many records in one statement and queues no event (an import's rows): each value object holds the
     * table's API columns, typed by the table's own row type (`jsonb_populate_recordset`); with `activity`, each record's
     * `created` entry in the same statement. Answers how many went in.
     */
    async insertMany(
      spec: PageTable<unknown, string>,
      columns: readonly string[],
      rows: ColumnValues[],
      options: { activity?: ActivityEntry; numbering?: Numbering } = {},
    ): Promise<number> {
      const { activity, numbering } = options;
      if (rows.length === 0) return 0;
      const set = columns.filter((column) => column !== 'id' && spec.columns.includes(column) && column !== numbering?.column);
      const parameters: unknown[] = [organizationId, JSON.stringify(rows)];
      // One number per row, in the rows' order: a volatile call in the subquery's list runs once per row (PostgreSQL
      // does not merge such a subquery into the outer one), as the single insert's does.
      const numbered = numbering
        ? {
            column: `, ${numbering.column}`,
            value: `, $${parameters.push(numbering.prefix)} || lpad(r.n::text, greatest(5, length(r.n::text)), '0')`,
            next: `, ${numbering.next}($1::uuid) AS n`,
          }
        : { column: '', value: '', next: '' };
      const insert =
        `INSERT INTO ${spec.table} (id, organization_id, ${set.join(', ')}${numbered.column}, created_at, updated_at) ` +
        `SELECT crm_new_id(), $1, ${set.map((c) => `r.${c}`).join(', ')}${numbered.value}, now(), now() ` +
        `FROM (SELECT *${numbered.next} FROM jsonb_populate_recordset(NULL::${spec.table}, $2::jsonb)) r`;
      if (!activity) return (await pool.query(insert, parameters)).rowCount ?? 0;
      const text = `WITH record AS (${insert} RETURNING id)${createdEntries(parameters, activity)} SELECT count(*)::int AS count FROM record`;
      return (await pool.query<{ count: number }>(text, parameters)).rows[0]?.count ?? 0;
    },
    /**
     * Sets `columns` of many records (each value object names its `id`) in one statement, no event; a null in a
     * `keep` column leaves that column unchanged; with `activity`, each record's `updated` (and `assigned`) entries as a
     * single update writes them. Answers how many records of the organization were written.
     */
    async updateMany(
      spec: PageTable<unknown, string>,
      columns: readonly string[],
      keep: readonly string[],
      rows: ColumnValues[],
      activity?: ActivityEntry,
    ): Promise<number> {
      if (rows.length === 0) return 0;
      const written = columns.filter((column) => column !== 'id' && spec.columns.includes(column));
      // Custom field values merge into the record's map as a single update's do (a null removes that key).
      const set = written.map((c) =>
        keep.includes(c)
          ? `${c} = COALESCE(r.${c}, t.${c})`
          : c === CUSTOM_FIELDS
            ? `${c} = jsonb_strip_nulls(t.${c} || COALESCE(r.${c}, '{}'::jsonb))`
            : `${c} = r.${c}`,
      );
      const parameters: unknown[] = [organizationId, JSON.stringify(rows)];
      // Strictly later than before, as a single update makes it: updated_at is the record's version (its ETag).
      const update =
        `UPDATE ${spec.table} t SET ${[...set, "updated_at = greatest(now(), t.updated_at + interval '1 millisecond')"].join(', ')} ` +
        `FROM jsonb_populate_recordset(NULL::${spec.table}, $2::jsonb) r WHERE t.organization_id = $1 AND t.id = r.id`;
      if (!activity) return (await pool.query(update, parameters)).rowCount ?? 0;
      const assigned = written.includes('assigned_to');
      const text =
        `WITH changed AS (${update} RETURNING t.id${assigned ? ', t.assigned_to' : ''}, ${changedFields(written)} AS changed_fields)` +
        `${changeEntries(parameters, activity, assigned)} SELECT count(*)::int AS count FROM changed`;
      return (await pool.query<{ count: number }>(text, parameters)).rows[0]?.count ?? 0;
    },
  };
}

export type TenantWrites = ReturnType<typeof scopeWrites>;
