// The HTTP side of keyset pagination: the `Link: rel="next"` header (linkNext, which sync feeds call with their own
// cursors) and the reply helper every list answers a page with (sendPage). Positions and cursors: lib/pagination.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { encodeCursor, type Page } from '../lib/pagination.js';

/**
 * Sets `Link: rel="next"`: the request's own URL with `cursor` (none: without one) and `limit` set, in the query
 * parameter `param` (default `cursor`), without the parameters in `drop` (credentials never go into a link).
 */
export function linkNext(
  request: FastifyRequest,
  reply: FastifyReply,
  cursor: string | undefined,
  limit: number,
  options: { param?: string; drop?: readonly string[] } = {},
): void {
  const { param = 'cursor', drop = [] } = options;
  const [path, query = ''] = request.url.split('?');
  const params = new URLSearchParams(query);
  for (const name of drop) params.delete(name);
  if (cursor === undefined) params.delete(param);
  else params.set(param, cursor);
  params.set('limit', String(limit));
  reply.header('link', `<${path}?${params.toString()}>; rel="next"`);
}

/** Sets `Link: rel="next"` when the page continues, and returns its items. */
export function sendPage<T>(request: FastifyRequest, reply: FastifyReply, page: Page<T>, limit: number): T[] {
  if (page.next) linkNext(request, reply, encodeCursor(page.next), limit);
  return page.items;
}
