// The database handles: one node-postgres pool shared by the Prisma client (schema owner, long tail) and raw readers.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';
import { contextualPool, UNNAMED_STATEMENTS } from './organization-setting.js';

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
 * Makes a client send every statement unnamed. A named prepared statement lives in one server session, which a
 * transaction-mode pooler (PgBouncer before 1.21, or without max_prepared_statements) does not keep for us: the next
 * execution may reach a session that never prepared it. Unnamed statements are parsed again each time (the saving
 * named ones bring is small here) and work through any pooler.
 */
function sendUnnamed(client: pg.PoolClient): void {
  // The workspace preface (organization-setting.ts) is written to the connection itself: it reads the mark there.
  (client as unknown as { connection: Record<symbol, boolean> }).connection[UNNAMED_STATEMENTS] = true;
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
    // A query object (organization-setting.ts) keeps its class: only its name goes.
    if (config !== null && typeof config === 'object' && 'submit' in config) {
      (config as { name?: string }).name = undefined;
      return query(config, ...rest);
    }
    if (config !== null && typeof config === 'object' && 'name' in config) {
      const { name: _name, ...unnamed } = config as Record<string, unknown>;
      return query(unnamed, ...rest);
    }
    return query(config, ...rest);
  };
}

export interface OpenDatabaseOptions {
  /** DATABASE_URL is a transaction-mode pooler: no named prepared statements (see sendUnnamed). */
  pooler?: boolean;
}

/**
 * A pool of `poolSize` connections; `onIdleError` hears about idle connections that fail (the pool replaces them).
 * The import thread opens its own with this.
 */
export function openPool(url: string, poolSize: number, onIdleError: (error: Error) => void, options: OpenDatabaseOptions = {}): pg.Pool {
  // A connection attempt that hangs (an unreachable host) fails after five seconds instead of holding the request.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  if (options.pooler) pool.on('connect', sendUnnamed);
  // pool.end() resolves once it has asked each connection to close, not once they are closed: an embedded database
  // stopped right after may end them first, which is no failure of ours.
  pool.on('error', (error) => {
    if (!pool.ending) onIdleError(error);
  });
  return pool;
}

/** Opens the pool (see openPool) and the Prisma client over it. */
export function openDatabase(
  url: string,
  poolSize: number,
  onIdleError: (error: Error) => void,
  options: OpenDatabaseOptions = {},
): Database {
  const pool = openPool(url, poolSize, onIdleError, options);
  // Statements of the tenant-scoped client carry its organization for row-level security (organization-setting.ts).
  const db = new PrismaClient({ adapter: new PrismaPg(contextualPool(pool)) });
  return {
    db,
    pool,
    async close() {
      await db.$disconnect();
      if (!pool.ended) await pool.end();
    },
  };
}
