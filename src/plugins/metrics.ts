// Prometheus metrics: requests by route and status, queue depths, pool usage, event-loop lag; never public by default.
import { createServer, type Server } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { unauthorized } from '../lib/problem.js';

/** Depth of the two work queues by status, read at scrape time (one small GROUP BY each, on indexed status columns). */
const QUEUES = [
  { name: 'crm_outbox_emails', help: 'Email outbox rows by status.', table: 'email_outbox' },
  { name: 'crm_automation_runs', help: 'Automation runs by status.', table: 'automation_runs' },
] as const;

export default fp(
  async (app) => {
    const { port, token } = app.config.metrics;
    if (port === null && token === null) return;

    const registry = new Registry();
    // Includes nodejs_eventloop_lag_seconds (and its percentiles), heap and GC figures.
    collectDefaultMetrics({ register: registry });
    const labelNames = ['method', 'route', 'status'] as const;
    const requests = new Counter({
      name: 'crm_http_requests_total',
      help: 'HTTP requests by route and status.',
      labelNames,
      registers: [registry],
    });
    const duration = new Histogram({
      name: 'crm_http_request_duration_seconds',
      help: 'HTTP request latency by route and status.',
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    app.addHook('onResponse', async (request, reply) => {
      // The route's pattern, never the raw URL: ids and tokens in paths would explode the label set and leak.
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
      requests.inc(labels);
      duration.observe(labels, reply.elapsedTime / 1000);
    });
    const pool = app.pg;
    new Gauge({
      name: 'crm_pg_pool_connections',
      help: 'PostgreSQL pool connections: total, idle, and requests waiting for one.',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
    for (const queue of QUEUES) {
      new Gauge({
        name: queue.name,
        help: queue.help,
        labelNames: ['status'],
        registers: [registry],
        async collect() {
          this.reset();
          const { rows } = await pool.query<{ status: string; count: string }>(
            `SELECT status::text, count(*) FROM ${queue.table} GROUP BY status`,
          );
          for (const row of rows) this.set({ status: row.status }, Number(row.count));
        },
      });
    }

    if (token !== null) {
      const expected = Buffer.from(`Bearer ${token}`);
      app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
        const given = Buffer.from(request.headers.authorization ?? '');
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthorized();
        return reply.type(registry.contentType).send(await registry.metrics());
      });
    }
    if (port !== null) {
      // A listener of its own: bind it where only the monitoring network reaches, and it needs no token.
      const server: Server = createServer((request, response) => {
        if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
          response.writeHead(404).end();
          return;
        }
        registry.metrics().then(
          (body) => response.writeHead(200, { 'content-type': registry.contentType }).end(body),
          (error: unknown) => {
            app.log.warn({ err: error }, 'metrics collection failed');
            response.writeHead(503).end();
          },
        );
      });
      app.addHook('onReady', async () => {
        server.listen(port, app.config.host);
        await once(server, 'listening');
        app.log.info({ port: (server.address() as { port: number }).port }, 'metrics listening');
      });
      app.addHook('onClose', async () => {
        if (server.listening) await new Promise((resolve) => server.close(resolve));
      });
      app.decorate('metricsServer', server);
    }
  },
  { name: 'metrics', dependencies: ['db'] },
);

declare module 'fastify' {
  interface FastifyInstance {
    /** The separate metrics listener, when METRICS_PORT is set. */
    metricsServer?: import('node:http').Server;
  }
}
