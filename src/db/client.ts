// The database handles: one node-postgres pool shared by the Prisma client (schema owner, long tail) and raw readers.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

/** The unscoped Prisma client: installation-wide services only; tenant services get a `TenantDb` instead. */
export type Db = PrismaClient;
/** What a raw reader needs of the pool (a pool or one checked-out client). */
export type Queryable = Pick<pg.Pool, 'query'>;

const CONNECT_TIMEOUT_MS = 5_000;

export interface Database {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * Opens the pool of `poolSize` connections and the Prisma client over it; `onIdleError` hears about idle connections
 * that fail (the pool replaces them).
 */
export function openDatabase(url: string, poolSize: number, onIdleError: (error: Error) => void): Database {
  // A connection attempt that hangs (an unreachable host) fails after five seconds instead of holding the request.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // pool.end() resolves once it has asked each connection to close, not once they are closed: an embedded database
  // stopped right after may end them first, which is no failure of ours.
  pool.on('error', (error) => {
    if (!pool.ending) onIdleError(error);
  });
  const db = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    db,
    pool,
    async close() {
      await db.$disconnect();
      if (!pool.ended) await pool.end();
    },
  };
}
