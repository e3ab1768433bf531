// Issues a workspace invitation: a single-use link token (only its hash stored) and the email, in one transaction.
import type { Invitation, MembershipRole } from '../../generated/prisma/client.js';
import { transactionView, type AnyTx } from '../../db/tenant-scope.js';
import { enqueueEmail } from '../../email/outbox.js';
import { renderEmail } from '../../email/templates.js';
import { newLinkToken } from './invitation-link.js';

export interface IssueInvitationInput {
  organization: { id: string; name: string };
  email: string;
  role: MembershipRole;
  invitedBy: { id: string; username: string };
  /** SERVICE_APP_URL: the public origin the link points to. */
  appUrl: string;
}

/**
 * Creates the invitation row and queues its email in `tx`; throws 400 (nothing written) when no SMTP account can
 * send for the organization. An `owner` invitation is the provisioning handoff of a workspace.
 */
export async function issueInvitation(anyTx: AnyTx, input: IssueInvitationInput): Promise<Invitation> {
  const tx = transactionView(anyTx);
  const link = newLinkToken();
  const email = input.email.toLowerCase();
  const invitation = await tx.invitation.create({
    data: {
      organizationId: input.organization.id,
      email,
      role: input.role,
      tokenHash: link.tokenHash,
      invitedById: input.invitedBy.id,
      expiresAt: link.expiresAt,
    },
  });
  const handoff = input.role === 'owner';
  const message = renderEmail({
    subject: handoff ? `You have been made the owner of ${input.organization.name}` : `You are invited to join ${input.organization.name}`,
    paragraphs: [
      handoff
        ? `${input.invitedBy.username} created the workspace "${input.organization.name}" for you. Accept to become its owner.`
        : `${input.invitedBy.username} invited you to join the workspace "${input.organization.name}" as ${input.role}.`,
    ],
    action: { label: handoff ? 'Accept ownership' : 'Accept the invitation', url: `${input.appUrl}/invite/${link.token}` },
    footer: 'This link works once and expires in seven days. If you did not expect it, ignore this email.',
  });
  await enqueueEmail(tx, { to: email, ...message }, { organizationId: input.organization.id, requireAccount: true });
  return invitation;
}
