// CORS for the paths a browser front end on another origin calls (the API, the OpenAPI document): the allowed
// origins from the config, preflights answered before authentication and rate limits, the headers scripts must read.
import fp from 'fastify-plugin';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';

/** Methods the API's routes use. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Request headers a front end sends beyond the CORS-safelisted ones. */
const REQUEST_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match'];
/**
 * Response headers a script may read (besides the safelisted Content-Type and the like): paging, retries, replays,
 * concurrency control, created resources, rate limits, downloads. Sent on errors too: a 429's Retry-After matters most.
 */
export const EXPOSED_HEADERS = [
  'Link',
  'Retry-After',
  'Idempotent-Replayed',
  'ETag',
  'Location',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Content-Disposition',
];
/** Seconds a browser may reuse a preflight's answer: Chromium caps it at 7200, Firefox at 86400. */
export const PREFLIGHT_MAX_AGE = 7200;

export interface CorsPluginOptions {
  /** Path prefixes (or exact paths) that answer cross-origin calls; everything else stays same-origin (no CORS headers). */
  paths: readonly string[];
}

/** SERVICE_APP_URL's origin and CORS_ORIGINS, or `*` when CORS_ORIGINS says so. */
export function allowedOrigins(appUrl: string, extra: readonly string[]): '*' | string[] {
  if (extra.includes('*')) return '*';
  return [...new Set([new URL(appUrl).origin, ...extra])];
}

export default fp<CorsPluginOptions>(
  async (app, { paths }) => {
    const origins = allowedOrigins(app.config.appUrl, app.config.corsOrigins);
    const crossOrigin: FastifyCorsOptions = {
      // A list: an allowed origin is echoed, any other gets no Access-Control-Allow-Origin, so its browser refuses.
      origin: origins,
      methods: METHODS,
      allowedHeaders: REQUEST_HEADERS,
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: PREFLIGHT_MAX_AGE,
      // Bearer tokens, no cookies: browsers must not send credentials, and `*` would be refused with them anyway.
      credentials: false,
      strictPreflight: true,
    };
    const sameOrigin: FastifyCorsOptions = { origin: false };
    const served = (request: FastifyRequest) => {
      const path = request.url.split('?', 1)[0] ?? '';
      return paths.some((prefix) => path === prefix || (prefix.endsWith('/') && path.startsWith(prefix)));
    };
    // onRequest, registered before authentication and rate limits: a preflight carries no token and must not count.
    await app.register(cors, {
      delegator: (request, callback) => callback(null, served(request) ? crossOrigin : sameOrigin),
    });
  },
  { name: 'cors' },
);
