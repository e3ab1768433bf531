// The behaviour every CRM record shares (companies, contacts): reads that answer 404 for unknown and malformed
// ids, writes in one transaction with their automation event, Prisma errors mapped to the API's answers. Each
// record type supplies its queries.
import { Prisma } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import type { PageRows, TenantPages } from '../../db/tenant-pages.js';
import { isUuid } from '../../lib/http-schemas.js';
import type { PageRequest } from '../../lib/pagination.js';
import type { ProblemError } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';

/** The organization a CRM service works in, and its tenant-scoped client. */
export interface CrmScope {
  db: TenantDb;
  organizationId: string;
}

/** The queries and answers of one record type. */
export interface RecordQueries<Row, Dto extends Record<string, unknown>, Create, Update, Filters> {
  /** Names the events: `company` → `company.created` / `company.updated`. */
  event: 'company' | 'contact';
  toDto(row: Row): Dto;
  notFound(): ProblemError;
  /** The answer to a foreign key violation (a reference outside the organization), when the record has one. */
  invalidReference?(): ProblemError;
  /** Newest first, `page.limit + 1` records (already in API shape) for the pager, and where a short search page stopped. */
  list(pages: TenantPages, filters: Filters, page: PageRequest): Promise<PageRows<Dto>>;
  find(db: TenantDb, id: string): Promise<Row | null>;
  insert(tx: TenantTx, body: Create, organizationId: string): Promise<Row>;
  /** Changes the body's fields; Prisma's P2025 when the record does not exist. */
  change(tx: TenantTx, id: string, body: Update): Promise<Row>;
  /** Deletes the record and answers how many rows went (0 or 1). */
  remove(db: TenantDb, id: string): Promise<number>;
}

export function recordService<Row, Dto extends Record<string, unknown>, Create, Update extends object, Filters>(
  queries: RecordQueries<Row, Dto, Create, Update, Filters>,
) {
  const { event, toDto, notFound } = queries;

  function mapWriteError(error: unknown): never {
    if (error instanceof Prisma.PrismaClientKnownRequestError) {
      if (error.code === 'P2025') throw notFound();
      if (error.code === 'P2003' && queries.invalidReference) throw queries.invalidReference();
    }
    throw error;
  }

  /** The write and its event in one transaction: automation runs exist exactly when the change commits. */
  function writeAndDispatch(scope: CrmScope, name: 'created' | 'updated', write: (tx: TenantTx) => Promise<Row>): Promise<Dto> {
    return scope.db.$transaction(async (tx) => {
      const record = toDto(await write(tx).catch(mapWriteError));
      await dispatchEvent(tx, { organizationId: scope.organizationId, name: `${event}.${name}`, data: record });
      return record;
    });
  }

  async function get(db: TenantDb, id: string): Promise<Dto> {
    const row = isUuid(id) ? await queries.find(db, id) : null;
    if (!row) throw notFound();
    return toDto(row);
  }

  return {
    list: queries.list,
    get,
    create: (scope: CrmScope, body: Create): Promise<Dto> =>
      writeAndDispatch(scope, 'created', (tx) => queries.insert(tx, body, scope.organizationId)),
    /** An empty body changes nothing and dispatches no event. */
    async update(scope: CrmScope, id: string, body: Update): Promise<Dto> {
      if (Object.keys(body).length === 0) return get(scope.db, id);
      if (!isUuid(id)) throw notFound();
      return writeAndDispatch(scope, 'updated', (tx) => queries.change(tx, id, body));
    },
    async remove(db: TenantDb, id: string): Promise<void> {
      if ((isUuid(id) ? await queries.remove(db, id) : 0) === 0) throw notFound();
    },
  };
}
