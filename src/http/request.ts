// What a route handler reads off an authenticated request: the user, the tenant, and the audit context of the action.
import type { FastifyRequest } from 'fastify';
import type { Actor, CurrentUser } from '../lib/current-user.js';
import { unauthorized } from '../lib/problem.js';
import type { AuditContext } from '../audit/audit-log.js';
import type { SessionClient } from '../db/token-store.js';

export { requireTenant } from '../plugins/tenancy.js';

/** The signed-in user of a route in the `user` or `tenant` context. */
export function requireUser(request: FastifyRequest): CurrentUser {
  if (!request.currentUser) throw unauthorized();
  return request.currentUser;
}

/** Who acts in a tenant request: the signed-in user, or the workspace API key it authenticated with. */
export function requestActor(request: FastifyRequest): Actor {
  if (request.currentUser) return { userId: request.currentUser.id, apiKeyId: null };
  if (!request.apiKey) throw unauthorized();
  return { userId: null, apiKeyId: request.apiKey.id };
}

/** The audit context of a signed-in request: the user as actor, and the client address the app sees. */
export function userAudit(request: FastifyRequest): AuditContext {
  const user = requireUser(request);
  return { actor: { type: 'user', userId: user.id, username: user.username }, ip: request.ip };
}

/**
 * The audit context of a tenant request a workspace API key may make: the key as actor when it authenticated with
 * one (never the user who created the key), the signed-in user otherwise.
 */
export function requestAudit(request: FastifyRequest): AuditContext {
  if (!request.apiKey) return userAudit(request);
  const key = request.apiKey;
  return { actor: { type: 'api_key', apiKeyId: key.id, name: key.name, prefix: key.prefix }, ip: request.ip };
}

/** The client a sign-in or refresh comes from, as the session list shows it (the address through the trusted proxies). */
export const sessionClient = (request: FastifyRequest): SessionClient => ({
  userAgent: request.headers['user-agent'] ?? null,
  ip: request.ip,
});

/** The session (refresh-token family) of the request's access token, already verified by the context's hook. */
export const requestSessionId = (request: FastifyRequest): string => request.server.accessClaims(request).sid;

/**
 * How a request reached the service, for the readiness checks: over HTTPS (directly, or per X-Forwarded-Proto from a
 * trusted proxy), and whether it carried forwarding headers that TRUST_PROXY makes the service ignore.
 */
export function requestTransport(request: FastifyRequest, trustProxy: unknown) {
  return {
    servedOverHttps: request.protocol === 'https',
    forwardedButUntrusted:
      trustProxy === false && (request.headers['x-forwarded-for'] !== undefined || request.headers['x-forwarded-proto'] !== undefined),
  };
}
