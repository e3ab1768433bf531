// The behaviour every CRM record shares (companies, contacts): reads that answer 404 for unknown and malformed
// ids, writes in one statement with their automation event, database errors mapped to the API's answers. Each
// record type supplies its queries.
import type { TenantDb } from '../db/tenant-scope.js';
import type { Readable } from 'node:stream';
import type { ExportFilter } from '../db/csv-export.js';
import type { PageTable } from '../db/page-table.js';
import type { TenantPages } from '../db/tenant-pages.js';
import type { ActivityActor, ColumnValues, Numbering, TenantWrites } from '../db/tenant-writes.js';
import { isUuid } from '../lib/http-schemas.js';
import type { ListOrder, ListPageRequest } from '../lib/pagination.js';
import { changedSince, versionMatches } from '../lib/etag.js';
import { validationFailed, type ProblemError } from '../lib/problem.js';

/** The organization a CRM service works in, its tenant-scoped client and its tenant-bound writer, and who acts. */
export interface CrmScope {
  db: TenantDb;
  organizationId: string;
  writes: TenantWrites;
  actor: ActivityActor;
}

/** PostgreSQL's foreign_key_violation: a reference outside the organization (composite keys). */
const FOREIGN_KEY_VIOLATION = '23503';
/** PostgreSQL's unique_violation: a value the workspace already has (the index names the field). */
const UNIQUE_VIOLATION = '23505';

/** The queries and answers of one record type. */
export interface RecordQueries<Row, Dto extends Record<string, unknown>, Filters> {
  /** Names the events: `company` → `company.created` / `company.updated` / `company.deleted`. */
  event: 'company' | 'contact';
  toDto(row: Row): Dto;
  notFound(): ProblemError;
  /** The answer to a foreign key violation (a reference outside the organization), when the record has one. */
  invalidReference?(): ProblemError;
  /** The answer to a unique violation of the named index (a duplicate in the workspace), when the record has one. */
  duplicate?(constraint: string): ProblemError | undefined;
  /** Checks and normalizes a create or update body's record-specific fields (400 on a field), before the write. */
  prepare?(body: ColumnValues): ColumnValues;
  /** The server-assigned number a create gets (a customer code). */
  numbering?: Numbering;
  /** Timeline column of the record's activity entries. */
  timeline: 'company_id' | 'contact_id';
  /** The table and API fields the list reads and the writes set and return (a body's field is its column). */
  table: PageTable<Dto, string>;
  /** The list's conditions of the request's filters (the list and the export share them). */
  listFilter(filters: Filters): Omit<ExportFilter<string>, 'order'>;
  find(db: TenantDb, id: string): Promise<Row | null>;
}

export function recordService<Row, Dto extends Record<string, unknown>, Create, Update extends object, Filters>(
  queries: RecordQueries<Row, Dto, Filters>,
) {
  const { event, toDto, notFound } = queries;

  function mapWriteError(error: unknown): never {
    const { code, constraint } = error as { code?: unknown; constraint?: unknown };
    if (code === FOREIGN_KEY_VIOLATION && queries.invalidReference) throw queries.invalidReference();
    const duplicate = code === UNIQUE_VIOLATION && typeof constraint === 'string' ? queries.duplicate?.(constraint) : undefined;
    throw duplicate ?? error;
  }

  /** The record-specific checks, and `assigned_to` (when set) a member of the workspace. */
  async function prepared(scope: CrmScope, body: object): Promise<ColumnValues> {
    const values = queries.prepare ? queries.prepare(body as ColumnValues) : (body as ColumnValues);
    const assignee = values.assigned_to;
    if (typeof assignee === 'string' && !(await scope.db.membership.findFirst({ select: { id: true }, where: { userId: assignee } }))) {
      throw validationFailed({ assigned_to: ['Not a member of this workspace.'] });
    }
    return values;
  }

  /** The versions an If-Match names; none for `*` (any version) as for no If-Match. */
  const versionsOf = (expected?: '*' | Date[]) => (expected === '*' ? undefined : expected);

  /** Why a write at `versions` found no row: 412 when the record is there (it changed since), else 404. */
  async function unwritten(db: TenantDb, id: string, versions: Date[] | undefined): Promise<ProblemError> {
    return versions && isUuid(id) && (await queries.find(db, id)) ? changedSince() : notFound();
  }

  /**
   * Sets `archived_at` (now, or null to restore) unless it already is so, with its timeline entry. With `expected` (an
   * If-Match), only a record at one of those versions: 412 otherwise, before anything else (an archive of an archived
   * record too), and decided again in the write's own statement.
   */
  async function setArchived(scope: CrmScope, id: string, archive: boolean, expected?: '*' | Date[]): Promise<Dto> {
    const versions = versionsOf(expected);
    const current = await get(scope.db, id);
    if (!versionMatches(versions, String(current.updated_at))) throw changedSince();
    if ((current.archived_at !== null) === archive) return current;
    const kind = archive ? 'archived' : 'restored';
    const record = await scope.writes.update(
      queries.table,
      id,
      { archived_at: archive ? new Date().toISOString() : null },
      `${event}.updated`,
      versions,
      { column: queries.timeline, actor: scope.actor, kind },
    );
    if (!record) throw await unwritten(scope.db, id, versions);
    return record;
  }

  async function get(db: TenantDb, id: string): Promise<Dto> {
    const row = isUuid(id) ? await queries.find(db, id) : null;
    if (!row) throw notFound();
    return toDto(row);
  }

  return {
    /** `page.limit + 1` records in the page's order (already in API shape) when more follow, else the rest. */
    list: (pages: TenantPages, filters: Filters, page: ListPageRequest): Promise<Dto[]> =>
      pages.read(queries.table, { ...queries.listFilter(filters), ...page }),
    /** Every record of the list's filters, in `order`, as a CSV stream of `fields`. */
    csv: (pages: TenantPages, filters: Filters, order: ListOrder, fields: readonly string[]): Promise<Readable> =>
      pages.csv(queries.table, fields, { ...queries.listFilter(filters), order }),
    get,
    /** The record and its `created` event's runs commit together. */
    create: async (scope: CrmScope, body: Create): Promise<Dto> =>
      scope.writes
        .insert(queries.table, await prepared(scope, body as object), `${event}.created`, {
          activity: { column: queries.timeline, actor: scope.actor },
          numbering: queries.numbering,
        })
        .catch(mapWriteError),
    /**
     * An empty body changes nothing and dispatches no event. With `expected` (the versions an If-Match names, or `*`),
     * the change applies only to a record still at one of them: 412 otherwise, decided in the same statement.
     */
    async update(scope: CrmScope, id: string, body: Update, expected?: '*' | Date[]): Promise<Dto> {
      const versions = versionsOf(expected);
      if (Object.keys(body).length === 0) {
        const current = await get(scope.db, id);
        if (!versionMatches(versions, String(current.updated_at))) throw changedSince();
        return current;
      }
      const values = await prepared(scope, body);
      const activity = { column: queries.timeline, actor: scope.actor };
      const record = isUuid(id)
        ? await scope.writes.update(queries.table, id, values, `${event}.updated`, versions, activity).catch(mapWriteError)
        : undefined;
      if (!record) throw await unwritten(scope.db, id, versions);
      return record;
    },
    /** Archives the record (it leaves the default list); archiving an archived record changes nothing. */
    archive: (scope: CrmScope, id: string, expected?: '*' | Date[]) => setArchived(scope, id, true, expected),
    /** Restores an archived record; restoring an active one changes nothing. */
    restore: (scope: CrmScope, id: string, expected?: '*' | Date[]) => setArchived(scope, id, false, expected),
    /** The deletion and its `deleted` event's runs (the record as it was) commit together. */
    async remove(scope: CrmScope, id: string, expected?: '*' | Date[]): Promise<void> {
      const versions = versionsOf(expected);
      if (isUuid(id) && (await scope.writes.delete(queries.table, id, `${event}.deleted`, versions))) return;
      throw await unwritten(scope.db, id, versions);
    },
  };
}
