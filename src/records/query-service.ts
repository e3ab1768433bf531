// A record type's query (POST …/query/): the body checked with the path of each problem, the filter compiled, a
// multi-key order with empty values last and text in the order people read it, and keyset cursors over that order.
import { NATURAL_COLLATION, type ArchivedFilter, type PageCondition } from '../db/page-query.js';
import type { IndexedTerm, OrderKey } from '../db/query-page.js';
import type { TenantPages } from '../db/tenant-pages.js';
import { isUuid } from '../lib/http-schemas.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../lib/pagination.js';
import { validationFailed, type FieldErrors } from '../lib/problem.js';
import { SEARCH_TERM_PATTERN } from '../lib/text-search.js';
import type { RecordType } from './definition.js';
import type { QueryDefinition } from './filter/resolve.js';

/** What a query reads of its record type: the fields, company link and search it declares. */
type Queryable = { query: QueryDefinition };
import { compileFilter } from './filter/compile.js';
import { SQL_TYPES } from './filter/fields.js';
import { fieldResolver, type FieldResolver, type ResolvedField } from './filter/resolve.js';
import { validateFilter, type FilterNode } from './filter/validate.js';
import { readCustomFields, type CustomObject } from './custom-fields/definitions.js';
import { withCustomFieldResolver, type QueryCustomFields } from './custom-fields/query.js';

const BODY_KEYS = new Set(['filter', 'search', 'sort', 'archived', 'limit', 'cursor']);
const ARCHIVED = ['active', 'archived', 'all'];
const MAX_SORT_KEYS = 3;

export interface QueryPage<Dto> {
  results: Dto[];
  next_cursor: string | null;
}

/** A query's parts once checked: what the page reader needs, and the sort's signature its cursors carry. */
export interface CheckedQuery {
  filter?: FilterNode;
  search?: string;
  sort: Array<{ field: string; direction: 'asc' | 'desc' }>;
  archived: ArchivedFilter;
  limit: number;
  cursor?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The order keys of one sort field: the value in its direction, after a flag that puts empty values last unless the
 * field is `filled` (never empty: the key is then its index's own expression).
 */
export function sortKeys(field: ResolvedField, descending: boolean): OrderKey[] {
  const { spec } = field;
  // A field with an index of its own sorts by the index's expression, which that index then reads in order.
  const sql = field.indexSql ?? field.sql;
  if (spec.filled) {
    const collation = spec.type === 'text' ? NATURAL_COLLATION : undefined;
    return [{ sql: collation ? `(${sql} COLLATE "${collation}")` : sql, type: SQL_TYPES[spec.type], descending, collation, filled: true }];
  }
  const empty = spec.type === 'text' ? `(coalesce(${sql}, '') = '')` : `(${sql} IS NULL)`;
  const flag: OrderKey = { sql: empty, type: 'boolean', descending: false, emptyFlag: true };
  if (spec.type === 'text')
    return [flag, { sql: `(nullif(${sql}, '') COLLATE "${NATURAL_COLLATION}")`, type: 'text', descending, collation: NATURAL_COLLATION }];
  if (spec.type === 'enum') {
    const values = (spec.values ?? []).map((value) => `'${value.replaceAll("'", "''")}'`).join(', ');
    return [flag, { sql: `array_position(ARRAY[${values}]::text[], ${sql})`, type: 'int', descending }];
  }
  // Filled as far as the order goes (the flag puts empty values last): descending, it is the backward scan of a
  // custom field's value index (see splitByEmptyFlag in src/db/query-page.ts).
  return [flag, { sql, type: SQL_TYPES[spec.type], descending, ...(field.indexSql ? { filled: true } : {}) }];
}

const RANGES: ReadonlySet<string> = new Set(['lt', 'lte', 'gt', 'gte']);

/**
 * What every match of the query holds that an index finds, from what the whole filter requires (the filter itself, or
 * the children of its top `and`): a term in its search_text (the `search`, or a `contains` on a field search_text is
 * made of), else the ranges of the first custom field with an index of its own.
 */
function indexedTerm(checked: CheckedQuery): IndexedTerm | undefined {
  if (checked.search) return { text: checked.search };
  const { filter } = checked;
  const required = filter?.kind === 'and' ? filter.children : filter ? [filter] : [];
  for (const node of required) {
    if (node.kind === 'condition' && node.op === 'contains' && node.field.searched && typeof node.value === 'string') {
      return { text: node.value };
    }
  }
  const ranges = required.filter((node) => node.kind === 'condition' && node.field.indexSql !== undefined && RANGES.has(node.op));
  const first = ranges[0];
  if (first?.kind !== 'condition') return undefined;
  // The candidates' condition compares the index's expression, which the index serves under the workspace policy.
  const children = ranges.flatMap((node) =>
    node.kind === 'condition' && node.field.name === first.field.name
      ? [{ ...node, field: { ...node.field, sql: node.field.indexSql as string } }]
      : [],
  );
  return { condition: compileFilter({ kind: 'and', children }) };
}

/** Checks a query body: every problem at its path (`filter.and.1.op`, `sort.0.field`), all of them at once. */
export function checkQuery(body: unknown, resolve: FieldResolver, type: Queryable): CheckedQuery {
  const errors: FieldErrors = {};
  const fail = (at: string, message: string): void => {
    errors[at] = [...(errors[at] ?? []), message];
  };
  const input = body ?? {};
  if (!isObject(input)) throw validationFailed({ body: ['Expected a JSON object.'] });
  for (const key of Object.keys(input)) if (!BODY_KEYS.has(key)) fail(key, 'Unknown field.');
  let filter: FilterNode | undefined;
  if (input.filter !== undefined) {
    const checked = validateFilter(input.filter, resolve);
    Object.assign(errors, checked.errors);
    filter = checked.node;
  }
  const { search, archived, limit, cursor } = input;
  if (search !== undefined) {
    if (!type.query.search) fail('search', 'This record type has no search: use a filter.');
    else if (typeof search !== 'string' || search.length > 200 || !new RegExp(SEARCH_TERM_PATTERN, 'u').test(search)) {
      fail('search', 'Expected a search term of at most 200 characters, without control characters.');
    }
  }
  if (archived !== undefined && !ARCHIVED.includes(archived as string)) fail('archived', `Expected one of: ${ARCHIVED.join(', ')}.`);
  if (limit !== undefined && !(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_LIMIT)) {
    fail('limit', `Expected an integer from 1 to ${MAX_LIMIT}.`);
  }
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length > 4000)) fail('cursor', 'Invalid cursor.');
  const sort: CheckedQuery['sort'] = [];
  if (input.sort !== undefined) {
    if (!Array.isArray(input.sort) || input.sort.length > MAX_SORT_KEYS)
      fail('sort', `Expected an array of at most ${MAX_SORT_KEYS} sort keys.`);
    else {
      for (const [i, key] of (input.sort as unknown[]).entries()) {
        const at = `sort.${i}`;
        if (!isObject(key)) {
          fail(at, 'Expected {field, direction}.');
          continue;
        }
        for (const name of Object.keys(key)) if (name !== 'field' && name !== 'direction') fail(`${at}.${name}`, 'Unknown field.');
        const direction = key.direction ?? 'asc';
        if (direction !== 'asc' && direction !== 'desc') fail(`${at}.direction`, 'Expected asc or desc.');
        const field = key.field;
        const resolved = typeof field === 'string' ? resolve(field) : undefined;
        const known = typeof field === 'string' && (type.query.sortAliases?.[field] !== undefined || resolved !== undefined);
        if (resolved?.spec.type === 'multi_select') fail(`${at}.field`, 'A multi_select field holds several values: it does not sort.');
        else if (known) sort.push({ field: field as string, direction: direction as 'asc' | 'desc' });
        else fail(`${at}.field`, typeof field === 'string' ? `Unknown field: ${field.slice(0, 100)}.` : 'Expected a field name.');
      }
    }
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return {
    filter,
    search: typeof search === 'string' && search !== '' ? search : undefined,
    sort,
    archived: (archived as ArchivedFilter | undefined) ?? 'active',
    limit: (limit as number | undefined) ?? DEFAULT_LIMIT,
    cursor: cursor as string | undefined,
  };
}

/** The order keys of a checked sort (newest first without one), aliases expanded. */
export function orderKeys(table: string, sort: CheckedQuery['sort'], resolve: FieldResolver, type: Queryable): OrderKey[] {
  if (sort.length === 0) return [{ sql: `${table}.created_at`, type: 'timestamptz', descending: true, filled: true }];
  return sort.flatMap(({ field, direction }) =>
    (type.query.sortAliases?.[field] ?? [field]).flatMap((name) => sortKeys(resolve(name) as ResolvedField, direction === 'desc')),
  );
}

const KEY_TEXT: Record<string, RegExp> = {
  boolean: /^(true|false)$/,
  int: /^-?\d{1,9}$/,
  // Custom numbers are any finite JSON number: numeric's text of one may be long.
  numeric: /^-?\d{1,400}(\.\d{1,400})?$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  timestamptz: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}(:\d{2})?)$/,
};

/** Whether a cursor's key text is a value of its SQL type (a tampered cursor must be a 400, never a failing cast). */
function validKey(value: unknown, key: OrderKey): boolean {
  if (value === null) return true;
  if (typeof value !== 'string' || value.length > 4000 || value.includes('\u0000')) return false;
  if (key.type === 'uuid') return isUuid(value);
  if (key.type === 'timestamptz' && Number.isNaN(Date.parse(value))) return false;
  if (key.type === 'date' && Number.isNaN(Date.parse(`${value}T00:00:00Z`))) return false;
  return KEY_TEXT[key.type]?.test(value) ?? key.type === 'text';
}

const signatureOf = (sort: CheckedQuery['sort']) =>
  sort.map(({ field, direction }) => `${direction === 'desc' ? '-' : ''}${field}`).join(',');

export const encodeQueryCursor = (sort: CheckedQuery['sort'], keys: readonly (string | null)[]) =>
  Buffer.from(JSON.stringify({ sort: signatureOf(sort), keys })).toString('base64url');

/** The keys a cursor names, checked against the query's order (another sort's cursor or a tampered one: 400). */
export function decodeQueryCursor(cursor: string | undefined, sort: CheckedQuery['sort'], keys: readonly OrderKey[]) {
  if (cursor === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (isObject(parsed) && parsed.sort !== signatureOf(sort) && typeof parsed.sort === 'string') {
    throw validationFailed({ cursor: ['The cursor belongs to another sort: start again without it.'] });
  }
  const values = isObject(parsed) && Array.isArray(parsed.keys) ? (parsed.keys as unknown[]) : undefined;
  if (
    !values ||
    values.length !== keys.length ||
    !values.every((value, i) => validKey(value, keys[i] as OrderKey)) ||
    values.at(-1) === null
  ) {
    throw validationFailed({ cursor: ['Invalid cursor.'] });
  }
  return values as (string | null)[];
}

/** The custom fields a query of `object` (and of its company, when linked) may name, read for this request. */
async function customFieldsOf(pages: TenantPages, object: CustomObject, query: QueryDefinition): Promise<QueryCustomFields> {
  const company = query.company;
  const [own, companyFields] = await Promise.all([
    readCustomFields(pages, object),
    company ? readCustomFields(pages, 'company') : Promise.resolve(undefined),
  ]);
  return { own, company: company && companyFields ? { column: company.column, fields: companyFields } : undefined };
}

/** The fields one request may name: the resolver, and the workspace's custom fields it was built with (if any). */
export interface RequestFields {
  resolve: FieldResolver;
  custom?: QueryCustomFields;
}

/**
 * A record type's query: its field resolver, the check of a body, and one page with the cursor of the next; with
 * `customObject`, the workspace's custom fields too, read per request (a field created, changed or archived a moment
 * ago counts at once).
 */
export function recordQuery<Dto>(table: RecordType['table'], query: QueryDefinition, customObject?: CustomObject) {
  const type: Queryable = { query };
  const standard = fieldResolver(table.table, query);
  /** The fields this request may name. */
  async function fieldsFor(pages: TenantPages): Promise<RequestFields> {
    if (!customObject) return { resolve: standard };
    const custom = await customFieldsOf(pages, customObject, query);
    return { resolve: withCustomFieldResolver(standard, table.table, custom), custom };
  }
  /** One page of a checked query, narrowed further by `conditions` (a list's own filters when it goes through a view). */
  async function page(
    pages: TenantPages,
    checked: CheckedQuery,
    resolve: FieldResolver,
    conditions: readonly PageCondition[] = [],
  ): Promise<QueryPage<Dto>> {
    const keys = orderKeys(table.table, checked.sort, resolve, type);
    const withTiebreak = [...keys, { sql: '', type: 'uuid', descending: false }];
    const after = decodeQueryCursor(checked.cursor, checked.sort, withTiebreak);
    const indexed = indexedTerm(checked);
    const rows = await pages.query<Dto>(table, {
      conditions: [...conditions, ...(checked.filter ? [compileFilter(checked.filter)] : [])],
      archived: checked.archived,
      search: checked.search,
      ...(indexed ? { indexed } : {}),
      keys,
      after,
      limit: checked.limit,
    });
    const results = rows.slice(0, checked.limit);
    const last = results.at(-1);
    return {
      results: results.map(({ row }) => row),
      next_cursor: rows.length > checked.limit && last ? encodeQueryCursor(checked.sort, last.keys) : null,
    };
  }
  return {
    /** The standard fields alone (a list's own filters name only those). */
    resolve: standard,
    fieldsFor,
    /** A query body checked against `resolve` (400 with the path of each problem). */
    check: (body: unknown, resolve: FieldResolver) => checkQuery(body, resolve, type),
    page,
    async query(pages: TenantPages, body: unknown): Promise<QueryPage<Dto>> {
      const { resolve } = await fieldsFor(pages);
      return page(pages, checkQuery(body, resolve, type), resolve);
    },
  };
}
