// An uploaded import file checked before anything is stored: UTF-8, a CSV with a header row, every column a known
// field of the kind or an active custom field (or mapped to one); and the rows of a file as a stream, for the job.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { parse } from 'csv-parse';
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { badRequest, ProblemError } from '../../lib/problem.js';
import { COMPANY_SCHEMAS, CompanyBodySchemas } from '../companies/schemas.js';
import { COMPANY_NUMBERING, companyPage } from '../companies/record.js';
import { CONTACT_SCHEMAS, ContactBodySchemas } from '../contacts/schemas.js';
import { contactPage } from '../contacts/record.js';
import type { PageTable } from '../../db/page-table.js';
import { CUSTOM_FIELD_VALUE_SCHEMAS } from '../../records/custom-fields/schemas.js';
import type { CustomField, CustomObject } from '../../records/custom-fields/definitions.js';
import { CUSTOM_PREFIX as CUSTOM_COLUMN } from '../../records/custom-fields/query.js';
import type { Numbering } from '../../db/tenant-writes.js';

/** The largest file accepted (also stated in the README). */
export const IMPORT_FILE_LIMIT = 50 * 1024 * 1024;

/** The export's columns that an import reads past: the database sets them. */
const IGNORED_COLUMNS = new Set(['id', 'created_at', 'updated_at', 'customer_code', 'archived_at']);

/** The contact column naming a company by customer code, website or exact name (instead of `company_id`). */
export const COMPANY_COLUMN = 'company';

/** What one kind of import writes: the create body it validates rows against, its table, and its upsert keys. */
export interface ImportKindSpec {
  body: typeof CompanyBodySchemas.create | typeof ContactBodySchemas.create;
  table: PageTable<unknown, string>;
  /** The fields a row may set (the create body's, without the ignored organization fields). */
  fields: readonly string[];
  /** Fields that cannot be null: an empty cell leaves them out (create) or unchanged (upsert). */
  required: readonly string[];
  /** Column defaults the database would apply to a single insert, for the multi-row one. */
  defaults: Record<string, unknown>;
  /** Upsert keys in order of precedence. */
  keys: readonly string[];
  /** The server-assigned number each created record gets (a company's customer code). */
  numbering?: Numbering;
  /** The column of `crm_activities` a record's timeline entries are on. */
  timeline: 'company_id' | 'contact_id';
  /** The record type whose custom fields the `custom.<key>` columns fill. */
  object: CustomObject;
}

/** The named schemas the create bodies refer to (e.g. `LifecycleStage`), for checking rows against them. */
export const IMPORT_BODY_REFERENCES: readonly TSchema[] = [...CUSTOM_FIELD_VALUE_SCHEMAS, ...COMPANY_SCHEMAS, ...CONTACT_SCHEMAS];

/** A field that takes null is a `Nullable` one: a union with the null type. */
const acceptsNull = (schema: TSchema) => Array.isArray(schema.anyOf) && schema.anyOf.some((branch: TSchema) => branch.type === 'null');

/** The body's fields a row may set: not the ignored organization fields, nor the map of custom fields (see below). */
const fieldSchemas = (body: ImportKindSpec['body']) =>
  Object.entries(body.properties as Record<string, TSchema>).filter(
    ([f]) => f !== 'organization' && f !== 'organization_id' && f !== 'custom_fields',
  );
const writable = (body: ImportKindSpec['body']) => fieldSchemas(body).map(([f]) => f);
const notNullable = (body: ImportKindSpec['body']) =>
  fieldSchemas(body)
    .filter(([, schema]) => !acceptsNull(schema))
    .map(([f]) => f);

export const IMPORT_KIND_SPECS: Record<'companies' | 'contacts', ImportKindSpec> = {
  companies: {
    body: CompanyBodySchemas.create,
    table: companyPage,
    fields: writable(CompanyBodySchemas.create),
    required: notNullable(CompanyBodySchemas.create),
    defaults: { lifecycle_stage: 'lead' },
    keys: ['website', 'email'],
    numbering: COMPANY_NUMBERING,
    timeline: 'company_id',
    object: 'company',
  },
  contacts: {
    body: ContactBodySchemas.create,
    table: contactPage,
    fields: writable(ContactBodySchemas.create),
    required: notNullable(ContactBodySchemas.create),
    defaults: {},
    keys: ['email'],
    timeline: 'contact_id',
    object: 'contact',
  },
};

/** The import's columns by position: the field each fills, or null for an ignored column. */
export type ColumnFields = (string | null)[];

export const invalidFile = (detail: string, field = 'file') => badRequest('invalid_import_file', detail, { [field]: [detail] });

/** The file's text piece by piece: UTF-8 (a BOM is dropped), anything else is refused. */
export async function* decodeImportFile(bytes: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const checked = (text: string) => {
    if (text.includes('\u0000')) throw invalidFile('The file is not a CSV text file (it contains NUL bytes).');
    return text;
  };
  try {
    for await (const piece of bytes) {
      const text = checked(decoder.decode(piece, { stream: true }));
      if (text !== '') yield text;
    }
    const rest = checked(decoder.decode());
    if (rest !== '') yield rest;
  } catch (error) {
    if (error instanceof TypeError) throw invalidFile('The file is not UTF-8 text.');
    throw error;
  }
}

/** How far the header line is looked for when choosing the delimiter. */
const HEADER_PEEK = 64 * 1024;

/**
 * The delimiter, comma or semicolon (whichever the header line holds more of), and the text again from its start:
 * only the first line (at most 64 KiB) is read ahead.
 */
export async function withDelimiter(texts: AsyncIterable<string>): Promise<{ delimiter: ',' | ';'; texts: AsyncGenerator<string> }> {
  const source = texts[Symbol.asyncIterator]();
  let head = '';
  let ended = false;
  while (!ended && !/[\r\n]/.test(head) && head.length < HEADER_PEEK) {
    const next = await source.next();
    if (next.done) ended = true;
    else head += next.value;
  }
  const header = head.slice(0, head.search(/\r?\n|$/));
  async function* again() {
    if (head !== '') yield head;
    if (ended) return;
    for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
  }
  return { delimiter: header.split(';').length > header.split(',').length ? ';' : ',', texts: again() };
}

/** A row of the file: its line number (1 is the header) and its cells. */
export interface FileRow {
  line: number;
  cells: string[];
}

/** The most characters the parser is given at once (about 250 rows of a typical file). */
export const PARSE_SLICE = 16 * 1024;

/**
 * The texts in slices of at most PARSE_SLICE characters, each after a turn of the event loop. csv-parse parses a
 * chunk in one go, so a whole stored piece of the file (1 MiB) would hold the event loop, and every task waiting on
 * it, for the whole parse (docs/benchmarks.md, Imports and exports). Uploads and jobs are parsed on the import
 * thread, whose tasks (an upload's check beside a running job) take turns between slices. A slice never ends between
 * the two halves of a surrogate pair: csv-parse encodes each chunk to UTF-8 on its own.
 */
export async function* sliced(texts: AsyncIterable<string>): AsyncGenerator<string> {
  for await (const text of texts) {
    for (let start = 0; start < text.length; ) {
      let end = Math.min(start + PARSE_SLICE, text.length);
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
      await nextTurn();
      yield text.slice(start, end);
      start = end;
    }
  }
}

/**
 * Every record of the text, parsed as it streams in (back-pressure: a piece is read when the parser wants more),
 * with the line it starts on; a malformed CSV (e.g. an unclosed quote) is a 400.
 */
export async function* parseImportFile(texts: AsyncIterable<string>, delimiter: string): AsyncGenerator<FileRow> {
  const parser = parse({ delimiter, relax_column_count: true, skip_empty_lines: true, info: true });
  // A failing source (bad UTF-8) destroys the parser with its error, which the loop below then throws.
  pipeline(Readable.from(sliced(texts)), parser).catch(() => {});
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      yield { line: info.lines, cells: record };
    }
  } catch (error) {
    if (error instanceof ProblemError) throw error;
    throw invalidFile(`The file is not valid CSV: ${(error as Error).message}`);
  } finally {
    parser.destroy();
  }
}

const MappingSchema = Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]));

/** Why a `custom.<key>` column (or mapping target) names no field the import can fill: unknown, or archived. */
function customColumnProblem(name: string, custom: readonly CustomField[], object: CustomObject): string {
  const key = name.slice(CUSTOM_COLUMN.length);
  const field = custom.find((f) => f.key === key);
  return field
    ? `"${name}": the custom field "${key}" is archived; restore it to import its values, or map the column to null.`
    : `"${name}": this workspace has no custom field "${key}" on ${object} records; map the column to null to import the rest.`;
}

/**
 * The field of each header column: the mapping's (JSON: column → field or null), else the column's own name when it
 * is a field (`custom.<key>` for an active custom field of the kind); `id`, `created_at` and `updated_at` are ignored.
 * Unknown columns, unknown or archived custom fields, unknown or repeated fields, and a file missing a required field
 * (custom ones included, as a create requires them) are refused before anything is stored.
 */
export function columnFields(
  kind: ImportKindSpec,
  header: string[],
  mappingJson: string | undefined,
  custom: readonly CustomField[] = [],
): ColumnFields {
  let mapping: Record<string, string | null> = {};
  if (mappingJson !== undefined && mappingJson !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(mappingJson);
    } catch {
      throw invalidFile('Must be a JSON object of CSV column → field.', 'mapping');
    }
    if (!Value.Check(MappingSchema, parsed)) throw invalidFile('Must be a JSON object of CSV column → field (or null).', 'mapping');
    mapping = parsed;
  }
  const active = custom.filter((field) => !field.archived);
  const standard = [...kind.fields, ...(kind === IMPORT_KIND_SPECS.contacts ? [COMPANY_COLUMN] : [])];
  const known = new Set([...standard, ...active.map((field) => `${CUSTOM_COLUMN}${field.key}`)]);
  const listed = `${standard.join(', ')}${active.length > 0 ? ' or custom.<key>' : ''}`;
  for (const column of Object.keys(mapping)) {
    if (!header.includes(column)) throw invalidFile(`The mapping names column "${column}", which the header does not have.`, 'mapping');
    const field = mapping[column];
    if (field === null || field === undefined || known.has(field)) continue;
    if (field.startsWith(CUSTOM_COLUMN)) throw invalidFile(`Mapping ${customColumnProblem(field, custom, kind.object)}`, 'mapping');
    throw invalidFile(`"${field}" is not a field of ${listed}.`, 'mapping');
  }
  const fields = header.map((column) => {
    if (Object.hasOwn(mapping, column)) return mapping[column] ?? null;
    if (known.has(column)) return column;
    if (IGNORED_COLUMNS.has(column)) return null;
    if (column.startsWith(CUSTOM_COLUMN)) throw invalidFile(`Column ${customColumnProblem(column, custom, kind.object)}`);
    throw invalidFile(`Unknown column "${column}": name it like a field (${listed}) or map it with \`mapping\`.`);
  });
  const used = fields.filter((f): f is string => f !== null);
  const repeated = used.find((f, i) => used.indexOf(f) !== i);
  if (repeated) throw invalidFile(`Two columns fill the field "${repeated}".`);
  const required = [
    ...(kind.body.required ?? []).filter((f) => f !== 'company_id' || !used.includes(COMPANY_COLUMN)),
    ...active.filter((field) => field.required).map((field) => `${CUSTOM_COLUMN}${field.key}`),
  ];
  const missing = required.filter((f) => !used.includes(f));
  if (missing.length > 0) throw invalidFile(`No column fills the required field${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`);
  return fields;
}

/** The export's formula guard undone: one `'` before `=`, `+`, `-` or `@` is removed. */
export const importCell = (cell: string) => (/^'[=+\-@]/.test(cell) ? cell.slice(1) : cell);
