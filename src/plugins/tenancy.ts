// Resolves :organization_id through the caller's membership (404 otherwise) and gives routes `request.tenant`.
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { MembershipRole, Organization } from '../generated/prisma/client.js';
import { forbidden, notFound } from '../lib/problem.js';
import { AUTHENTICATED_USER_COLUMNS, checkAuthenticatedRow, type AuthenticatedRow } from './auth.js';
import { roleCan, type Capability } from '../lib/capabilities.js';
import { isUuid } from '../lib/http-schemas.js';
import { scopeToOrganization, type TenantDb } from '../db/tenant-scope.js';
import { scopePages, type TenantPages } from '../db/tenant-pages.js';

export interface Tenant {
  organization: Organization;
  membershipId: string;
  role: MembershipRole;
  can(capability: Capability): boolean;
  /** Prisma client bound to this organization: tenant tables can only be read and written inside it. */
  db: TenantDb;
  /** Raw-SQL keyset pages of this organization's tenant tables (the CRM lists). */
  pages: TenantPages;
}

/** The organization columns of the tenancy query; all null when the caller has no membership in an active one. */
type TenantColumns = { membershipId: string | null; role: MembershipRole | null; organizationId: string | null } & {
  [K in Exclude<keyof Organization, 'id'>]: Organization[K];
};

/** The same answer for "does not exist", "not a member", "pending/cancelled" and "malformed id". */
export const organizationNotFound = () => notFound('Organization not found.', 'organization_not_found');

export default fp(
  async (app) => {
    app.decorateRequest('tenant', null);

    app.decorate('resolveTenant', async (request: FastifyRequest) => {
      const claims = app.accessClaims(request);
      const { organization_id: organizationId } = request.params as { organization_id?: string };
      // A malformed id still authenticates first: an invalid token is a 401 whatever the path.
      const orgId = organizationId && isUuid(organizationId) ? organizationId.toLowerCase() : null;
      // One round trip per request: the caller (authentication) and their membership in the active organization.
      const { rows } = await app.pg.query<AuthenticatedRow & TenantColumns>({
        name: 'authenticate-and-resolve-tenant',
        text: `SELECT ${AUTHENTICATED_USER_COLUMNS},
                 m.id AS "membershipId", m.role, o.id AS "organizationId", o.name, o.slug, o.is_personal AS "isPersonal",
                 o.personal_user_id AS "personalUserId", o.status, o.created_by_id AS "createdById",
                 o.owner_email AS "ownerEmail", o.created_at AS "createdAt", o.updated_at AS "updatedAt"
               FROM users u
               LEFT JOIN memberships m ON m.user_id = u.id AND m.organization_id = $3
               LEFT JOIN organizations o ON o.id = m.organization_id AND o.status = 'active'
               WHERE u.id = $1`,
        values: [claims.sub, claims.sid, orgId],
      });
      const row = rows[0];
      request.currentUser = checkAuthenticatedRow(row, claims);
      if (!row?.organizationId || !row.membershipId || !row.role) throw organizationNotFound();
      const { membershipId, role } = row;
      const organization: Organization = {
        id: row.organizationId,
        name: row.name,
        slug: row.slug,
        isPersonal: row.isPersonal,
        personalUserId: row.personalUserId,
        status: row.status,
        createdById: row.createdById,
        ownerEmail: row.ownerEmail,
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
      };
      request.tenant = {
        organization,
        membershipId,
        role,
        can: (capability) => roleCan(role, capability),
        db: scopeToOrganization(app.db, organization.id),
        pages: scopePages(app.pg, organization.id),
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
    /**
     * preHandler that authenticates the Bearer token (401) and resolves the organization in the path through the
     * caller's membership (404 unless a member of the active organization) in one query. Replaces `authenticate`.
     */
    resolveTenant: (request: FastifyRequest) => Promise<void>;
    /** preHandler factory (after `resolveTenant`): 403 unless the caller's role has the capability. */
    requireCapability: (capability: Capability) => (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    tenant: Tenant | null;
  }
}
