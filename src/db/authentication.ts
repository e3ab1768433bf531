// The per-request authentication lookups: one named query each, the user and session check in the same round trip.
import type { MembershipRole, Organization } from '../generated/prisma/client.js';
import type { AccessClaims, CurrentUser } from '../lib/current-user.js';
import { unauthorized } from '../lib/problem.js';
import type { Queryable } from './client.js';

export const invalidAccessToken = () => unauthorized('token_not_valid', 'Given token not valid for any token type.');

/** Columns over `users u` with the token's user id as $1 and session id as $2 (private to this file's queries). */
const USER_COLUMNS = `u.id, u.username, u.email, u.is_superuser AS "isSuperuser",
  u.token_version AS "tokenVersion", u.is_active AS "isActive", u.two_factor_enabled_at IS NOT NULL AS "twoFactorEnabled",
  EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.family_id = $2 AND r.revoked_at IS NULL
          AND r.used_at IS NULL AND r.expires_at > now()) AS "sessionLive"`;

type UserRow = CurrentUser & { sessionLive: boolean; isActive: boolean; twoFactorEnabled: boolean };

/**
 * 401 unless the row exists, is active (a deactivated user's tokens stop at once), carries the token's version (no
 * password change since) and a live session.
 */
function checkUserRow(row: UserRow | undefined, claims: AccessClaims): CurrentUser {
  if (!row?.isActive || row.tokenVersion !== claims.ver || !row.sessionLive) throw invalidAccessToken();
  return { id: row.id, username: row.username, email: row.email, isSuperuser: row.isSuperuser, tokenVersion: row.tokenVersion };
}

/** The user an access token's claims stand for, or 401. */
export async function authenticateClaims(pool: Queryable, claims: AccessClaims): Promise<CurrentUser> {
  const { rows } = await pool.query<UserRow>({
    name: 'authenticate-access-token',
    text: `SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1`,
    values: [claims.sub, claims.sid],
  });
  return checkUserRow(rows[0], claims);
}

export interface Membership {
  membershipId: string;
  role: MembershipRole;
  organization: Organization;
}

/** The organization columns of the tenancy query; all null when the caller has no membership in an active one. */
type MembershipColumns = { membershipId: string | null; role: MembershipRole | null; organizationId: string | null } & {
  [K in Exclude<keyof Organization, 'id'>]: Organization[K];
};

/**
 * The user (or 401) and their membership in the active organization `organizationId` (undefined when there is none,
 * whatever the reason), in one round trip: the cost of authenticating every tenant request. `twoFactorEnabled` is
 * what a workspace that requires two-factor sign-in checks.
 */
export async function authenticateMember(
  pool: Queryable,
  claims: AccessClaims,
  organizationId: string | null,
): Promise<{ user: CurrentUser; membership: Membership | undefined; twoFactorEnabled: boolean }> {
  const { rows } = await pool.query<UserRow & MembershipColumns>({
    name: 'authenticate-and-resolve-tenant',
    text: `SELECT ${USER_COLUMNS},
             m.id AS "membershipId", m.role, o.id AS "organizationId", o.name, o.slug, o.is_personal AS "isPersonal",
             o.personal_user_id AS "personalUserId", o.status, o.created_by_id AS "createdById",
             o.owner_email AS "ownerEmail", o.require_two_factor AS "requireTwoFactor",
             o.created_at AS "createdAt", o.updated_at AS "updatedAt"
           FROM users u
           LEFT JOIN memberships m ON m.user_id = u.id AND m.organization_id = $3
           LEFT JOIN organizations o ON o.id = m.organization_id AND o.status = 'active'
           WHERE u.id = $1`,
    values: [claims.sub, claims.sid, organizationId],
  });
  const row = rows[0];
  const user = checkUserRow(row, claims);
  const twoFactorEnabled = row?.twoFactorEnabled === true;
  if (!row?.organizationId || !row.membershipId || !row.role) return { user, membership: undefined, twoFactorEnabled };
  const organization: Organization = {
    id: row.organizationId,
    name: row.name,
    slug: row.slug,
    isPersonal: row.isPersonal,
    personalUserId: row.personalUserId,
    status: row.status,
    createdById: row.createdById,
    ownerEmail: row.ownerEmail,
    requireTwoFactor: row.requireTwoFactor,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
  return { user, membership: { membershipId: row.membershipId, role: row.role, organization }, twoFactorEnabled };
}
