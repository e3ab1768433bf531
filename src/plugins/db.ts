// Decorates the app with the database handles (`app.db`, `app.pg`) and closes them with the app.
import fp from 'fastify-plugin';
import type pg from 'pg';
import { type Db, openDatabase } from '../db/client.js';

export default fp(
  async (app) => {
    const url = app.config.databaseUrl;
    if (!url) throw new Error('databaseUrl is not set: start the embedded PostgreSQL or set DATABASE_URL first.');
    // An idle client losing its connection must not crash the process.
    const database = openDatabase(
      url,
      app.config.databasePoolSize,
      (error) => app.log.warn({ err: error }, 'idle database connection failed'),
      // A direct URL beside DATABASE_URL means DATABASE_URL is a transaction-mode pooler.
      { pooler: app.config.databaseDirectUrl !== undefined },
    );
    app.decorate('db', database.db);
    app.decorate('pg', database.pool);
    app.addHook('onClose', () => database.close());
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
