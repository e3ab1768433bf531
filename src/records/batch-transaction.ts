// One transaction for every write of a batch: a CRM scope whose tenant-scoped client is a transaction's (a
// service's own `$transaction` joins it) and whose one-statement writer sends its statements through that transaction.
import type pg from 'pg';
import { withConnectionNoted, withOrganization } from '../db/organization-setting.js';
import type { TenantDb, TenantTx } from '../db/tenant-scope.js';
import { scopeWrites, type Queryable } from '../db/tenant-writes.js';
import type { CrmScope } from './record-service.js';

/** How long a batch may hold its transaction (up to 100 writes) before it is rolled back (a 500). */
const ATOMIC_TIMEOUT_MS = 60_000;

/** Runs `attempt` after a savepoint: when it throws, only its own writes are undone. */
export type Step = <T>(attempt: () => Promise<T>) => Promise<T>;

/**
 * The transaction's own connection, checked to be it (one transaction id seen through both), so that the batch's
 * writes and savepoints go straight to it, prepared, without a Prisma call each. Anything else is a fault of the
 * setting module's noting (a 500), never a batch whose writes land outside its transaction.
 */
async function sameConnection(tx: TenantTx, connection: pg.PoolClient | undefined): Promise<Queryable> {
  const [viaPrisma] = await tx.$queryRawUnsafe<Array<{ id: string }>>('SELECT txid_current()::text AS id');
  const rows = connection ? (await connection.query<{ id: string }>('SELECT txid_current()::text AS id')).rows : [];
  if (connection === undefined || rows[0]?.id !== viaPrisma?.id) {
    throw new Error("a batch's transaction connection was not noted: its writes would run outside the transaction");
  }
  return connection;
}

/**
 * Runs `work` with a scope whose every read and write is in one transaction, committed when `work` returns, and a
 * `step` that confines a part's failure to that part (a savepoint).
 */
export function inOneTransaction<T>(scope: CrmScope, work: (scope: CrmScope, step: Step) => Promise<T>): Promise<T> {
  return withConnectionNoted((connection) =>
    scope.db.$transaction(
      async (tx) => {
        // A service's own transaction becomes a part of this one.
        const db = new Proxy(tx, {
          get: (target, property) =>
            property === '$transaction' ? (inner: (tx: TenantTx) => Promise<unknown>) => inner(tx) : Reflect.get(target, property),
        }) as unknown as TenantDb;
        const statements = await withOrganization(scope.organizationId, () => sameConnection(tx, connection()));
        const run = (text: string) => withOrganization(scope.organizationId, () => statements.query(text));
        const step: Step = async (attempt) => {
          // Not released after: the next step's savepoint nests inside this one (a round trip less per step), and a
          // rollback goes to the newest savepoint of the name, the failing step's own; the commit keeps them all.
          await run('SAVEPOINT batch_operation');
          try {
            return await attempt();
          } catch (error) {
            await run('ROLLBACK TO SAVEPOINT batch_operation');
            throw error;
          }
        };
        return work({ ...scope, db, writes: scopeWrites(statements, scope.organizationId) }, step);
      },
      { timeout: ATOMIC_TIMEOUT_MS, maxWait: ATOMIC_TIMEOUT_MS },
    ),
  );
}
