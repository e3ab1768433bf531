// Redeems a change-stream ticket: one statement deletes it (single use) and checks its holder again, on the primary.
import type { MembershipRole, Organization } from '../generated/prisma/client.js';
import type { Capability } from '../lib/capabilities.js';
import { unauthorized } from '../lib/problem.js';
import type { Queryable } from './client.js';

/** Who a redeemed ticket acts as: the member or the API key that created it, as they are now. */
export type TicketHolder =
  | { kind: 'member'; membershipId: string; role: MembershipRole; organization: Organization }
  | { kind: 'api_key'; id: string; name: string; prefix: string; capabilities: Capability[]; organization: Organization };

/** Unknown, used, expired, of another workspace, or its holder lost access: one answer, 401. */
export const invalidTicket = () => unauthorized('ticket_not_valid', 'The stream ticket is unknown, used or expired.');

type TicketRow = Organization & {
  live: boolean;
  membershipId: string | null;
  role: MembershipRole | null;
  memberAllowed: boolean;
  keyId: string | null;
  keyName: string | null;
  keyPrefix: string | null;
  capabilities: Capability[] | null;
};

/**
 * Deletes the ticket whatever its state (a second use finds nothing), then answers its holder when the ticket was
 * live, is of `organizationId`, and its holder still has access: a member of the active workspace whose user is
 * active (and has two-factor sign-in on where the workspace requires it), or a key neither revoked nor expired.
 */
export async function redeemStreamTicket(pool: Queryable, tokenHash: string, organizationId: string): Promise<TicketHolder> {
  const { rows } = await pool.query<TicketRow>({
    name: 'redeem-stream-ticket',
    text: `WITH t AS (DELETE FROM event_stream_tickets WHERE token_hash = $1 RETURNING *)
           SELECT t.expires_at > now() AS live,
             m.id AS "membershipId", m.role,
             u.is_active AND (NOT o.require_two_factor OR u.two_factor_enabled_at IS NOT NULL) AS "memberAllowed",
             k.id AS "keyId", k.name AS "keyName", k.prefix AS "keyPrefix", k.capabilities,
             o.id, o.name, o.slug, o.is_personal AS "isPersonal", o.personal_user_id AS "personalUserId", o.status,
             o.created_by_id AS "createdById", o.owner_email AS "ownerEmail", o.require_two_factor AS "requireTwoFactor",
             o.created_at AS "createdAt", o.updated_at AS "updatedAt"
           FROM t JOIN organizations o ON o.id = t.organization_id AND o.status = 'active'
           LEFT JOIN memberships m ON m.id = t.membership_id AND m.organization_id = t.organization_id
           LEFT JOIN users u ON u.id = m.user_id
           LEFT JOIN api_keys k ON k.id = t.api_key_id AND k.organization_id = t.organization_id AND k.revoked_at IS NULL
             AND (k.expires_at IS NULL OR k.expires_at > now())
           WHERE t.organization_id = $2`,
    values: [tokenHash, organizationId],
  });
  const row = rows[0];
  if (!row?.live) throw invalidTicket();
  const { live: _live, membershipId, role, memberAllowed, keyId, keyName, keyPrefix, capabilities, ...organization } = row;
  if (membershipId && role && memberAllowed) return { kind: 'member', membershipId, role, organization };
  if (keyId && keyName && keyPrefix && capabilities) {
    return { kind: 'api_key', id: keyId, name: keyName, prefix: keyPrefix, capabilities, organization };
  }
  throw invalidTicket();
}
