// A tenant as services receive it: the organization, the caller's membership, and the data handles bound to it.
import type { MembershipRole, Organization } from '../generated/prisma/client.js';
import { roleCan, type Capability } from '../lib/capabilities.js';
import type pg from 'pg';
import type { Db } from './client.js';
import type { Membership } from './authentication.js';
import { scopeToOrganization, type TenantDb } from './tenant-scope.js';
import { scopePages, type TenantPages } from './tenant-pages.js';
import { scopeWrites, type TenantWrites } from './tenant-writes.js';
import { organizationPool } from './organization-setting.js';

export interface Tenant {
  organization: Organization;
  membershipId: string;
  role: MembershipRole;
  can(capability: Capability): boolean;
  /** Prisma client bound to this organization: tenant tables can only be read and written inside it. */
  db: TenantDb;
  /** Raw-SQL keyset pages of this organization's tenant tables (the CRM lists). */
  pages: TenantPages;
  /** One-statement CRM writes of this organization, with their automation runs. */
  writes: TenantWrites;
}

/** Binds the data handles to the membership's organization: the only way a tenant service gets a client. */
export function bindTenant(db: Db, pool: pg.Pool, membership: Membership): Tenant {
  const { organization, role } = membership;
  const scopedPool = organizationPool(pool, organization.id);
  return {
    organization,
    membershipId: membership.membershipId,
    role,
    can: (capability) => roleCan(role, capability),
    db: scopeToOrganization(db, organization.id),
    pages: scopePages(scopedPool, organization.id),
    writes: scopeWrites(scopedPool, organization.id),
  };
}

/**
 * A tenant for installation staff acting on one workspace from the console, with the role whose rules apply to the
 * action: the same tenant-bound handles, so the console goes through the same services as the API.
 */
export function bindOrganization(db: Db, pool: pg.Pool, organization: Organization, role: MembershipRole): Tenant {
  return bindTenant(db, pool, { membershipId: '', role, organization });
}

/**
 * The tenant of a workspace API key: the same tenant-bound handles, with the key's own capabilities instead of a role's
 * (its `role` is `viewer`, the least, for anything that shows a role; no check reads it).
 */
export function bindApiKeyTenant(db: Db, pool: pg.Pool, organization: Organization, capabilities: readonly Capability[]): Tenant {
  const granted = new Set(capabilities);
  return { ...bindTenant(db, pool, { membershipId: '', role: 'viewer', organization }), can: (capability) => granted.has(capability) };
}
