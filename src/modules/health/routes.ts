// Liveness (/healthz) and readiness (/readyz: database reachable, every migration applied, the job queue installed).
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { pendingMigrations } from '../../db/migrate.js';
import { jobQueueInstalled } from '../../jobs/install.js';
import { migrationsDir } from '../../lib/project-root.js';
import { serviceUnavailable } from '../../lib/problem.js';
import { named, Ref, responses } from '../../lib/http-schemas.js';

const READINESS_CACHE_MS = 1000;

export const HealthStatusSchema = Type.Object(
  { status: Type.Literal('ok') },
  { ...named('HealthStatus'), description: 'The answer of a passing liveness or readiness check.' },
);

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], operationId: 'getHealth', summary: 'The process is up.', response: { 200: Ref(HealthStatusSchema) } } },
    async () => ({ status: 'ok' as const }),
  );

  /**
   * The answer is computed at most once a second and shared by every caller meanwhile, through the app's pool: an
   * unauthenticated flood then costs no connection beyond the pool and a single query per second.
   */
  let readiness: { at: number; result: Promise<string[] | Error> } | undefined;
  /** What is missing: pending migrations, and the job queue's schema (installed at start, after them). */
  const missing = async () => {
    const pending = await pendingMigrations(app.pg, migrationsDir);
    return (await jobQueueInstalled(app.pg)) ? pending : [...pending, 'the job queue schema'];
  };
  const checkReadiness = () => {
    const now = Date.now();
    if (!readiness || now - readiness.at >= READINESS_CACHE_MS) {
      readiness = { at: now, result: missing().catch((error: Error) => error) };
    }
    return readiness.result;
  };

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
      const pending = await checkReadiness();
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
export default routes;
