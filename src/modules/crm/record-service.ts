// The behaviour every CRM record shares (companies, contacts): reads that answer 404 for unknown and malformed
// ids, writes in one statement with their automation event, database errors mapped to the API's answers. Each
// record type supplies its queries.
import type { TenantDb } from '../../db/tenant-scope.js';
import type { PageTable, TenantPages } from '../../db/tenant-pages.js';
import type { ColumnValues, TenantWrites } from '../../db/tenant-writes.js';
import { isUuid } from '../../lib/http-schemas.js';
import type { ListPageRequest } from '../../lib/pagination.js';
import { preconditionFailed, type ProblemError } from '../../lib/problem.js';

/** The organization a CRM service works in, its tenant-scoped client and its tenant-bound writer. */
export interface CrmScope {
  db: TenantDb;
  organizationId: string;
  writes: TenantWrites;
}

/** PostgreSQL's foreign_key_violation: a reference outside the organization (composite keys). */
const FOREIGN_KEY_VIOLATION = '23503';

/** The queries and answers of one record type. */
export interface RecordQueries<Row, Dto extends Record<string, unknown>, Filters> {
  /** Names the events: `company` → `company.created` / `company.updated` / `company.deleted`. */
  event: 'company' | 'contact';
  toDto(row: Row): Dto;
  notFound(): ProblemError;
  /** The answer to a foreign key violation (a reference outside the organization), when the record has one. */
  invalidReference?(): ProblemError;
  /** The table and API fields the list reads and the writes set and return (a body's field is its column). */
  table: PageTable<Dto, string>;
  /** `page.limit + 1` records in the page's order (already in API shape) when more follow, else the rest. */
  list(pages: TenantPages, filters: Filters, page: ListPageRequest): Promise<Dto[]>;
  find(db: TenantDb, id: string): Promise<Row | null>;
}

const changedSince = () => preconditionFailed('The record changed since the version named in If-Match.');

export function recordService<Row, Dto extends Record<string, unknown>, Create, Update extends object, Filters>(
  queries: RecordQueries<Row, Dto, Filters>,
) {
  const { event, toDto, notFound } = queries;

  function mapWriteError(error: unknown): never {
    if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION && queries.invalidReference) throw queries.invalidReference();
    throw error;
  }

  async function get(db: TenantDb, id: string): Promise<Dto> {
    const row = isUuid(id) ? await queries.find(db, id) : null;
    if (!row) throw notFound();
    return toDto(row);
  }

  return {
    list: queries.list,
    get,
    /** The record and its `created` event's runs commit together. */
    create: (scope: CrmScope, body: Create): Promise<Dto> =>
      scope.writes.insert(queries.table, body as ColumnValues, `${event}.created`).catch(mapWriteError),
    /**
     * An empty body changes nothing and dispatches no event. With `expected` (the versions an If-Match names, or `*`),
     * the change applies only to a record still at one of them: 412 otherwise, decided in the same statement.
     */
    async update(scope: CrmScope, id: string, body: Update, expected?: '*' | Date[]): Promise<Dto> {
      const versions = expected === '*' ? undefined : expected;
      if (Object.keys(body).length === 0) {
        const current = await get(scope.db, id);
        if (versions && !versions.some((d) => d.getTime() === Date.parse(String(current.updated_at)))) throw changedSince();
        return current;
      }
      const record = isUuid(id)
        ? await scope.writes.update(queries.table, id, body as ColumnValues, `${event}.updated`, versions).catch(mapWriteError)
        : undefined;
      if (!record) throw versions && (await queries.find(scope.db, id)) ? changedSince() : notFound();
      return record;
    },
    /** The deletion and its `deleted` event's runs (the record as it was) commit together. */
    async remove(scope: CrmScope, id: string, expected?: '*' | Date[]): Promise<void> {
      const versions = expected === '*' ? undefined : expected;
      if (isUuid(id) && (await scope.writes.delete(queries.table, id, `${event}.deleted`, versions))) return;
      throw versions && isUuid(id) && (await queries.find(scope.db, id)) ? changedSince() : notFound();
    },
  };
}
