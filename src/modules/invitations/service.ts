// Workspace invitations: sending, listing, revoking and resending them, and previewing and accepting their links.
import type { Invitation, MembershipRole, Organization, Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { transactionView, type AnyTx, type TenantDb } from '../../db/tenant-scope.js';
import type { Tenant } from '../../db/tenant.js';
import { lockOrganization } from '../../db/organization-lock.js';
import { conflict, forbidden, notFound } from '../../lib/problem.js';
import { isUuid } from '../../lib/http-schemas.js';
import { sha256Hex } from '../../lib/crypto.js';
import { afterPosition, newestFirst, pageOfDtos, type Page, type PagePosition, type PageRequest } from '../../lib/pagination.js';
import type { TokenService } from '../auth/token-service.js';
import { issueInvitation } from './issue.js';
import { invalidLink, linkStatus, lockInvitee, usableAt } from './invitation-link.js';
import { acceptingUser, identifyAcceptor } from './acceptor.js';
import { recordAudit, type AuditAction, type AuditContext, type AuditWriter } from '../../audit/audit-log.js';
import type { AcceptBody, InvitationAcceptedDto, InvitationCreate, InvitationDto } from './schemas.js';

export interface InvitationDeps {
  /** Unscoped client: only for the public link (found by its token, whatever the workspace) and accepting it. */
  db: Db;
  /** SERVICE_APP_URL, for the link. */
  appUrl: string;
  tokens: TokenService;
  /** PRIVACY_POLICY_VERSION: a new account registered through a link accepts it (unset: nothing to accept). */
  privacyPolicyVersion?: string | null;
}

/** The caller managing invitations of the organization in the path (already authorized for MANAGE_MEMBERS). */
export interface InvitationManager {
  organization: Organization;
  role: MembershipRole;
  user: { id: string; username: string };
}

/** Owner handoffs belong to provisioning: these endpoints neither list nor touch them. */
const ORDINARY = { role: { not: 'owner' as const } };

/** The audit row of an action on one invitation of the organization. */
const recordInvitation = (tx: AuditWriter, audit: AuditContext, action: AuditAction, invitation: Invitation) =>
  recordAudit(tx, { ...audit, action, target: { type: 'invitation', id: invitation.id }, organizationId: invitation.organizationId });

const invitationNotFound = () => notFound('Invitation not found.', 'invitation_not_found');
const adminInviteRequiresOwner = () =>
  forbidden('admin_invite_requires_owner', 'Only the owner can invite admins or manage admin invitations.');

export function toInvitationDto(invitation: Invitation, now: Date): InvitationDto {
  return {
    id: invitation.id,
    email: invitation.email,
    // ORDINARY keeps owner handoffs out of every list and lookup that produces this body.
    role: invitation.role as InvitationDto['role'],
    status: linkStatus(invitation, now),
    invited_by: invitation.invitedById,
    created_at: invitation.createdAt.toISOString(),
    expires_at: invitation.expiresAt.toISOString(),
    accepted_at: invitation.acceptedAt?.toISOString() ?? null,
    revoked_at: invitation.revokedAt?.toISOString() ?? null,
  };
}

/** The organization's invitation history, newest first (`limit + 1` rows for the pager). */
export function listInvitations(db: TenantDb, page: { after?: PagePosition; limit: number }): Promise<Invitation[]> {
  return db.invitation.findMany({ where: { ...ORDINARY, ...afterPosition(page.after) }, orderBy: newestFirst, take: page.limit + 1 });
}

async function assertNotMember(tx: AnyTx, organizationId: string, email: string): Promise<void> {
  if (await transactionView(tx).membership.findFirst({ where: { organizationId, user: { email } }, select: { id: true } })) {
    throw conflict('already_member', 'This person is already a member of the workspace.');
  }
}

/**
 * Sends an invitation. One pending invitation per address: a second one is a 409 (resend or revoke the first),
 * so an admin can never replace an owner's admin invitation.
 */
export function createInvitation(
  db: TenantDb,
  appUrl: string,
  manager: InvitationManager,
  input: InvitationCreate,
  audit: AuditContext,
): Promise<Invitation> {
  const { organization } = manager;
  if (organization.isPersonal) throw forbidden('personal_workspace', 'A personal workspace cannot invite anyone.');
  if (input.role === 'admin' && manager.role !== 'owner') throw adminInviteRequiresOwner();
  const email = input.email.toLowerCase();
  return db.$transaction(async (tx) => {
    await lockInvitee(tx, organization.id, email);
    await assertNotMember(tx, organization.id, email);
    const pending = await tx.invitation.findFirst({
      where: { organizationId: organization.id, email, ...ORDINARY, ...usableAt(new Date()) },
      select: { id: true },
    });
    if (pending) {
      throw conflict('invitation_pending', 'A pending invitation for this address exists: resend or revoke it instead.');
    }
    const invitation = await issueInvitation(tx, { organization, email, role: input.role, invitedBy: manager.user, appUrl });
    await recordInvitation(tx, audit, 'invitation.sent', invitation);
    return invitation;
  });
}

/** An invitation of the manager's organization (404 for any other) that the manager's role may act on (403). */
async function findManaged(client: AnyTx | TenantDb, manager: InvitationManager, invitationId: string): Promise<Invitation> {
  if (!isUuid(invitationId)) throw invitationNotFound();
  const invitation = await transactionView(client).invitation.findFirst({
    where: { id: invitationId, organizationId: manager.organization.id, ...ORDINARY },
  });
  if (!invitation) throw invitationNotFound();
  if (invitation.role === 'admin' && manager.role !== 'owner') throw adminInviteRequiresOwner();
  return invitation;
}

/** Revokes a pending invitation: its link stops working. Anything but pending is a 409. */
export async function revokeInvitation(db: TenantDb, manager: InvitationManager, invitationId: string, audit: AuditContext): Promise<void> {
  const invitation = await findManaged(db, manager, invitationId);
  const now = new Date();
  await db.$transaction(async (tx) => {
    // Conditional, so a link accepted a moment ago is not reported as revoked.
    const revoked = await tx.invitation.updateMany({ where: { id: invitation.id, ...usableAt(now) }, data: { revokedAt: now } });
    if (revoked.count === 0) {
      throw conflict(
        'invitation_not_pending',
        `The invitation is ${linkStatus(invitation, now)}: only a pending invitation can be revoked.`,
      );
    }
    await recordInvitation(tx, audit, 'invitation.revoked', invitation);
  });
}

/**
 * Revokes every pending invitation for the same address in this organization and emails a fresh seven-day one with
 * the same role. Works from pending, expired and revoked; an accepted invitation is a 409.
 */
export function resendInvitation(
  db: TenantDb,
  appUrl: string,
  manager: InvitationManager,
  invitationId: string,
  audit: AuditContext,
): Promise<Invitation> {
  const { organization } = manager;
  return db.$transaction(async (tx) => {
    const original = await findManaged(tx, manager, invitationId);
    if (original.acceptedAt) throw conflict('invitation_accepted', 'This invitation has been accepted: there is nothing to resend.');
    await lockInvitee(tx, organization.id, original.email);
    await assertNotMember(tx, organization.id, original.email);
    const now = new Date();
    const earlier = { organizationId: organization.id, email: original.email, ...ORDINARY, ...usableAt(now) };
    if (manager.role !== 'owner' && (await tx.invitation.count({ where: { ...earlier, role: 'admin' } })) > 0) {
      throw adminInviteRequiresOwner();
    }
    await tx.invitation.updateMany({ where: earlier, data: { revokedAt: now } });
    const invitation = await issueInvitation(tx, {
      organization,
      email: original.email,
      role: original.role,
      invitedBy: manager.user,
      appUrl,
    });
    await recordInvitation(tx, audit, 'invitation.resent', invitation);
    return invitation;
  });
}

type LinkedInvitation = Invitation & { organization: Organization };

/**
 * The invitation behind a link, if it can still be accepted: pending, and its workspace active (an Owner handoff:
 * still awaiting its owner). Everything else, cancelled workspaces included, is the same 404.
 */
async function findUsableInvitation(db: Db, token: string, now: Date): Promise<LinkedInvitation> {
  const invitation = await db.invitation.findUnique({ where: { tokenHash: sha256Hex(token) }, include: { organization: true } });
  if (!invitation || linkStatus(invitation, now) !== 'pending') throw invalidLink();
  const { organization } = invitation;
  const joinable =
    invitation.role === 'owner' ? organization.status === 'pending_owner' : organization.status === 'active' && !organization.isPersonal;
  if (!joinable) throw invalidLink();
  return invitation;
}

export async function previewInvitation(db: Db, token: string) {
  const invitation = await findUsableInvitation(db, token, new Date());
  return {
    email: invitation.email,
    organization_name: invitation.organization.name,
    role: invitation.role,
    expires_at: invitation.expiresAt.toISOString(),
  };
}

interface Joined {
  role: MembershipRole;
  created: boolean;
}

/** Adds the membership; someone who already is a member keeps the membership (and role) they have. */
async function join(tx: Prisma.TransactionClient, invitation: Invitation, userId: string): Promise<Joined> {
  const key = { organizationId: invitation.organizationId, userId };
  // ON CONFLICT DO NOTHING: a concurrent join through another invitation cannot abort the transaction.
  const added = await tx.membership.createMany({ data: [{ ...key, role: invitation.role }], skipDuplicates: true });
  if (added.count === 1) return { role: invitation.role, created: true };
  const existing = await tx.membership.findUniqueOrThrow({ where: { organizationId_userId: key }, select: { role: true } });
  return { role: existing.role, created: false };
}

/**
 * Completes an Owner handoff (the workspace row already locked): the workspace becomes active with the acceptor as
 * its one owner, the temporary membership of its creator goes away, and any other Owner link of it stops working.
 */
async function completeHandoff(tx: Prisma.TransactionClient, invitation: Invitation, userId: string, now: Date): Promise<Joined> {
  const organizationId = invitation.organizationId;
  await tx.organization.update({ where: { id: organizationId }, data: { status: 'active', ownerEmail: null } });
  await tx.membership.deleteMany({ where: { organizationId, isTemporary: true } });
  await tx.invitation.updateMany({ where: { organizationId, role: 'owner', ...usableAt(now) }, data: { revokedAt: now } });
  const key = { organizationId, userId };
  const existing = await tx.membership.findUnique({ where: { organizationId_userId: key }, select: { id: true } });
  await tx.membership.upsert({ where: { organizationId_userId: key }, create: { ...key, role: 'owner' }, update: { role: 'owner' } });
  return { role: 'owner', created: existing === null };
}

/**
 * Accepts a link once: membership in that workspace only (an Owner handoff also activates the workspace), the link
 * consumed by a conditional update in the same transaction, so of two simultaneous accepts one gets a 404. The
 * audit row's actor is the accepting user (the link is the credential), so the caller passes only the client address.
 */
export async function acceptInvitation(
  deps: InvitationDeps,
  token: string,
  user: CurrentUser | null,
  body: AcceptBody,
  audit: Pick<AuditContext, 'ip'>,
): Promise<InvitationAcceptedDto> {
  const invitation = await findUsableInvitation(deps.db, token, new Date());
  const acceptor = await identifyAcceptor(deps.db, user, body, invitation.email, deps.privacyPolicyVersion ?? null);
  return deps.db.$transaction(async (tx) => {
    const now = new Date();
    // A handoff locks its workspace first, in the order provisioning's resend and cancel use (no deadlock); after
    // them, the link is revoked or the workspace cancelled, and this is a 404.
    if (invitation.role === 'owner' && (await lockOrganization(tx, invitation.organizationId)) !== 'pending_owner') {
      throw invalidLink();
    }
    const consumed = await tx.invitation.updateMany({ where: { id: invitation.id, ...usableAt(now) }, data: { acceptedAt: now } });
    if (consumed.count === 0) throw invalidLink();
    const accepting = await acceptingUser(tx, acceptor);
    const joined =
      invitation.role === 'owner' ? await completeHandoff(tx, invitation, accepting.id, now) : await join(tx, invitation, accepting.id);
    const username = accepting.created?.username ?? user?.username ?? '';
    await recordInvitation(
      tx,
      { actor: { type: 'user', userId: accepting.id, username }, ip: audit.ip },
      'invitation.accepted',
      invitation,
    );
    return {
      organization_id: invitation.organizationId,
      role: joined.role,
      membership_created: joined.created,
      tokens: accepting.created ? await deps.tokens.issuePair(accepting.created, tx) : null,
    };
  });
}

/**
 * Managing a workspace's invitations: every method works in the tenant it is given (the caller already holds
 * MANAGE_MEMBERS there), through its scoped client. No unscoped client reaches this service.
 */
export function createInvitationService(deps: Pick<InvitationDeps, 'appUrl'>) {
  const managerOf = (tenant: Tenant, user: InvitationManager['user']): InvitationManager => ({
    organization: tenant.organization,
    role: tenant.role,
    user,
  });
  return {
    list: async (tenant: Tenant, page: PageRequest): Promise<Page<InvitationDto>> => {
      const rows = await listInvitations(tenant.db, page);
      const now = new Date();
      return pageOfDtos(rows, page.limit, (row) => toInvitationDto(row, now));
    },
    create: async (tenant: Tenant, user: CurrentUser, input: InvitationCreate, audit: AuditContext) =>
      toInvitationDto(await createInvitation(tenant.db, deps.appUrl, managerOf(tenant, user), input, audit), new Date()),
    revoke: (tenant: Tenant, user: InvitationManager['user'], invitationId: string, audit: AuditContext) =>
      revokeInvitation(tenant.db, managerOf(tenant, user), invitationId, audit),
    resend: async (tenant: Tenant, user: CurrentUser, invitationId: string, audit: AuditContext) =>
      toInvitationDto(await resendInvitation(tenant.db, deps.appUrl, managerOf(tenant, user), invitationId, audit), new Date()),
  };
}

export type InvitationService = ReturnType<typeof createInvitationService>;

/**
 * An invitation link, public: the token is the credential, and finds its invitation whatever the workspace, so this
 * installation-wide service holds the unscoped client.
 */
export function createInvitationLinkService(deps: InvitationDeps) {
  return {
    preview: (token: string) => previewInvitation(deps.db, token),
    accept: (token: string, user: CurrentUser | null, body: AcceptBody, audit: Pick<AuditContext, 'ip'>) =>
      acceptInvitation(deps, token, user, body, audit),
  };
}
