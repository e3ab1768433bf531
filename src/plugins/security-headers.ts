// Security headers on every answer (errors and unknown routes included): helmet's defaults, computed once at startup.
import fp from 'fastify-plugin';
import helmet from 'helmet';

/**
 * The headers helmet's middleware sets, recorded once rather than built again for every request as @fastify/helmet
 * does (docs/benchmarks.md, The list path): they never change here, since no route uses nonces or per-route options.
 * The console replaces some of them for its pages (console/plugin.ts).
 */
export function helmetHeaders(): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  // The middleware is synchronous and, with helmet's defaults, reads nothing of the request.
  helmet()({} as never, recorder as never, (error?: unknown) => {
    if (error) throw error;
  });
  return Object.freeze(headers);
}

export default fp(
  async (app) => {
    const headers = helmetHeaders();
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(headers);
      done();
    });
  },
  { name: 'security-headers' },
);
