// Lets an endpoint whose JSON body is optional accept both no body at all and `{}`.
import type { FastifyRequest } from 'fastify';

/**
 * preValidation hook: a request without a body is validated as `{}` (Fastify would otherwise reject the missing
 * body against an object schema). A body that is present, even `null`, is validated as sent.
 */
export async function defaultEmptyBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}
