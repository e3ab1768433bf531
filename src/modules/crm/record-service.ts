// The behaviour every CRM record shares (companies, contacts): reads that answer 404 for unknown and malformed
// ids, writes in one statement with their automation event, database errors mapped to the API's answers, and
// versions: every read and write answers the record's version, updates and deletes may be conditional on it (412).
// Each record type supplies its queries.
import type { TenantDb } from '../../db/tenant-scope.js';
import type { PageRows, PageTable, TenantPages } from '../../db/tenant-pages.js';
import type { ColumnValues, TenantWrites, Versioned } from '../../db/tenant-writes.js';
import { isUuid } from '../../lib/http-schemas.js';
import type { PageRequest } from '../../lib/pagination.js';
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
export interface RecordQueries<Dto extends Record<string, unknown>, Filters> {
  /** Names the events: `company` → `company.created` / `company.updated`. */
  event: 'company' | 'contact';
  notFound(): ProblemError;
  /** The answer to a foreign key violation (a reference outside the organization), when the record has one. */
  invalidReference?(): ProblemError;
  /** The table and API fields the list reads and the writes set and return (a body's field is its column). */
  table: PageTable<Dto, string>;
  /** Newest first, `page.limit + 1` records (already in API shape) for the pager, and where a short search page stopped. */
  list(pages: TenantPages, filters: Filters, page: PageRequest): Promise<PageRows<Dto>>;
}

export function recordService<Dto extends Record<string, unknown>, Create, Update extends object, Filters>(
  queries: RecordQueries<Dto, Filters>,
) {
  const { event, notFound } = queries;

  function mapWriteError(error: unknown): never {
    if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION && queries.invalidReference) throw queries.invalidReference();
    throw error;
  }

  /** The record with its version; 404 for an unknown or malformed id. */
  async function get(writes: TenantWrites, id: string): Promise<Versioned<Dto>> {
    const current = isUuid(id) ? await writes.current(queries.table, id) : undefined;
    if (!current) throw notFound();
    return current;
  }

  /** Why a conditional write changed nothing: the record is gone (404), or at another version than `expected` (412). */
  async function refusal(writes: TenantWrites, id: string, expected: readonly string[] | undefined): Promise<never> {
    if (expected && (await writes.current(queries.table, id))) throw preconditionFailed();
    throw notFound();
  }

  return {
    list: queries.list,
    get,
    /** The record and its `created` event's runs commit together. */
    create: (scope: CrmScope, body: Create): Promise<Versioned<Dto>> =>
      scope.writes.insert(queries.table, body as ColumnValues, `${event}.created`).catch(mapWriteError),
    /**
     * An empty body changes nothing and dispatches no event. With `expected` versions (If-Match), the record is
     * changed only at one of them, checked in the writing statement itself.
     */
    async update(scope: CrmScope, id: string, body: Update, expected?: readonly string[]): Promise<Versioned<Dto>> {
      if (Object.keys(body).length === 0) {
        const current = await get(scope.writes, id);
        if (expected && !expected.includes(current.version)) throw preconditionFailed();
        return current;
      }
      const record = isUuid(id)
        ? await scope.writes.update(queries.table, id, body as ColumnValues, `${event}.updated`, expected).catch(mapWriteError)
        : undefined;
      return record ?? refusal(scope.writes, id, expected);
    },
    /** With `expected` versions (If-Match), only at one of them. */
    async remove(scope: CrmScope, id: string, expected?: readonly string[]): Promise<void> {
      if ((isUuid(id) ? await scope.writes.remove(queries.table, id, expected) : 0) === 0) await refusal(scope.writes, id, expected);
    },
  };
}
