// Who acts on a record and where, from a request in the tenant context: the actor a timeline keeps and the CRM scope.
import type { FastifyRequest } from 'fastify';
import { requireTenant } from '../http/request.js';
import type { CrmScope } from './record-service.js';

/** Who makes a CRM change, as its timeline entries keep it: the signed-in user, else the workspace API key. */
export function actorOf(request: FastifyRequest): CrmScope['actor'] {
  const { currentUser, apiKey } = request;
  return currentUser
    ? { type: 'user', id: currentUser.id, name: currentUser.username }
    : { type: 'api_key', id: apiKey?.id ?? null, name: apiKey?.name ?? null };
}

/** The CRM scope (tenant-bound client, writer and organization id) of a route in the tenant context. */
export function scopeOf(request: FastifyRequest): CrmScope {
  const tenant = requireTenant(request);
  const role = request.apiKey ? null : tenant.role;
  return { db: tenant.db, organizationId: tenant.organization.id, writes: tenant.writes, actor: actorOf(request), role };
}
