// Compressed answers (br or gzip, as the client's Accept-Encoding asks) for the OpenAPI document, Swagger UI and bulk downloads.
import fp from 'fastify-plugin';
import compress from '@fastify/compress';
import type { RouteOptions } from 'fastify';

/**
 * What is compressed: the reads of /openapi.json (828 kB, 59 kB in gzip) and of Swagger UI (1.5 MB of script), and the
 * routes that ask for it with the route option `compress: {}` (the CSV exports of companies and contacts: hundreds of
 * megabytes that compress about 5×; a workspace's own OpenAPI document). Not the API's JSON answers: compressing a page takes a large share of a list's
 * CPU (docs/benchmarks.md, Compression) for bytes a network edge (the load balancer, a CDN) compresses as well, as
 * docs/integrators.md tells operators. Never an answer that holds a secret
 * beside something the requester chose (BREACH): no answer to a write, no console page (a CSRF token beside an echoed
 * query).
 */
const documentation = (route: RouteOptions) =>
  [route.method].flat().every((method) => method === 'GET' || method === 'HEAD') &&
  (route.url.startsWith('/openapi.json') || route.url === '/docs' || route.url.startsWith('/docs/'));

/** Under this size an answer goes as it is: compressing it saves less than it costs. */
const THRESHOLD_BYTES = 1024;

export default fp(
  async (app) => {
    // Before @fastify/compress's own onRoute hook, which reads the route's `compress` option.
    app.addHook('onRoute', (route) => {
      if (route.compress === undefined && !documentation(route)) route.compress = false;
    });
    await app.register(compress, {
      encodings: ['br', 'gzip'],
      threshold: THRESHOLD_BYTES,
      // gzip's fastest level: an export of a million companies (about 150 MB) at the default level 6 takes seconds of
      // CPU more, for a file a fifth larger at level 1. Brotli keeps the plugin's quality 4.
      zlibOptions: { level: 1 },
      // Request bodies are taken as sent: a compressed one is not JSON (400), and nothing inflates it past bodyLimit.
      globalDecompression: false,
    });
  },
  { name: 'compression' },
);
