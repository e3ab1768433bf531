// Saved views as the record kernel reads them: which views a caller sees, and the field names a view keeps, checked as
// a query's when it is saved and again at each use (a name that no longer resolves answers 400 view_field_archived).
import type { Prisma, SavedView } from '../generated/prisma/client.js';
import type { TenantPages } from '../db/tenant-pages.js';
import type { TenantDb } from '../db/tenant-scope.js';
import { isUuid } from '../lib/http-schemas.js';
import { badRequest, notFound, ProblemError, type FieldErrors } from '../lib/problem.js';
import { routesOf, type RecordType } from './definition.js';
import { isArchivedCustomField } from './custom-fields/query.js';
import { MAX_DEPTH } from './filter/validate.js';
import { recordQuery, type CheckedQuery } from './query-service.js';

/** The record types a view lists, by their collection's name. */
export const VIEW_OBJECTS = ['companies', 'contacts', 'deals', 'tasks'] as const;
export type ViewObject = (typeof VIEW_OBJECTS)[number];
export const MAX_VIEW_COLUMNS = 50;

/** What views read of a record type: its names, its record's fields, its table and its query definition. */
export type ViewableRecord = Pick<RecordType<unknown>, 'names' | 'schemas' | 'table' | 'query' | 'customFields'>;

/** A view's parts a query reads, and its columns: as a client sends them, or as stored (JSON as it was sent). */
export interface ViewParts {
  filter?: unknown;
  search?: unknown;
  sort?: unknown;
  columns?: unknown;
}

export const viewNotFound = () => notFound('Saved view not found.', 'view_not_found');

/** The views a caller sees: the workspace's, and its own personal ones (`viewer`: a user id; null for an API key). */
export const visibleTo = (viewer: string | null): Prisma.SavedViewWhereInput => ({
  OR: [{ visibility: 'workspace' }, ...(viewer ? [{ visibility: 'personal', createdBy: viewer }] : [])],
});

/** The view `id` if the caller sees it (else null: unknown, malformed, another workspace's, another member's personal one). */
export async function findVisibleView(db: TenantDb, id: string, viewer: string | null): Promise<SavedView | null> {
  if (!isUuid(id)) return null;
  return db.savedView.findFirst({ where: { id: id.toLowerCase(), ...visibleTo(viewer) } });
}

/** A stored view as a list through it reads it: its record type and parts (JSON as it was sent). */
export interface StoredView extends ViewParts {
  object: string;
  filter: unknown;
  search: string | null;
  sort: unknown;
}

/** `findVisibleView` for a list through the view: the same visibility, in one raw statement of the page reader. */
export async function readVisibleView(pages: TenantPages, id: string, viewer: string | null): Promise<StoredView | null> {
  if (!isUuid(id)) return null;
  const row = await pages.savedView(id.toLowerCase(), viewer);
  if (!row) return null;
  return {
    object: String(row.object),
    filter: row.filter,
    search: (row.search as string | null) ?? null,
    sort: row.sort,
    columns: row.columns,
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** One field name a view names, where, and as what (a sort may name an alias, a column a field of the record). */
interface NamedField {
  path: string;
  name: string;
  as: 'filter' | 'sort' | 'column';
}

/** The field names of a (well-formed) filter, sort and columns, at their paths in the view. */
function namedFields(parts: ViewParts): NamedField[] {
  const names: NamedField[] = [];
  const visit = (node: unknown, at: string, depth: number): void => {
    if (!isObject(node) || depth > MAX_DEPTH) return;
    for (const group of ['and', 'or'] as const) {
      const list = node[group];
      if (Array.isArray(list)) for (const [i, child] of list.entries()) visit(child, `${at}.${group}.${i}`, depth + 1);
    }
    if ('not' in node) visit(node.not, `${at}.not`, depth + 1);
    if (typeof node.field === 'string') names.push({ path: `${at}.field`, name: node.field, as: 'filter' });
  };
  if (parts.filter !== undefined && parts.filter !== null) visit(parts.filter, 'filter', 1);
  if (Array.isArray(parts.sort)) {
    parts.sort.forEach((key, i) => {
      if (isObject(key) && typeof key.field === 'string') names.push({ path: `sort.${i}.field`, name: key.field, as: 'sort' });
    });
  }
  if (Array.isArray(parts.columns)) {
    parts.columns.forEach((column, i) => {
      if (typeof column === 'string') names.push({ path: `columns.${i}`, name: column, as: 'column' });
    });
  }
  return names;
}

/** Per record type, built once: its query engine (the standard fields' resolver) and its record's field names. */
const viewEngines = new WeakMap<ViewableRecord, ReturnType<typeof buildViewEngine>>();
function buildViewEngine(type: ViewableRecord) {
  if (!type.query) throw new Error(`${type.names.many} have no query: no views`);
  const { query } = type;
  const engine = recordQuery<Record<string, unknown>>(type.table, query, type.customFields);
  return { query, engine, recordFields: new Set(Object.keys(type.schemas.record.properties)) };
}
function viewEngineOf(type: ViewableRecord) {
  const known = viewEngines.get(type);
  if (known) return known;
  const built = buildViewEngine(type);
  viewEngines.set(type, built);
  return built;
}

/**
 * The fields a record type's views may name in the workspace of `pages` (its custom fields read now), and the query
 * machinery they go through.
 */
export async function viewFields(type: ViewableRecord, pages: TenantPages) {
  const { query, engine, recordFields } = viewEngineOf(type);
  const fields = await engine.fieldsFor(pages);
  const resolves = ({ name, as }: NamedField): boolean =>
    fields.resolve(name) !== undefined ||
    (as === 'sort' && query.sortAliases?.[name] !== undefined) ||
    (as === 'column' && recordFields.has(name));
  return { object: routesOf(type).tag as ViewObject, engine, fields, resolves };
}

/**
 * The problems of a view's parts for `type`, by path (empty when there are none): the filter, search and sort as a
 * query's (`filter.and.1.field`, `sort.0.field`, `search`), and the columns: distinct names of fields that exist.
 */
export async function viewPartProblems(type: ViewableRecord, pages: TenantPages, parts: ViewParts): Promise<FieldErrors> {
  const { engine, fields, resolves } = await viewFields(type, pages);
  const errors: FieldErrors = {};
  const { filter, search, sort } = parts;
  const body = Object.fromEntries(Object.entries({ filter, search, sort }).filter(([, value]) => value !== undefined && value !== null));
  try {
    engine.check(body, fields.resolve);
  } catch (error) {
    if (!(error instanceof ProblemError) || !error.errors) throw error;
    Object.assign(errors, error.errors);
  }
  const { columns } = parts;
  if (columns === undefined) return errors;
  if (!Array.isArray(columns) || columns.length > MAX_VIEW_COLUMNS) {
    errors.columns = [`Expected an array of at most ${MAX_VIEW_COLUMNS} field names.`];
    return errors;
  }
  const seen = new Set<string>();
  columns.forEach((column, i) => {
    const at = `columns.${i}`;
    if (typeof column !== 'string' || column.length > 200) errors[at] = ['Expected a field name.'];
    else if (seen.has(column)) errors[at] = [`${column} is already a column.`];
    else if (!resolves({ path: at, name: column, as: 'column' })) errors[at] = [`Unknown field: ${column.slice(0, 100)}.`];
    if (typeof column === 'string') seen.add(column);
  });
  return errors;
}

/** What a list request gives a view: its own `search` and `sort` (replacing the view's when given), archive state, page. */
export interface ViewRequest {
  search?: string;
  sort?: CheckedQuery['sort'];
  archived: CheckedQuery['archived'];
  limit: number;
  cursor?: string;
}

/**
 * The query a stored view lists with. Every field name it keeps is checked against the record type's current fields
 * first: one that no longer resolves (an archived custom field) answers 400 `view_field_archived`, each at its path in
 * the view, whether or not the request replaces that part. Then the parts are checked as a query's.
 */
export async function viewQuery(
  view: StoredView,
  request: ViewRequest,
  viewed: Awaited<ReturnType<typeof viewFields>>,
): Promise<CheckedQuery> {
  const { object, engine, fields, resolves } = viewed;
  const gone = namedFields(view).filter((field) => !resolves(field));
  if (gone.length > 0) {
    const errors: FieldErrors = {};
    for (const field of gone) {
      const archived = fields.custom !== undefined && isArchivedCustomField(field.name, fields.custom);
      errors[field.path] = [archived ? `${field.name} is an archived field.` : `${field.name} is no longer a field of ${object}.`];
    }
    throw badRequest(
      'view_field_archived',
      `The view names ${gone.length === 1 ? 'a field' : 'fields'} that ${object} no longer ${gone.length === 1 ? 'has' : 'have'}: change it (PATCH) or use another view.`,
      errors,
    );
  }
  return engine.check(
    {
      ...(view.filter === null ? {} : { filter: view.filter }),
      ...(request.search !== undefined ? { search: request.search } : view.search === null ? {} : { search: view.search }),
      sort: request.sort ?? view.sort,
      archived: request.archived,
      limit: request.limit,
      ...(request.cursor === undefined ? {} : { cursor: request.cursor }),
    },
    fields.resolve,
  );
}
