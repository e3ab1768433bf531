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
      // One round trip per request: the membership and its (active) organization.
      const { rows } = await app.pg.query<Organization & { membershipId: string; role: MembershipRole }>({
        name: 'resolve-tenant',
        text: `SELECT m.id AS "membershipId", m.role, o.id, o.name, o.slug, o.is_personal AS "isPersonal",
                 o.personal_user_id AS "personalUserId", o.status, o.created_by_id AS "createdById",
                 o.owner_email AS "ownerEmail", o.created_at AS "createdAt", o.updated_at AS "updatedAt"
               FROM memberships m JOIN organizations o ON o.id = m.organization_id
               WHERE m.organization_id = $1 AND m.user_id = $2 AND o.status = 'active'`,
        values: [organizationId.toLowerCase(), user.id],
      });
      const found = rows[0];
      if (!found) throw organizationNotFound();
      const { membershipId, role, ...organization } = found;
      request.tenant = {
        organization,
        membershipId,
        role,
        can: (capability) => roleCan(role, capability),
        db: scopeToOrganization(app.db, organization.id),
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
