// The signed-in user's profile and settings: reading them, validating and applying PATCHes, and their DTOs.
import type { Prisma, Profile, User } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { unauthorized, validationFailed, type FieldErrors } from '../../lib/problem.js';
import type { ProfileDto, SettingsDto, SettingsPatch } from './schemas.js';

type Account = Pick<User, 'username' | 'email'> & { profile: Profile | null };

/** The profile fields alone (no account fields), as the profile, settings and export bodies show them. */
export function profileFields(profile: Profile | null) {
  return {
    display_name: profile?.displayName ?? null,
    first_name: profile?.firstName ?? null,
    last_name: profile?.lastName ?? null,
    date_of_birth: profile?.dateOfBirth ? profile.dateOfBirth.toISOString().slice(0, 10) : null,
    timezone: profile?.timezone ?? null,
    locale: profile?.locale ?? null,
    onboarding_completed_at: profile?.onboardingCompletedAt?.toISOString() ?? null,
  };
}

export const toProfileDto = (account: Account): ProfileDto => ({
  username: account.username,
  email: account.email,
  ...profileFields(account.profile),
});

export const toSettingsDto = (account: Account): SettingsDto => ({
  ...toProfileDto(account),
  marketing_consent: account.profile?.marketingConsent ?? false,
});

/** The user with the profile row, which may not exist yet (it is created by the first PATCH). */
export async function findAccount(db: Db, userId: string): Promise<Account> {
  const account = await db.user.findUnique({ where: { id: userId }, include: { profile: true } });
  if (!account) throw unauthorized();
  return account;
}

const trimmedOrNull = (value: string | null) => {
  const trimmed = value?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
};

/** True for an exact IANA name the runtime knows (aliases such as `UTC` included; wrong case or abbreviations not). */
function isTimeZone(name: string): boolean {
  if (Intl.supportedValuesOf('timeZone').includes(name)) return true;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone === name;
  } catch {
    return false;
  }
}

/** The canonical form of one BCP 47 tag (`en-us` → `en-US`), or null when it is not one. */
function canonicalLocale(tag: string): string | null {
  try {
    const canonical = Intl.getCanonicalLocales(tag);
    return canonical.length === 1 ? (canonical[0] ?? null) : null;
  } catch {
    return null;
  }
}

type ProfileColumns = Partial<Omit<Profile, 'userId' | 'updatedAt'>>;

/** Turns a PATCH into profile column values; throws 400 with every invalid field at once. */
export function profileChanges(patch: SettingsPatch, today: string): ProfileColumns {
  const errors: FieldErrors = {};
  const changes: ProfileColumns = {};
  if (patch.display_name !== undefined) changes.displayName = trimmedOrNull(patch.display_name);
  if (patch.first_name !== undefined) changes.firstName = trimmedOrNull(patch.first_name);
  if (patch.last_name !== undefined) changes.lastName = trimmedOrNull(patch.last_name);
  if (patch.date_of_birth !== undefined) {
    if (patch.date_of_birth !== null && patch.date_of_birth > today) errors.date_of_birth = ['Date of birth cannot be in the future.'];
    changes.dateOfBirth = patch.date_of_birth === null ? null : new Date(`${patch.date_of_birth}T00:00:00.000Z`);
  }
  if (patch.timezone !== undefined) {
    if (patch.timezone !== null && !isTimeZone(patch.timezone))
      errors.timezone = ['Unknown time zone: use an IANA name such as Europe/Berlin.'];
    changes.timezone = patch.timezone;
  }
  if (patch.locale !== undefined) {
    const locale = patch.locale === null ? null : canonicalLocale(patch.locale);
    if (patch.locale !== null && locale === null) errors.locale = ['Not a valid BCP 47 language tag (e.g. en-US).'];
    changes.locale = locale;
  }
  if (patch.marketing_consent !== undefined) changes.marketingConsent = patch.marketing_consent;
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return changes;
}

/**
 * Applies the profile fields of a profile or settings PATCH (the route's schema decides which fields may appear) in
 * one transaction, running `alsoInTransaction` (an email change request) in the same one. Setting a display name for
 * the first time completes onboarding. The email itself never changes here (see email-change-service.ts).
 */
export async function updateAccount(
  db: Db,
  userId: string,
  patch: SettingsPatch,
  alsoInTransaction?: (tx: Prisma.TransactionClient) => Promise<void>,
): Promise<Account> {
  const now = new Date();
  const changes = profileChanges(patch, now.toISOString().slice(0, 10));
  return db.$transaction(async (tx) => {
    const current = await tx.profile.findUnique({ where: { userId }, select: { onboardingCompletedAt: true } });
    if (typeof changes.displayName === 'string' && !current?.onboardingCompletedAt) changes.onboardingCompletedAt = now;
    await tx.profile.upsert({ where: { userId }, create: { ...changes, userId }, update: changes });
    if (alsoInTransaction) await alsoInTransaction(tx);
    return tx.user.findUniqueOrThrow({ where: { id: userId }, include: { profile: true } });
  });
}
