// Decorates the app with the database handles (`app.db`, `app.pg`; `app.serving`) and closes them with the app.
import fp from 'fastify-plugin';
import type pg from 'pg';
import { type Db, openDatabase } from '../db/client.js';
import { bypassesRowSecurity } from '../db/serving-role.js';

/** What the start-up warning and the production-readiness check say when workspace requests escape the policies. */
export const ROW_SECURITY_BYPASSED =
  'Workspace requests run as a database role that bypasses row-level security (a superuser or BYPASSRLS): tenant ' +
  'isolation then rests on the application alone. Create a serving role without BYPASSRLS and set ' +
  'DATABASE_SERVING_URL to it (docs/tenant-isolation.md).';

export default fp(
  async (app) => {
    const url = app.config.databaseUrl;
    if (!url) throw new Error('databaseUrl is not set: start the embedded PostgreSQL or set DATABASE_URL first.');
    // An idle client losing its connection must not crash the process.
    const onIdleError = (error: Error) => app.log.warn({ err: error }, 'idle database connection failed');
    // A direct URL beside DATABASE_URL means DATABASE_URL is a transaction-mode pooler.
    const options = { pooler: app.config.databaseDirectUrl !== undefined };
    const database = openDatabase(url, app.config.databasePoolSize, onIdleError, options);
    const servingUrl = app.config.databaseServingUrl;
    const serving = servingUrl ? openDatabase(servingUrl, app.config.databasePoolSize, onIdleError, options) : database;
    app.decorate('db', database.db);
    app.decorate('pg', database.pool);
    app.decorate('serving', { db: serving.db, pool: serving.pool });
    app.addHook('onClose', async () => {
      if (serving !== database) await serving.close();
      await database.close();
    });
    // An unreachable database is no start-up error here (the OpenAPI generator builds the app without one); the
    // readiness check asks again.
    const bypassed = await bypassesRowSecurity(serving.pool).catch(() => false);
    if (bypassed) app.log.warn(ROW_SECURITY_BYPASSED);
  },
  { name: 'db' },
);

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The installation path (docs/tenant-isolation.md): DATABASE_URL's role, which owns the schema and is not bound by
     * row-level security. Installation-wide work only; test/tenancy/installation-path.test.ts lists its users.
     */
    db: Db;
    /** The installation path's raw pool, for the per-request lookups of authentication and tenancy (one round trip each). */
    pg: pg.Pool;
    /** The serving role's handles (DATABASE_SERVING_URL), which workspace requests' tenants are bound to. */
    serving: { db: Db; pool: pg.Pool };
  }
}
