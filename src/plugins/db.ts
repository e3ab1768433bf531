// The database: one node-postgres pool, shared by the Prisma client (`app.db`) and the hot-path lookups (`app.pg`).
import fp from 'fastify-plugin';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

export type Db = PrismaClient;

const POOL_SIZE = 10;
const CONNECT_TIMEOUT_MS = 5_000;

export default fp(
  async (app) => {
    const url = app.config.databaseUrl;
    if (!url) throw new Error('databaseUrl is not set: start the embedded PostgreSQL or set DATABASE_URL first.');
    // A connection attempt that hangs (an unreachable host) fails after five seconds instead of holding the request.
    const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    pool.on('error', (error) => app.log.warn({ err: error }, 'idle database connection failed'));
    const db = new PrismaClient({ adapter: new PrismaPg(pool) });
    app.decorate('db', db);
    app.decorate('pg', pool);
    app.addHook('onClose', async () => {
      await db.$disconnect();
      if (!pool.ended) await pool.end();
    });
  },
  { name: 'db' },
);

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
    /** The raw pool, for the per-request lookups of authentication and tenancy (one round trip each). */
    pg: pg.Pool;
  }
}
