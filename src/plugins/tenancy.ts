// Resolves :organization_id through the caller's membership (404 otherwise) and gives routes `request.tenant`.
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { MembershipRole, Organization } from '../generated/prisma/client.js';
import { forbidden, notFound, unauthorized } from '../lib/problem.js';
import { roleCan, type Capability } from '../lib/capabilities.js';
import { isUuid } from '../lib/http-schemas.js';
import { scopeToOrganization, type TenantDb } from '../db/tenant-scope.js';

export interface Tenant {
  organization: Organization;
  membershipId: string;
  role: MembershipRole;
  can(capability: Capability): boolean;
  /** Prisma client bound to this organization: tenant tables can only be read and written inside it. */
  db: TenantDb;
}

/** The same answer for "does not exist", "not a member", "pending/cancelled" and "malformed id". */
export const organizationNotFound = () => notFound('Organization not found.', 'organization_not_found');

export default fp(
  async (app) => {
    app.decorateRequest('tenant', null);

    app.decorate('resolveTenant', async (request: FastifyRequest) => {
      const user = request.currentUser;
      if (!user) throw unauthorized();
      const { organization_id: organizationId } = request.params as { organization_id?: string };
      if (!organizationId || !isUuid(organizationId)) throw organizationNotFound();
      const membership = await app.db.membership.findUnique({
        where: { organizationId_userId: { organizationId: organizationId.toLowerCase(), userId: user.id } },
        include: { organization: true },
      });
      if (!membership || membership.organization.status !== 'active') throw organizationNotFound();
      const role = membership.role;
      request.tenant = {
        organization: membership.organization,
        membershipId: membership.id,
        role,
        can: (capability) => roleCan(role, capability),
        db: scopeToOrganization(app.db, membership.organizationId),
      };
    });

    app.decorate('requireCapability', (capability: Capability) => async (request: FastifyRequest) => {
      if (!requireTenant(request).can(capability)) {
        throw forbidden('permission_denied', `Your role in this organization does not allow this action (${capability}).`);
      }
    });
  },
  { name: 'tenancy', dependencies: ['db', 'auth'] },
);

/** The resolved tenant of a route guarded by `app.resolveTenant`. */
export function requireTenant(request: FastifyRequest): Tenant {
  if (!request.tenant) throw organizationNotFound();
  return request.tenant;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** preHandler (after `authenticate`): 404 unless the caller is a member of the active organization in the path. */
    resolveTenant: (request: FastifyRequest) => Promise<void>;
    /** preHandler factory (after `resolveTenant`): 403 unless the caller's role has the capability. */
    requireCapability: (capability: Capability) => (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    tenant: Tenant | null;
  }
}
