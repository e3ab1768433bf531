// Writes rows of the append-only audit log, always on the caller's client so a row commits with the change it records.
import type { Prisma } from '../generated/prisma/client.js';
import type { Db } from '../db/client.js';

/** The actions the audit log records (admin-console.md); a row never names anything else. */
export const AUDIT_ACTIONS = [
  'admin.signed_in',
  'admin.sign_in_failed',
  'admin.signed_out',
  'user.deactivated',
  'user.reactivated',
  'user.signed_out_everywhere',
  'user.password_reset_sent',
  'workspace.created',
  'workspace.cancelled',
  'workspace.deleted',
  'workspace.owner_invitation_resent',
  'invitation.sent',
  'invitation.resent',
  'invitation.revoked',
  'invitation.accepted',
  'member.role_changed',
  'ownership.transferred',
  'member.removed',
  'installation_admin.invited',
  'installation_admin.accepted',
  'account.password_changed',
  'account.password_reset',
  'account.email_changed',
  'account.deleted',
  'account.two_factor_enrolled',
  'account.two_factor_disabled',
  'account.recovery_code_used',
  'account.session_ended',
  'workspace.updated',
  'email.retried',
  'setup.completed',
  'installation.backup_event_recorded',
  'installation.data_exported',
  'api_key.created',
  'api_key.revoked',
  'automation.created',
  'automation.updated',
  'automation.deleted',
  'automation.secret_rotated',
  'import.started',
  'view.created',
  'view.updated',
  'view.deleted',
  'crm.exported',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who did it: a user (id and username at that moment), a workspace API key (id, name and display prefix at that moment;
 * never the user who created it), the one-time setup, or the service itself.
 */
export type AuditActor =
  | { type: 'user'; userId: string; username: string }
  | { type: 'api_key'; apiKeyId: string; name: string; prefix: string }
  | { type: 'setup' }
  | { type: 'system' };

export interface AuditEntry {
  actor: AuditActor;
  action: AuditAction;
  target: { type: string; id?: string | null };
  organizationId?: string | null;
  /** The client's address as the app sees it (after TRUST_PROXY); null for background work. */
  ip?: string | null;
}

/** Any client that can insert audit rows: the app's, a transaction's, or a tenant-scoped transaction's (members). */
export type AuditWriter =
  | Db
  | Prisma.TransactionClient
  | { auditLog: { create(args: { data: Prisma.AuditLogUncheckedCreateInput }): PromiseLike<unknown> } };

/**
 * Appends one row. Pass the transaction client of the change being recorded: if the change rolls back, so does
 * its audit row, and a committed change always has one. Never pass tokens, passwords or message bodies.
 */
export async function recordAudit(client: AuditWriter, entry: AuditEntry): Promise<void> {
  const { actor } = entry;
  await client.auditLog.create({
    data: {
      actorType: actor.type,
      actorUserId: actor.type === 'user' ? actor.userId : null,
      actorUsername: actor.type === 'user' ? actor.username : null,
      actorApiKeyId: actor.type === 'api_key' ? actor.apiKeyId : null,
      actorApiKeyName: actor.type === 'api_key' ? actor.name : null,
      actorApiKeyPrefix: actor.type === 'api_key' ? actor.prefix : null,
      action: entry.action,
      targetType: entry.target.type,
      targetId: entry.target.id ?? null,
      organizationId: entry.organizationId ?? null,
      clientIp: entry.ip ?? null,
    },
  });
}

/** What a service needs to write the audit row of an action: who asks, and from where. */
export interface AuditContext {
  actor: AuditActor;
  ip: string | null;
}
