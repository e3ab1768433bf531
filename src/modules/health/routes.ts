// Liveness (/healthz) and readiness (/readyz: database reachable, every migration applied).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { pendingMigrations } from '../../db/migrate.js';
import { migrationsDir } from '../../lib/project-root.js';
import { serviceUnavailable } from '../../lib/problem.js';
import { responses } from '../../lib/http-schemas.js';

const StatusSchema = Type.Object({ status: Type.Literal('ok') }, { $id: 'HealthStatus', title: 'HealthStatus' });

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], operationId: 'getHealth', summary: 'The process is up.', response: { 200: StatusSchema } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        operationId: 'getReadiness',
        summary: 'The database is reachable and every migration is applied.',
        response: responses({ 200: StatusSchema }, 503),
      },
    },
    async () => {
      let pending: string[];
      try {
        pending = await pendingMigrations(app.config.databaseUrl!, migrationsDir);
      } catch (error) {
        app.log.warn({ err: error }, 'readiness check: database unreachable');
        throw serviceUnavailable('database_unavailable', 'The database is not reachable.');
      }
      if (pending.length > 0) throw serviceUnavailable('migrations_pending', `${pending.length} database migration(s) are not applied.`);
      return { status: 'ok' as const };
    },
  );
};
export default routes;
