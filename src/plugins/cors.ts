// CORS for browser front ends on the API and its document: the origin of SERVICE_APP_URL plus CORS_ORIGINS; never the console.
import fp from 'fastify-plugin';
import cors from '@fastify/cors';

/** Request headers a front end sends to the API. */
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match'];
/** Response headers a front end's script must read: paging, retries, replays, versions, created records, limits. */
const EXPOSED_HEADERS = [
  'Link',
  'Retry-After',
  'Idempotent-Replayed',
  'ETag',
  'Location',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
];
/** How long a browser may reuse a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = 600;

/** Only the API and its document are for other origins; the console (its cookie session) stays same-origin. */
const servesBrowsers = (url: string) => url.startsWith('/api/') || url === '/openapi.json' || url.startsWith('/openapi.json?');

export default fp(
  async (app) => {
    const { corsOrigins, appUrl } = app.config;
    const allowed = corsOrigins === '*' ? '*' : new Set([new URL(appUrl).origin, ...corsOrigins]);
    const base = {
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ALLOWED_HEADERS,
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: PREFLIGHT_MAX_AGE,
      // Bearer tokens, never cookies: no credentials mode.
      credentials: false,
    };
    await app.register(cors, {
      delegator: (request, callback) => {
        if (!servesBrowsers(request.url ?? '')) return callback(null, { origin: false });
        const origin = request.headers.origin;
        callback(null, { ...base, origin: allowed === '*' ? '*' : origin !== undefined && allowed.has(origin) ? origin : false });
      },
    });
  },
  { name: 'cors' },
);
