// Installation administrators: who they are, inviting more through the installation fallback SMTP, accepting those links.
import type { InstallationAdminInvitation } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { conflict } from '../../lib/problem.js';
import { sha256Hex } from '../../lib/crypto.js';
import { newestFirst } from '../../lib/pagination.js';
import type { TokenService } from '../auth/token-service.js';
import { enqueueEmail } from '../../email/outbox.js';
import { renderEmail } from '../../email/templates.js';
import { invalidLink, linkStatus, lockInvitee, newLinkToken, usableAt } from '../invitations/invitation-link.js';
import { acceptingUser, identifyAcceptor } from '../invitations/acceptor.js';
import type { AcceptBody } from '../invitations/schemas.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { AdminInvitationAcceptedDto, AdminInvitationDto, AdminOverviewDto } from './schemas.js';

export interface AdminInvitationDeps {
  db: Db;
  /** SERVICE_APP_URL, for the link. */
  appUrl: string;
  tokens: TokenService;
  /** PRIVACY_POLICY_VERSION: a new account registered through a link accepts it (unset: nothing to accept). */
  privacyPolicyVersion?: string | null;
}

const toAdminInvitationDto = (invitation: InstallationAdminInvitation): AdminInvitationDto => ({
  id: invitation.id,
  email: invitation.email,
  expires_at: invitation.expiresAt.toISOString(),
});

export async function adminOverview(db: Db): Promise<AdminOverviewDto> {
  const [administrators, invitations] = await Promise.all([
    db.user.findMany({
      where: { isSuperuser: true },
      orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }],
      select: { id: true, username: true, email: true },
    }),
    db.installationAdminInvitation.findMany({ where: usableAt(new Date()), orderBy: newestFirst }),
  ]);
  return { administrators, invitations: invitations.map(toAdminInvitationDto) };
}

/**
 * Invites an installation administrator, always through the installation fallback SMTP (400
 * `email_not_configured` without it, whatever workspaces have). There is no separate resend: inviting the same
 * address again revokes its earlier links.
 */
export function inviteAdmin(
  deps: AdminInvitationDeps,
  inviter: CurrentUser,
  rawEmail: string,
  audit: AuditContext,
): Promise<AdminInvitationDto> {
  const email = rawEmail.toLowerCase();
  return deps.db.$transaction(async (tx) => {
    await lockInvitee(tx, 'installation-admin', email);
    if (await tx.user.findFirst({ where: { email, isSuperuser: true }, select: { id: true } })) {
      throw conflict('already_administrator', 'This address belongs to an installation administrator already.');
    }
    const now = new Date();
    await tx.installationAdminInvitation.updateMany({ where: { email, ...usableAt(now) }, data: { revokedAt: now } });
    const link = newLinkToken(now.getTime());
    const invitation = await tx.installationAdminInvitation.create({
      data: { email, tokenHash: link.tokenHash, invitedById: inviter.id, expiresAt: link.expiresAt },
    });
    const message = renderEmail({
      subject: 'You are invited to administer the Workspace CRM installation',
      paragraphs: [
        `${inviter.username} invited you to become an installation administrator: ` +
          'you will be able to create workspaces and invite other administrators.',
      ],
      action: { label: 'Accept the invitation', url: `${deps.appUrl}/installation-admin-invite/${link.token}` },
      footer: 'This link works once and expires in seven days. If you did not expect it, ignore this email.',
    });
    await enqueueEmail(tx, { to: email, ...message }, { organizationId: null, requireAccount: true, installationOnly: true });
    await recordAudit(tx, {
      ...audit,
      action: 'installation_admin.invited',
      target: { type: 'installation_admin_invitation', id: invitation.id },
    });
    return toAdminInvitationDto(invitation);
  });
}

async function findUsableAdminInvitation(db: Db, token: string): Promise<InstallationAdminInvitation> {
  const invitation = await db.installationAdminInvitation.findUnique({ where: { tokenHash: sha256Hex(token) } });
  if (!invitation || linkStatus(invitation, new Date()) !== 'pending') throw invalidLink();
  return invitation;
}

export async function previewAdminInvitation(db: Db, token: string) {
  const invitation = await findUsableAdminInvitation(db, token);
  return { email: invitation.email, expires_at: invitation.expiresAt.toISOString() };
}

/**
 * Accepts an admin link once (conditional update, so simultaneous accepts cannot both succeed): the user becomes
 * superuser and staff, with no workspace membership. The audit row's actor is the accepting user.
 */
export async function acceptAdminInvitation(
  deps: AdminInvitationDeps,
  token: string,
  user: CurrentUser | null,
  body: AcceptBody,
  audit: Pick<AuditContext, 'ip'>,
): Promise<AdminInvitationAcceptedDto> {
  const invitation = await findUsableAdminInvitation(deps.db, token);
  const acceptor = await identifyAcceptor(deps.db, user, body, invitation.email, deps.privacyPolicyVersion ?? null);
  return deps.db.$transaction(async (tx) => {
    const now = new Date();
    const consumed = await tx.installationAdminInvitation.updateMany({
      where: { id: invitation.id, ...usableAt(now) },
      data: { acceptedAt: now },
    });
    if (consumed.count === 0) throw invalidLink();
    const accepting = await acceptingUser(tx, acceptor);
    const admin = await tx.user.update({
      where: { id: accepting.id },
      data: { isSuperuser: true, isStaff: true },
      select: { username: true },
    });
    await recordAudit(tx, {
      actor: { type: 'user', userId: accepting.id, username: admin.username },
      ip: audit.ip,
      action: 'installation_admin.accepted',
      target: { type: 'installation_admin_invitation', id: invitation.id },
    });
    return { is_superuser: true, tokens: accepting.created ? await deps.tokens.issuePair(accepting.created, tx) : null };
  });
}

/** Installation administrators: the overview and invitations (for installation admins), and their public links. */
export function createInstallationAdminService(deps: AdminInvitationDeps) {
  return {
    overview: () => adminOverview(deps.db),
    invite: (inviter: CurrentUser, email: string, audit: AuditContext) => inviteAdmin(deps, inviter, email, audit),
    preview: (token: string) => previewAdminInvitation(deps.db, token),
    accept: (token: string, user: CurrentUser | null, body: AcceptBody, audit: Pick<AuditContext, 'ip'>) =>
      acceptAdminInvitation(deps, token, user, body, audit),
  };
}

export type InstallationAdminService = ReturnType<typeof createInstallationAdminService>;
