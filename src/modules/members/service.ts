// Workspace memberships: listing, role changes with the single-owner rule (ownership transfer), removal and leaving.
import type { Membership, MembershipRole, Organization } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { lockOrganization } from '../../db/organization-lock.js';
import { roleCan } from '../../lib/capabilities.js';
import { isUuid } from '../../lib/http-schemas.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import type { Tenant } from '../../db/tenant.js';
import { forbidden, notFound } from '../../lib/problem.js';
import { organizationNotFound } from '../../lib/problem.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { MemberDto } from './schemas.js';

/** The tenant a member endpoint works in, and whose request it is (by membership). */
export interface MemberContext {
  db: TenantDb;
  organization: Organization;
  actorMembershipId: string;
}

const withUser = {
  user: { select: { username: true, email: true, twoFactorEnabledAt: true, profile: { select: { displayName: true } } } },
} as const;

type MemberRow = Membership & {
  user: { username: string; email: string; twoFactorEnabledAt: Date | null; profile: { displayName: string | null } | null };
};

export function toMemberDto(row: MemberRow): MemberDto {
  return {
    id: row.id,
    user_id: row.userId,
    username: row.user.username,
    email: row.user.email,
    display_name: row.user.profile?.displayName ?? null,
    role: row.role,
    two_factor_enabled: row.user.twoFactorEnabledAt !== null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

const memberNotFound = () => notFound('Member not found.', 'member_not_found');
const ownerOnly = (detail: string) => forbidden('owner_required', detail);

/** Members of the organization, newest first (`limit + 1` rows for the pager). */
export function listMembers(db: TenantDb, page: PageRequest): Promise<MemberRow[]> {
  return db.membership.findMany({ where: afterPosition(page.after), orderBy: newestFirst, take: page.limit + 1, include: withUser });
}

/**
 * Runs `change` with the organization row locked and both memberships read inside the lock, so concurrent role
 * changes, transfers and removals see one consistent owner. The caller's role is re-read for the same reason.
 */
async function withLockedMembers<T>(
  context: MemberContext,
  targetId: string,
  change: (tx: TenantTx, actor: Membership, target: MemberRow) => Promise<T>,
): Promise<T> {
  if (!isUuid(targetId)) throw memberNotFound();
  return context.db.$transaction(async (tx) => {
    await lockOrganization(tx, context.organization.id);
    const actor = await tx.membership.findUnique({ where: { id: context.actorMembershipId } });
    if (!actor) throw organizationNotFound();
    const target = await tx.membership.findUnique({ where: { id: targetId }, include: withUser });
    if (!target) throw memberNotFound();
    return change(tx, actor, target);
  });
}

/**
 * Changes a member's role. `owner` transfers ownership (by the owner; the previous owner becomes admin), only the
 * owner grants or changes `admin`, admins move others between member and viewer, and the owner's own role changes
 * only through a transfer. Personal workspaces have no members to manage.
 */
export function updateMemberRole(context: MemberContext, targetId: string, role: MembershipRole, audit: AuditContext): Promise<MemberDto> {
  if (context.organization.isPersonal) {
    throw forbidden('personal_workspace', 'A personal workspace has no members to manage.');
  }
  return withLockedMembers(context, targetId, async (tx, actor, target) => {
    if (!roleCan(actor.role, 'MANAGE_MEMBERS')) throw forbidden();
    if (role === 'owner') {
      if (actor.role !== 'owner') throw ownerOnly('Only the owner can transfer ownership.');
      if (target.id === actor.id) return toMemberDto(target);
      await tx.membership.update({ where: { id: actor.id }, data: { role: 'admin' } });
    } else {
      if (target.role === 'owner') {
        throw forbidden('owner_role_locked', "The owner's role changes only by transferring ownership to another member.");
      }
      if ((role === 'admin' || target.role === 'admin') && actor.role !== 'owner') {
        throw ownerOnly('Only the owner can grant or change the admin role.');
      }
    }
    const updated = await tx.membership.update({ where: { id: target.id }, data: { role }, include: withUser });
    await recordAudit(tx, {
      ...audit,
      action: role === 'owner' ? 'ownership.transferred' : 'member.role_changed',
      target: { type: 'membership', id: target.id },
      organizationId: context.organization.id,
    });
    return toMemberDto(updated);
  });
}

/**
 * Removes a member: anyone may leave, the owner may remove anyone else, an admin may remove members and viewers.
 * The owner is never removed (transfer ownership first).
 */
export function removeMember(context: MemberContext, targetId: string, audit: AuditContext): Promise<void> {
  return withLockedMembers(context, targetId, async (tx, actor, target) => {
    if (target.role === 'owner') {
      throw forbidden('owner_cannot_be_removed', 'The owner cannot be removed; transfer ownership first.');
    }
    if (target.id !== actor.id) {
      if (!roleCan(actor.role, 'MANAGE_MEMBERS')) throw forbidden();
      if (target.role === 'admin' && actor.role !== 'owner') throw ownerOnly('Only the owner can remove an admin.');
    }
    await tx.membership.delete({ where: { id: target.id } });
    await recordAudit(tx, {
      ...audit,
      action: 'member.removed',
      target: { type: 'membership', id: target.id },
      organizationId: context.organization.id,
    });
  });
}

/** Workspace memberships: every method works in the tenant it is given, through its scoped client. */
export function createMemberService() {
  const contextOf = (tenant: Tenant): MemberContext => ({
    db: tenant.db,
    organization: tenant.organization,
    actorMembershipId: tenant.membershipId,
  });
  return {
    list: async (tenant: Tenant, page: PageRequest): Promise<Page<MemberDto>> =>
      pageOfDtos(await listMembers(tenant.db, page), page.limit, toMemberDto),
    updateRole: (tenant: Tenant, membershipId: string, role: MembershipRole, audit: AuditContext) =>
      updateMemberRole(contextOf(tenant), membershipId, role, audit),
    remove: (tenant: Tenant, membershipId: string, audit: AuditContext) => removeMember(contextOf(tenant), membershipId, audit),
  };
}
