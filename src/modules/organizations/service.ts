// Workspace lifecycle: creation by an installation admin (directly or through an Owner handoff), the pending
// handoffs (list, resend, cancel), personal workspaces, and deletion.
import type { Organization, Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { assertInstallationAdmin, type CurrentUser } from '../../lib/current-user.js';
import { conflict, forbidden, notFound, organizationNotFound } from '../../lib/problem.js';
import { isUuid } from '../../lib/http-schemas.js';
import { isUniqueViolation } from '../../lib/prisma-errors.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PageRequest } from '../../lib/pagination.js';
import type { Tenant } from '../../db/tenant.js';
import type { TenantDb } from '../../db/tenant-scope.js';
import { lockOrganization } from '../../db/organization-lock.js';
import { issueInvitation } from '../invitations/issue.js';
import { recordAudit, type AuditAction, type AuditContext, type AuditWriter } from '../../audit/audit-log.js';
import { toOrganizationDto, type OrganizationDto } from './organization-dto.js';
import {
  SLUG_MAX_LENGTH,
  type OrganizationCreate,
  type OrganizationUpdate,
  type PersonalOrganizationCreate,
  type ProvisioningItem,
} from './schemas.js';

export interface ProvisioningDeps {
  db: Db;
  /** SERVICE_APP_URL, for the Owner invitation link. */
  appUrl: string;
}

export type OrganizationCreatedDto = OrganizationDto & { owner_invitation_pending: boolean };

/** Room left after a generated base for a `-<n>` suffix. */
const SLUG_BASE_MAX_LENGTH = SLUG_MAX_LENGTH - 8;
/** Generated slugs can collide with a concurrent creation; the whole creation is retried this many times. */
const GENERATED_SLUG_ATTEMPTS = 3;
const DEFAULT_PERSONAL_NAME = 'Personal workspace';

const slugTaken = () => conflict('slug_taken', 'A workspace with this slug already exists.', { slug: ['This slug is already in use.'] });
const provisioningNotFound = () => notFound('Pending workspace not found.', 'provisioning_not_found');

/** A slug from free text: ASCII lower-case letters and digits in dash-separated groups. */
export function slugify(text: string): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, SLUG_BASE_MAX_LENGTH)
    .replace(/^-+|-+$/g, '');
  return slug || 'workspace';
}

/** The audit row of an action on a whole workspace (the row keeps the id after the workspace is deleted). */
const recordWorkspace = (tx: AuditWriter, audit: AuditContext, action: AuditAction, organizationId: string) =>
  recordAudit(tx, { ...audit, action, target: { type: 'organization', id: organizationId }, organizationId });

/** `base`, or `base-2`, `base-3`, ... whichever is free. */
async function freeSlug(tx: Prisma.TransactionClient, base: string): Promise<string> {
  const rows = await tx.organization.findMany({ where: { slug: { startsWith: base } }, select: { slug: true } });
  const taken = new Set(rows.map((row) => row.slug));
  let candidate = base;
  for (let n = 2; taken.has(candidate); n += 1) candidate = `${base}-${n}`;
  return candidate;
}

/**
 * Runs `create` in a transaction with a slug: the requested one (taken → 409 errors.slug) or one generated from
 * `base`, retried when a concurrent creation takes it first.
 */
async function createWithSlug<T>(
  db: Db,
  slug: { requested?: string; base: string },
  create: (tx: Prisma.TransactionClient, slug: string) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.$transaction(async (tx) => create(tx, slug.requested ?? (await freeSlug(tx, slug.base))));
    } catch (error) {
      if (!isUniqueViolation(error, 'organizations', 'slug')) throw error;
      if (slug.requested !== undefined || attempt >= GENERATED_SLUG_ATTEMPTS) throw slugTaken();
    }
  }
}

/**
 * Creates a shared workspace (installation admins only). When `owner_email` is the creator's own address the
 * creator becomes its owner. Otherwise the workspace waits for its Owner: hidden, the creator holds a temporary
 * admin membership, and the Owner invitation is queued in the same transaction (no SMTP → 400, nothing created).
 */
export async function createOrganization(
  deps: ProvisioningDeps,
  actor: CurrentUser,
  input: OrganizationCreate,
  audit: AuditContext,
): Promise<OrganizationCreatedDto> {
  assertInstallationAdmin(actor, 'create a shared workspace');
  const ownerEmail = input.owner_email.toLowerCase();
  const selfOwned = ownerEmail === actor.email.toLowerCase();
  return createWithSlug(deps.db, { requested: input.slug, base: slugify(input.name) }, async (tx, slug) => {
    const organization = await tx.organization.create({
      data: {
        name: input.name,
        slug,
        createdById: actor.id,
        ...(selfOwned ? { status: 'active' } : { status: 'pending_owner', ownerEmail }),
      },
    });
    await tx.membership.create({
      data: selfOwned
        ? { organizationId: organization.id, userId: actor.id, role: 'owner' }
        : { organizationId: organization.id, userId: actor.id, role: 'admin', isTemporary: true },
    });
    if (!selfOwned) {
      await issueInvitation(tx, { organization, email: ownerEmail, role: 'owner', invitedBy: actor, appUrl: deps.appUrl });
    }
    await recordWorkspace(tx, audit, 'workspace.created', organization.id);
    return { ...toOrganizationDto(organization, selfOwned ? 'owner' : 'admin'), owner_invitation_pending: !selfOwned };
  });
}

/**
 * Creates the caller's one private workspace. Only after first-run setup (409 before), one per user (409 for a
 * second; the unique personal_user_id settles concurrent requests).
 */
export async function createPersonalOrganization(
  db: Db,
  actor: CurrentUser,
  input: PersonalOrganizationCreate,
  audit: AuditContext,
): Promise<OrganizationDto> {
  const exists = () => conflict('personal_workspace_exists', 'You already have a personal workspace.');
  const installation = await db.installationState.findUnique({ where: { id: 1 } });
  if (!installation?.setupCompletedAt) {
    throw conflict('installation_not_initialized', 'The installation has not been set up yet.');
  }
  if (await db.organization.findUnique({ where: { personalUserId: actor.id }, select: { id: true } })) throw exists();
  try {
    return await createWithSlug(db, { base: slugify(`personal-${actor.username}`) }, async (tx, slug) => {
      const organization = await tx.organization.create({
        data: { name: input.name ?? DEFAULT_PERSONAL_NAME, slug, isPersonal: true, personalUserId: actor.id, createdById: actor.id },
      });
      await tx.membership.create({ data: { organizationId: organization.id, userId: actor.id, role: 'owner' } });
      await recordWorkspace(tx, audit, 'workspace.created', organization.id);
      return toOrganizationDto(organization, 'owner');
    });
  } catch (error) {
    if (isUniqueViolation(error, 'organizations', 'personal_user_id')) throw exists();
    throw error;
  }
}

/** Deletes a shared workspace and, by cascade, everything in it. A personal workspace cannot be deleted. */
export async function deleteOrganization(db: TenantDb, organization: Organization, audit: AuditContext): Promise<void> {
  if (organization.isPersonal) throw forbidden('personal_workspace', 'A personal workspace cannot be deleted.');
  await db.$transaction(async (tx) => {
    const deleted = await tx.organization.deleteMany({ where: { id: organization.id } });
    // A concurrent deletion already recorded its own row.
    if (deleted.count > 0) await recordWorkspace(tx, audit, 'workspace.deleted', organization.id);
  });
}

/**
 * Renames the workspace (MANAGE_SETTINGS, checked by the route) and sets `require_two_factor` (the owner only, and only
 * once the owner signs in with two factors: otherwise the owner would lock themselves out). The slug never changes.
 */
export async function updateOrganization(tenant: Tenant, input: OrganizationUpdate, audit: AuditContext): Promise<OrganizationDto> {
  if (input.require_two_factor !== undefined && tenant.role !== 'owner') {
    throw forbidden('owner_required', 'Only the workspace owner can change require_two_factor.');
  }
  return tenant.db.$transaction(async (tx) => {
    if (input.require_two_factor === true) {
      const own = await tx.membership.findUnique({
        where: { id: tenant.membershipId },
        select: { user: { select: { twoFactorEnabledAt: true } } },
      });
      if (!own?.user.twoFactorEnabledAt) {
        throw forbidden(
          'two_factor_required',
          'Turn two-factor sign-in on for your own account (POST /api/v1/auth/me/two-factor/) before requiring it of the workspace.',
        );
      }
    }
    const [updated] = await tx.organization.updateManyAndReturn({
      where: { id: tenant.organization.id },
      data: { name: input.name, requireTwoFactor: input.require_two_factor },
    });
    if (!updated) throw organizationNotFound();
    await recordWorkspace(tx, audit, 'workspace.updated', updated.id);
    return toOrganizationDto(updated, tenant.role);
  });
}

export function toProvisioningItem(organization: Organization): ProvisioningItem {
  return {
    organization_id: organization.id,
    name: organization.name,
    slug: organization.slug,
    owner_email: organization.ownerEmail ?? '',
    created_at: organization.createdAt.toISOString(),
  };
}

/** Pending handoffs, newest first: the caller's own, or every one for an installation admin (`limit + 1` rows). */
export function listProvisioning(db: Db, actor: CurrentUser, page: PageRequest): Promise<Organization[]> {
  return db.organization.findMany({
    where: { status: 'pending_owner', ...(actor.isSuperuser ? {} : { createdById: actor.id }), ...afterPosition(page.after) },
    orderBy: newestFirst,
    take: page.limit + 1,
  });
}

/**
 * Runs `change` on a pending handoff the caller may manage (its creator or an installation admin) with the
 * organization row locked, so it cannot race the Owner's acceptance. Anything else is a 404.
 */
async function withPendingHandoff<T>(
  db: Db,
  actor: CurrentUser,
  organizationId: string,
  change: (tx: Prisma.TransactionClient, organization: Organization) => Promise<T>,
): Promise<T> {
  if (!isUuid(organizationId)) throw provisioningNotFound();
  return db.$transaction(async (tx) => {
    if ((await lockOrganization(tx, organizationId)) !== 'pending_owner') throw provisioningNotFound();
    const organization = await tx.organization.findUniqueOrThrow({ where: { id: organizationId } });
    if (!actor.isSuperuser && organization.createdById !== actor.id) throw provisioningNotFound();
    return change(tx, organization);
  });
}

/** Pending invitations of the organization (optionally of one role) stop working. */
const revokePendingInvitations = (tx: Prisma.TransactionClient, organizationId: string, role?: 'owner') =>
  tx.invitation.updateMany({
    where: { organizationId, acceptedAt: null, revokedAt: null, ...(role ? { role } : {}) },
    data: { revokedAt: new Date() },
  });

/** Revokes the outstanding Owner invitation and emails a fresh seven-day one to the same address. */
export function resendOwnerInvitation(
  deps: ProvisioningDeps,
  actor: CurrentUser,
  organizationId: string,
  audit: AuditContext,
): Promise<ProvisioningItem> {
  return withPendingHandoff(deps.db, actor, organizationId, async (tx, organization) => {
    await revokePendingInvitations(tx, organization.id, 'owner');
    await issueInvitation(tx, {
      organization,
      email: organization.ownerEmail ?? '',
      role: 'owner',
      invitedBy: actor,
      appUrl: deps.appUrl,
    });
    await recordWorkspace(tx, audit, 'workspace.owner_invitation_resent', organization.id);
    return toProvisioningItem(organization);
  });
}

/** Cancels a pending workspace for good: its links stop working and the temporary membership goes away. */
export function cancelProvisioning(db: Db, actor: CurrentUser, organizationId: string, audit: AuditContext): Promise<void> {
  return withPendingHandoff(db, actor, organizationId, async (tx, organization) => {
    await tx.organization.update({ where: { id: organization.id }, data: { status: 'cancelled' } });
    await revokePendingInvitations(tx, organization.id);
    await tx.membership.deleteMany({ where: { organizationId: organization.id, isTemporary: true } });
    await recordWorkspace(tx, audit, 'workspace.cancelled', organization.id);
  });
}

/** Workspaces: creating them, the provisioning handoffs, personal workspaces, and deleting one (a tenant action). */
export function createOrganizationService(deps: ProvisioningDeps) {
  const { db } = deps;
  return {
    create: (actor: CurrentUser, input: OrganizationCreate, audit: AuditContext) => createOrganization(deps, actor, input, audit),
    createPersonal: (actor: CurrentUser, input: PersonalOrganizationCreate, audit: AuditContext) =>
      createPersonalOrganization(db, actor, input, audit),
    listProvisioning: async (actor: CurrentUser, page: PageRequest): Promise<Page<ProvisioningItem>> =>
      pageOfDtos(await listProvisioning(db, actor, page), page.limit, toProvisioningItem),
    resendOwnerInvitation: (actor: CurrentUser, organizationId: string, audit: AuditContext) =>
      resendOwnerInvitation(deps, actor, organizationId, audit),
    cancelProvisioning: (actor: CurrentUser, organizationId: string, audit: AuditContext) =>
      cancelProvisioning(db, actor, organizationId, audit),
    /** The tenant's own workspace, through its scoped client. */
    get: (tenant: Tenant) => toOrganizationDto(tenant.organization, tenant.role),
    delete: (tenant: Tenant, audit: AuditContext) => deleteOrganization(tenant.db, tenant.organization, audit),
    update: (tenant: Tenant, input: OrganizationUpdate, audit: AuditContext) => updateOrganization(tenant, input, audit),
  };
}
