// An import's batches, as its thread runs them: the stored file's rows, parsed as a stream, in batches each written
// with multi-row statements and committed together with the import's progress, so a job that died resumes after the
// last committed batch (skipping the rows it counts) and never writes a row twice.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type pg from 'pg';
import { scopeWrites, type ActivityActor, type ColumnValues, type Queryable } from '../../db/tenant-writes.js';
import { isUuid } from '../../lib/http-schemas.js';
import { fieldErrors, type AjvIssue } from '../../lib/field-errors.js';
import {
  COMPANY_COLUMN,
  IMPORT_BODY_REFERENCES,
  IMPORT_KIND_SPECS,
  importCell,
  parseImportFile,
  type ColumnFields,
  type FileRow,
  type ImportKindSpec,
} from './import-file.js';
import { checkCustomCells, customKeys, importCustomFields, writesCustomFields } from './import-custom-fields.js';
import type { CustomField } from '../../records/custom-fields/definitions.js';

/** Rows per batch (one transaction): large enough for few round trips, small enough to keep locks short. */
export const IMPORT_BATCH = 1000;

/** Validates rows as the API validates create bodies (same formats, same field messages). */
const ajv = addFormats.default(new Ajv({ allErrors: true, strict: false, coerceTypes: false, schemas: [...IMPORT_BODY_REFERENCES] }));
const validators = new Map<ImportKindSpec, ValidateFunction>();
const validatorOf = (kind: ImportKindSpec) => {
  let validate = validators.get(kind);
  if (!validate) {
    validate = ajv.compile(kind.body);
    validators.set(kind, validate);
  }
  return validate;
};

/** `field: message` pairs as the errors CSV states them. */
const errorText = (errors: Record<string, string[]>) =>
  Object.entries(errors)
    .map(([field, messages]) => `${field}: ${messages.join(' ')}`)
    .join('; ');

/** A row on its way in: its body, or why it fails; for upserts the record it updates. */
interface PreparedRow extends FileRow {
  body: ColumnValues;
  /** The `custom.<key>` cells by key. */
  custom?: Record<string, string>;
  companyRef?: string;
  error?: string;
  target?: string;
}

/** What the thread is told of a job: plain data (it crosses to the thread as a message). */
export interface ImportJob {
  organizationId: string;
  id: string;
  kind: 'companies' | 'contacts';
  upsert: boolean;
  fields: ColumnFields;
  batchSize: number;
  /** Who started the import: the actor of its records' timeline entries. */
  actor: ActivityActor;
  /** The file's delimiter, as found when it was accepted. */
  delimiter: string;
}

/** The job with its kind's spec and the kind's custom fields (read when the job starts). */
type Job = Omit<ImportJob, 'kind'> & { kind: ImportKindSpec; custom: CustomField[] };

/** The row's body: an empty cell is null, or absent for a field that cannot be null. */
function prepare(job: Job, row: FileRow): PreparedRow {
  if (row.cells.length !== job.fields.length) {
    return { ...row, body: {}, error: `row: Expected ${job.fields.length} cells, found ${row.cells.length}.` };
  }
  const body: ColumnValues = {};
  const custom: Record<string, string> = {};
  const keys = customKeys(job.fields);
  let companyRef: string | undefined;
  job.fields.forEach((field, index) => {
    if (field === null) return;
    const value = importCell(row.cells[index] ?? '');
    const key = keys[index];
    if (key) custom[key] = value;
    else if (field === COMPANY_COLUMN) companyRef = value || undefined;
    else if (value !== '') body[field] = value;
    else if (!job.kind.required.includes(field)) body[field] = null;
  });
  return { ...row, body, custom, ...(companyRef !== undefined ? { companyRef } : {}) };
}

/**
 * The workspace as the import's lookups name it: a value the planner does not see when it plans ($1 in an InitPlan),
 * so it counts the workspace as an average one. Named as $1, a workspace the statistics do not know yet (a new one
 * filled by its first import, until the next ANALYZE) counts as a single row, and every lookup of every batch reads
 * the whole workspace through an index on organization_id alone: quadratic in the import's size
 * (docs/benchmarks.md, Imports and exports).
 */
const WORKSPACE = '(SELECT $1::uuid)';

/**
 * Companies by customer code (its unique index), website (its md5 index) or exact name, for each `company` value ($2)
 * of a batch.
 */
export const COMPANY_REFS_SQL = `SELECT v.ref, array_agg(c.id) FILTER (WHERE c.customer_code = v.ref) AS code,
    array_agg(c.id) FILTER (WHERE c.website = v.ref) AS website, array_agg(c.id) FILTER (WHERE c.name = v.ref) AS name
  FROM unnest($2::text[]) AS v(ref) JOIN companies c
    ON c.organization_id = ${WORKSPACE} AND (c.customer_code = v.ref OR (md5(c.website) = md5(v.ref) AND c.website = v.ref) OR c.name = v.ref)
  GROUP BY v.ref`;

/**
 * Which of the ids ($2) are companies of the workspace: one probe of the (organization_id, id) index each. As one
 * `id = ANY($2)`, an average workspace of a few hundred companies looked cheaper to read whole than 1,000 probes.
 */
export const COMPANY_IDS_SQL = `SELECT c.id FROM unnest($2::uuid[]) AS v(id)
  CROSS JOIN LATERAL (SELECT id FROM companies WHERE organization_id = ${WORKSPACE} AND id = v.id LIMIT 1) c`;

/** How a `company` value found its companies, in order of precedence: the first that found any decides. */
const REF_KINDS = [
  ['code', 'customer code'],
  ['website', 'website'],
  ['name', 'name'],
] as const;

/**
 * Contact rows naming their company: by `company_id` (in this workspace), else `company` by customer code, then
 * website, then exact name.
 */
async function resolveCompanies(sql: Queryable, organizationId: string, rows: PreparedRow[]): Promise<void> {
  const pending = rows.filter((row) => !row.error);
  const ids = pending.map((row) => row.body.company_id).filter((id): id is string => typeof id === 'string' && isUuid(id));
  const refs = [...new Set(pending.filter((row) => row.body.company_id == null && row.companyRef).map((row) => row.companyRef as string))];
  const existing = new Set((await sql.query<{ id: string }>(COMPANY_IDS_SQL, [organizationId, ids])).rows.map((r) => r.id));
  const matches = new Map<string, Record<(typeof REF_KINDS)[number][0], string[] | null>>();
  if (refs.length > 0) {
    const { rows: found } = await sql.query<{ ref: string; code: string[] | null; website: string[] | null; name: string[] | null }>(
      COMPANY_REFS_SQL,
      [organizationId, refs],
    );
    for (const match of found) matches.set(match.ref, match);
  }
  for (const row of pending) {
    const id = row.body.company_id;
    if (typeof id === 'string') {
      if (isUuid(id) && !existing.has(id)) row.error = 'company_id: No such company in this organization.';
      continue;
    }
    if (!row.companyRef) continue;
    const match = matches.get(row.companyRef);
    const by = REF_KINDS.find(([kind]) => (match?.[kind]?.length ?? 0) > 0);
    const candidates = (by && match?.[by[0]]) || [];
    if (candidates.length === 1) row.body.company_id = candidates[0];
    else if (!by) row.error = `${COMPANY_COLUMN}: No company of this workspace has this customer code, website or name.`;
    else row.error = `${COMPANY_COLUMN}: Several companies have this ${by[1]}.`;
  }
}

/** The upsert key values of a row: website as written, emails compared case-insensitively. */
const keyValues = (kind: ImportKindSpec, body: ColumnValues) =>
  kind.keys.map((key) => {
    const value = body[key];
    return typeof value === 'string' && value !== '' ? (key === 'email' ? value.toLowerCase() : value) : undefined;
  });

/** The condition of the unique index on a company's lower(tax_id) or lower(email) (migration crm_profiles_archive_activity). */
const uniquelyHeld = (field: 'tax_id' | 'email') => `${field} IS NOT NULL AND NOT ${field}_shared`;

/**
 * The records holding any of a batch's upsert key values ($2, $3, … in the kind's key order), in the forms their
 * indexes hold: md5(website) (then the text itself); lower(email), which for companies is in two partial indexes:
 * the unique one, and the one of the companies that shared an email before duplicates were refused, asked in a
 * statement of its own (in one OR, PostgreSQL factors the common lower(email) test out of both and reads neither).
 */
export function matchSql(kind: ImportKindSpec): string {
  const companies = kind.table.table === 'companies';
  const email = (k: number) => `lower(email) = ANY($${k + 2}::text[])`;
  const conditions = kind.keys.map((key, k) => {
    if (key !== 'email')
      return `(md5(${key}) = ANY(ARRAY(SELECT md5(v) FROM unnest($${k + 2}::text[]) AS v)) AND ${key} = ANY($${k + 2}::text[]))`;
    return companies ? `(${email(k)} AND ${uniquelyHeld('email')})` : email(k);
  });
  const selected = kind.keys.map((key) => (key === 'email' ? 'lower(email) AS email' : key)).join(', ');
  const match = `SELECT id, ${selected} FROM ${kind.table.table} WHERE organization_id = ${WORKSPACE} AND (${conditions.join(' OR ')})`;
  const k = kind.keys.indexOf('email');
  if (!companies || k < 0) return match;
  return `${match} UNION SELECT id, ${selected} FROM companies WHERE organization_id = ${WORKSPACE} AND email_shared AND ${email(k)}`;
}

/** Finds the record each valid row updates; a key matching several records, or two keys two records, fails the row. */
async function matchRecords(sql: Queryable, job: Job, rows: PreparedRow[]): Promise<void> {
  const { kind } = job;
  const pending = rows.filter((row) => !row.error);
  const values = kind.keys.map((_, k) => [...new Set(pending.map((row) => keyValues(kind, row.body)[k]).filter((v) => v !== undefined))]);
  const { rows: records } = await sql.query<Record<string, string | null>>(matchSql(kind), [job.organizationId, ...values]);
  const noun = kind === IMPORT_KIND_SPECS.companies ? 'companies' : 'contacts';
  for (const row of pending) {
    const keys = keyValues(kind, row.body);
    const found = kind.keys.map((key, k) =>
      keys[k] === undefined ? [] : records.filter((r) => r[key] === keys[k]).map((r) => r.id as string),
    );
    const several = found.findIndex((ids) => ids.length > 1);
    if (several >= 0) {
      row.error = `${kind.keys[several]}: Matches several ${noun}.`;
      continue;
    }
    const ids = [...new Set(found.flat())];
    if (ids.length > 1) row.error = `${kind.keys.join(', ')}: Match two different ${noun}.`;
    else if (ids[0]) row.target = ids[0];
  }
}

/**
 * The rows of the next batch: up to `batchSize`, cut before a row whose upsert key an earlier row of the batch
 * has (so it sees that row's record, committed, in the next batch).
 */
function nextBatch(job: Job, rows: FileRow[]): PreparedRow[] {
  const batch: PreparedRow[] = [];
  const seen = new Set<string>();
  for (const row of rows.slice(0, job.batchSize)) {
    const prepared = prepare(job, row);
    if (job.upsert) {
      const keys = keyValues(job.kind, prepared.body)
        .map((value, k) => (value === undefined ? undefined : `${k}:${value}`))
        .filter((key): key is string => key !== undefined);
      if (batch.length > 0 && keys.some((key) => seen.has(key))) break;
      for (const key of keys) seen.add(key);
    }
    batch.push(prepared);
  }
  return batch;
}

/**
 * The companies of $1 holding any of the values $2 (lower-cased) of `field` in the unique index on it (the API's test
 * of a duplicate), read from that index.
 */
export const duplicateProbeSql = (field: 'tax_id' | 'email') =>
  `SELECT lower(${field}) AS value, id FROM companies WHERE organization_id = ${WORKSPACE} AND lower(${field}) = ANY($2::text[]) AND ${uniquelyHeld(field)}`;

/**
 * Company rows whose tax_id or email another company of the workspace (or an earlier row of the batch) already has
 * become failed rows, as the API refuses them (issue 27); the unique indexes would otherwise fail the whole batch.
 */
async function refuseDuplicates(sql: Queryable, job: Job, batch: PreparedRow[]) {
  if (job.kind !== IMPORT_KIND_SPECS.companies) return;
  for (const field of ['tax_id', 'email'] as const) {
    const rows = batch.filter((row) => !row.error && typeof row.body[field] === 'string');
    if (rows.length === 0) continue;
    const { rows: taken } = await sql.query<{ value: string; id: string }>(duplicateProbeSql(field), [
      job.organizationId,
      rows.map((row) => String(row.body[field]).toLowerCase()),
    ]);
    const holders = new Map(taken.map((company) => [company.value, company.id]));
    for (const row of rows) {
      const value = String(row.body[field]).toLowerCase();
      const holder = holders.get(value);
      if (holder !== undefined && holder !== row.target) row.error = `Another company of this workspace has this ${field}.`;
      else holders.set(value, row.target ?? `row ${row.line}`);
    }
  }
}

/** Writes one batch on the transaction's client: inserts, updates and failed rows, one statement each. */
async function writeBatch(sql: Queryable, job: Job, batch: PreparedRow[]) {
  const { kind } = job;
  if (kind === IMPORT_KIND_SPECS.contacts) await resolveCompanies(sql, job.organizationId, batch);
  const validate = validatorOf(kind);
  for (const row of batch) {
    if (row.error) continue;
    const body = { ...kind.defaults, ...row.body };
    if (!validate(body)) row.error = errorText(fieldErrors((validate.errors ?? []) as AjvIssue[], 'row'));
  }
  if (job.upsert) await matchRecords(sql, job, batch);
  const custom = writesCustomFields(job.fields, job.custom);
  if (custom) await checkCustomCells(sql, job.organizationId, job.custom, batch);
  await refuseDuplicates(sql, job, batch);
  const keys = customKeys(job.fields);
  const columns = [
    ...new Set([
      ...job.fields.filter((f, i): f is string => f !== null && f !== COMPANY_COLUMN && keys[i] === null),
      ...(kind === IMPORT_KIND_SPECS.contacts ? ['company_id'] : []),
      ...(custom ? ['custom_fields'] : []),
    ]),
  ];
  const writes = scopeWrites(sql, job.organizationId);
  const valid = batch.filter((row) => !row.error);
  // Each record's timeline says it was created (or which fields changed) by the import's starter, as the API's writes do.
  const activity = { column: kind.timeline, actor: job.actor };
  const created = await writes.insertMany(
    kind.table,
    [...new Set([...columns, ...Object.keys(kind.defaults)])],
    valid.filter((row) => !row.target).map((row) => ({ ...kind.defaults, ...row.body })),
    { activity, ...(kind.numbering ? { numbering: kind.numbering } : {}) },
  );
  const updated = await writes.updateMany(
    kind.table,
    columns,
    kind.required,
    valid.filter((row) => row.target).map((row) => ({ ...row.body, id: row.target })),
    activity,
  );
  const failed = batch.filter((row) => row.error).map((row) => ({ line: row.line, cells: row.cells, error: row.error }));
  if (failed.length > 0) {
    await sql.query(
      `INSERT INTO import_errors (import_id, organization_id, line, cells, error)
       SELECT $2, $1, e.line, e.cells, e.error FROM jsonb_to_recordset($3::jsonb) AS e(line int, cells jsonb, error text)`,
      [job.organizationId, job.id, JSON.stringify(failed)],
    );
  }
  return { created, updated, failed: failed.length };
}

/** Runs `work` in a transaction on one client of the pool. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** The stored file's text, one piece at a time in order, read on the thread's own connection. */
async function* storedPieces(pool: pg.Pool, job: ImportJob): AsyncGenerator<string> {
  for (let seq = 0; ; seq++) {
    const { rows } = await pool.query<{ text: string }>(
      'SELECT text FROM import_chunks WHERE organization_id = $1 AND import_id = $2 AND seq = $3',
      [job.organizationId, job.id, seq],
    );
    if (!rows[0]) return;
    yield rows[0].text;
  }
}

/**
 * The batches from the committed progress on, reading the file as it goes (at most one batch of rows and one stored
 * piece in memory). True when every row was taken; false when the import was cancelled (or deleted) meanwhile.
 */
export async function runImport(pool: pg.Pool, data: ImportJob): Promise<boolean> {
  const kind = IMPORT_KIND_SPECS[data.kind];
  const job: Job = { ...data, kind, custom: await importCustomFields(pool, data.organizationId, kind.object) };
  const rows = parseImportFile(storedPieces(pool, data), job.delimiter);
  try {
    const next = async () => {
      const row = await rows.next();
      return row.done ? undefined : row.value;
    };
    await next(); // the header
    const { rows: start } = await pool.query<{ processed_rows: number }>(
      'SELECT processed_rows FROM imports WHERE organization_id = $1 AND id = $2',
      [job.organizationId, job.id],
    );
    let position = 0;
    // Rows a previous attempt committed are read past, not written again.
    while (position < (start[0]?.processed_rows ?? 0) && (await next())) position++;
    const pending: FileRow[] = [];
    for (;;) {
      for (let row = pending.length < job.batchSize ? await next() : undefined; row; ) {
        pending.push(row);
        row = pending.length < job.batchSize ? await next() : undefined;
      }
      const done = await inTransaction(pool, async (client) => {
        // The row lock orders batches with a cancel: a cancelled import takes no further batch.
        const { rows: locked } = await client.query<{ status: string; processed_rows: number }>(
          'SELECT status, processed_rows FROM imports WHERE organization_id = $1 AND id = $2 FOR UPDATE',
          [job.organizationId, job.id],
        );
        const current = locked[0];
        if (!current || (current.status !== 'queued' && current.status !== 'running')) return 'stopped' as const;
        if (current.processed_rows !== position) throw new Error(`import ${job.id}: progress moved under the job`);
        if (pending.length === 0) return 'complete' as const;
        const batch = nextBatch(job, pending);
        const counts = await writeBatch(client, job, batch);
        await client.query(
          `UPDATE imports SET status = 'running', processed_rows = processed_rows + $3, created = created + $4,
             updated = updated + $5, failed_rows = failed_rows + $6 WHERE organization_id = $1 AND id = $2`,
          [job.organizationId, job.id, batch.length, counts.created, counts.updated, counts.failed],
        );
        return batch.length;
      });
      if (done === 'stopped' || done === 'complete') return done === 'complete';
      pending.splice(0, done);
      position += done;
    }
  } finally {
    await rows.return(undefined);
  }
}
