// The signed-in user's account as a whole: who am I, the personal data export, and deleting the account.
import type { Db, Queryable } from '../../db/client.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { badRequest, conflict, unauthorized, validationFailed } from '../../lib/problem.js';
import { verifyPassword } from '../../lib/passwords.js';
import type { MembershipRole } from '../../generated/prisma/client.js';
import { newestFirst } from '../../lib/pagination.js';
import { toOrganizationDto, type OrganizationDtoSource } from '../organizations/organization-dto.js';
import { findAccount, profileFields, toProfileDto, toSettingsDto, updateAccount } from './profile-service.js';
import { confirmEmailChange, updateSettings } from './email-change-service.js';
import { changePassword, confirmPasswordReset, requestPasswordReset } from './password-service.js';
import type { TokenService } from '../auth/token-service.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { AccountExportDto, SettingsPatch } from './schemas.js';

/**
 * The caller and every active workspace they are a member of (pending and cancelled ones stay hidden): one named
 * statement on the pool, planned once per connection (Prisma's include cost two queries and their compilation).
 */
export async function getMe(pool: Queryable, user: CurrentUser, privacyPolicyVersion: string | null) {
  const [account, { rows }] = await Promise.all([
    pool.query<{ enabled: boolean; privacy: string | null }>({
      name: 'get-me-account',
      text: `SELECT u.two_factor_enabled_at IS NOT NULL AS enabled, p.privacy_policy_version AS privacy
           FROM users u LEFT JOIN profiles p ON p.user_id = u.id WHERE u.id = $1`,
      values: [user.id],
    }),
    pool.query<MeOrganizationRow>({
      name: 'get-me-organizations',
      text: `SELECT m.role, o.id, o.name, o.slug, o.is_personal AS "isPersonal",
             o.require_two_factor AS "requireTwoFactor", o.created_at AS "createdAt", o.updated_at AS "updatedAt"
           FROM memberships m JOIN organizations o ON o.id = m.organization_id AND o.status = 'active'
           WHERE m.user_id = $1 ORDER BY m.created_at DESC, m.id DESC`,
      values: [user.id],
    }),
  ]);
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    is_superuser: user.isSuperuser,
    can_create_workspaces: user.isSuperuser,
    two_factor_enabled: account.rows[0]?.enabled === true,
    privacy_policy_version_accepted: account.rows[0]?.privacy ?? null,
    privacy_policy_acceptance_required: privacyPolicyVersion !== null && account.rows[0]?.privacy !== privacyPolicyVersion,
    organizations: rows.map((row) => toOrganizationDto(row, row.role)),
  };
}
type MeOrganizationRow = OrganizationDtoSource & { role: MembershipRole };

/** Account, profile and membership metadata: built field by field, so no secret can slip in with a new column. */
export async function exportAccount(db: Db, userId: string): Promise<AccountExportDto> {
  const user = await db.user.findUnique({
    where: { id: userId },
    include: { profile: true, memberships: { include: { organization: { select: { name: true } } }, orderBy: newestFirst } },
  });
  if (!user) throw unauthorized();
  return {
    account: { username: user.username, email: user.email, date_joined: user.dateJoined.toISOString() },
    profile: {
      ...profileFields(user.profile),
      marketing_consent: user.profile?.marketingConsent ?? false,
      privacy_policy_version_accepted: user.profile?.privacyPolicyVersion ?? null,
      privacy_policy_accepted_at: user.profile?.privacyPolicyAcceptedAt?.toISOString() ?? null,
    },
    memberships: user.memberships.map((m) => ({
      organization_id: m.organizationId,
      organization_name: m.organization.name,
      role: m.role,
      created_at: m.createdAt.toISOString(),
    })),
  };
}

const DELETE_CONFIRMATION = 'DELETE';

/**
 * Deletes the account after the literal confirmation and the password. Refused (409) while the user owns a shared
 * workspace that is not cancelled, or is the last installation administrator: either would leave something nobody
 * can manage. The database cascades to memberships, profile, refresh and reset tokens and the personal workspace,
 * so every token of the user stops working with the row.
 */
export async function deleteAccount(
  db: Db,
  userId: string,
  input: { password: string; confirmation: string },
  audit: AuditContext,
): Promise<void> {
  if (input.confirmation !== DELETE_CONFIRMATION) {
    throw validationFailed({ confirmation: [`Type ${DELETE_CONFIRMATION} to confirm the deletion.`] });
  }
  const user = await db.user.findUnique({ where: { id: userId }, select: { passwordHash: true, isSuperuser: true } });
  if (!user) throw unauthorized();
  if (!(await verifyPassword(user.passwordHash, input.password))) {
    throw badRequest('wrong_password', 'The password is incorrect.', { password: ['The password is incorrect.'] });
  }
  await db.$transaction(async (tx) => {
    // The organizations first (ownership transfers lock them too), then the user row, which an accepted handoff
    // needs (its new membership's foreign key): a transfer or handoff then either commits before the check below,
    // which sees the ownership, or fails after the deletion, so no active workspace is left without an owner.
    await tx.$queryRaw`
      SELECT o.id FROM organizations o JOIN memberships m ON m.organization_id = o.id
      WHERE m.user_id = ${userId}::uuid ORDER BY o.id FOR UPDATE OF o`;
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    const owned = await tx.organization.findMany({
      where: { isPersonal: false, status: { not: 'cancelled' }, memberships: { some: { userId, role: 'owner' } } },
      select: { name: true },
      orderBy: { createdAt: 'asc' },
    });
    if (owned.length > 0) {
      const names = owned.map((o) => `"${o.name}"`).join(', ');
      throw conflict('owner_of_workspace', `You own ${names}: transfer the ownership before deleting your account.`);
    }
    if (user.isSuperuser && (await tx.user.count({ where: { isSuperuser: true, id: { not: userId } } })) === 0) {
      throw conflict(
        'last_installation_admin',
        'You are the only installation administrator: invite another one before deleting your account.',
      );
    }
    // Explicit although the foreign key cascades: the console sessions end in this transaction whatever the schema.
    await tx.adminSession.deleteMany({ where: { userId } });
    await tx.user.delete({ where: { id: userId } });
    await recordAudit(tx, { ...audit, action: 'account.deleted', target: { type: 'user', id: userId } });
  });
}

export interface AccountDeps {
  db: Db;
  pool: Queryable;
  tokens: TokenService;
  /** SERVICE_APP_URL, for the email change and password reset links. */
  appUrl: string;
  /** PRIVACY_POLICY_VERSION: the version `me` asks the person to accept (null: none). */
  privacyPolicyVersion: string | null;
}

/** Records that the person accepted the current privacy policy; any other version (or none configured) is a 400. */
async function acceptPrivacyPolicy(db: Db, userId: string, version: string, current: string | null): Promise<void> {
  if (current === null || version !== current) {
    throw validationFailed(
      { version: [current === null ? 'This installation has no privacy policy to accept.' : `The current version is ${current}.`] },
      'Not the current privacy policy version.',
    );
  }
  const accepted = { privacyPolicyVersion: version, privacyPolicyAcceptedAt: new Date() };
  await db.profile.upsert({ where: { userId }, create: { ...accepted, userId }, update: accepted });
}

/** The account service: everything the signed-in user does to their own account, and the password and email links. */
export function createAccountService(deps: AccountDeps) {
  const { db, pool, tokens, appUrl, privacyPolicyVersion } = deps;
  return {
    me: (user: CurrentUser) => getMe(pool, user, privacyPolicyVersion),
    acceptPrivacyPolicy: async (user: CurrentUser, version: string) => {
      await acceptPrivacyPolicy(db, user.id, version, privacyPolicyVersion);
      return getMe(pool, user, privacyPolicyVersion);
    },
    profile: async (userId: string) => toProfileDto(await findAccount(db, userId)),
    updateProfile: async (userId: string, patch: SettingsPatch) => toProfileDto(await updateAccount(db, userId, patch)),
    settings: async (userId: string) => toSettingsDto(await findAccount(db, userId)),
    updateSettings: async (userId: string, patch: SettingsPatch) => toSettingsDto(await updateSettings({ db, appUrl }, userId, patch)),
    export: (userId: string) => exportAccount(db, userId),
    delete: (userId: string, input: { password: string; confirmation: string }, audit: AuditContext) =>
      deleteAccount(db, userId, input, audit),
    changePassword: (userId: string, input: { current_password: string; new_password: string }, audit: AuditContext) =>
      changePassword({ db, tokens }, userId, input, audit),
    requestPasswordReset: (email: string) => requestPasswordReset(db, email),
    confirmPasswordReset: (link: { uidb64: string; token: string }, newPassword: string, audit: Pick<AuditContext, 'ip'>) =>
      confirmPasswordReset({ db, tokens }, link, newPassword, audit),
    confirmEmailChange: (token: string, audit: Pick<AuditContext, 'ip'>) => confirmEmailChange(db, token, audit),
  };
}
