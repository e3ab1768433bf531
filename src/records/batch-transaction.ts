// One transaction for every write of an atomic batch: a CRM scope whose tenant-scoped client is a transaction's (a
// service's own `$transaction` joins it) and whose one-statement writer sends its statements through that transaction.
import type pg from 'pg';
import type { TenantDb, TenantTx } from '../db/tenant-scope.js';
import { scopeWrites, type Queryable } from '../db/tenant-writes.js';
import type { CrmScope } from './record-service.js';

/** How long an atomic batch may hold its transaction (up to 100 writes) before it is rolled back (a 500). */
const ATOMIC_TIMEOUT_MS = 60_000;

/** A PostgreSQL error as node-postgres reports it (code, constraint), from Prisma's report of a failed raw statement. */
function asDriverError(error: unknown): unknown {
  const meta = (error as { meta?: Record<string, unknown> }).meta;
  const cause = (meta?.driverAdapterError as { cause?: Record<string, unknown> } | undefined)?.cause;
  const code = cause?.originalCode ?? meta?.code;
  if (typeof code !== 'string') return error;
  const message = String(cause?.originalMessage ?? meta?.message ?? (error as Error).message);
  const named = cause?.constraint as { index?: string } | undefined;
  const constraint = named?.index ?? /constraint "([^"]+)"/.exec(message)?.[1];
  return Object.assign(new Error(message), { code, constraint });
}

/** The writer's statements as raw statements of the transaction `tx` (same rows, same errors as on the pool). */
function transactionQueryable(tx: TenantTx): Queryable {
  const query = async (config: string | pg.QueryConfig, values?: unknown[]) => {
    const text = typeof config === 'string' ? config : config.text;
    const parameters = (typeof config === 'string' ? values : config.values) ?? [];
    try {
      const rows = await tx.$queryRawUnsafe<pg.QueryResultRow[]>(text, ...parameters);
      return { rows, rowCount: rows.length, command: '', oid: 0, fields: [] };
    } catch (error) {
      throw asDriverError(error);
    }
  };
  return { query } as unknown as Queryable;
}

/** Runs `work` with a scope whose every read and write is in one transaction, committed when `work` returns. */
export function inOneTransaction<T>(scope: CrmScope, work: (scope: CrmScope) => Promise<T>): Promise<T> {
  return scope.db.$transaction(
    async (tx) => {
      // A service's own transaction becomes a part of this one.
      const db = new Proxy(tx, {
        get: (target, property) =>
          property === '$transaction' ? (inner: (tx: TenantTx) => Promise<unknown>) => inner(tx) : Reflect.get(target, property),
      }) as unknown as TenantDb;
      return work({ ...scope, db, writes: scopeWrites(transactionQueryable(tx), scope.organizationId) });
    },
    { timeout: ATOMIC_TIMEOUT_MS, maxWait: ATOMIC_TIMEOUT_MS },
  );
}
