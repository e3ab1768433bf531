// Liveness (/healthz) and readiness (/readyz: database reachable, every migration applied, the job queue installed).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { serviceUnavailable } from '../../lib/problem.js';
import { Ref, responses } from '../../lib/http-schemas.js';
import { HealthStatusSchema } from './schemas.js';

export const publicRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const health = app.services.health;
  app.get(
    '/healthz',
    { schema: { tags: ['health'], operationId: 'getHealth', summary: 'The process is up.', response: { 200: Ref(HealthStatusSchema) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        operationId: 'getReadiness',
        summary: 'The database is reachable, every migration is applied and the job queue is installed; 503 while draining.',
        description: "Checked through the application's connection pool; the answer is cached for one second.",
        response: responses({ 200: Ref(HealthStatusSchema) }, 503),
      },
    },
    async () => {
      if (app.lifecycle.draining) throw serviceUnavailable('shutting_down', 'This server process is draining before it stops.');
      const pending = await health.missing();
      if (pending instanceof Error) {
        app.log.warn({ err: pending }, 'readiness check: database unreachable');
        throw serviceUnavailable('database_unavailable', 'The database is not reachable.');
      }
      if (pending.length > 0) {
        throw serviceUnavailable('migrations_pending', `Not applied yet: ${pending.length} database migration(s) or schema(s).`);
      }
      return { status: 'ok' as const };
    },
  );
};
