// Request and response bodies of the signed-in user's account: me, profile, settings, export, deletion, passwords.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Nullable, NullableTimestamp, Ref, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { OrganizationSchema, RoleSchema } from '../organizations/organization-dto.js';
import { Password } from '../auth/schemas.js';

export const MeSchema = Type.Object(
  {
    id: Uuid(),
    username: Type.String(),
    email: Type.String({ format: 'email' }),
    is_superuser: Type.Boolean({ description: 'Installation administrator.' }),
    can_create_workspaces: Type.Boolean({
      description: 'Whether POST /organizations/ is open to the caller (installation administrators only).',
    }),
    two_factor_enabled: Type.Boolean({ description: 'Sign-in asks for a TOTP code after the password (see POST /auth/me/two-factor/).' }),
    privacy_policy_version_accepted: Nullable(Type.String(), { description: 'The privacy policy version the caller last accepted.' }),
    privacy_policy_acceptance_required: Type.Boolean({
      description:
        'The installation has a privacy policy (PRIVACY_POLICY_VERSION) whose current version the caller has not accepted: ' +
        'POST /auth/me/privacy-policy/{version} records it.',
    }),
    organizations: Type.Array(Ref(OrganizationSchema), {
      description: 'Active workspaces the caller is a member of, newest membership first.',
    }),
  },
  { ...named('Me'), description: 'The signed-in user and the workspaces they belong to.' },
);

/** The editable profile fields, as returned; PATCH bodies take any subset of them (null clears a field). */
export const editableProfileProperties = {
  display_name: Nullable(Type.String({ maxLength: 150 }), { description: 'Setting it (non-blank) the first time completes onboarding.' }),
  first_name: Nullable(Type.String({ maxLength: 150 })),
  last_name: Nullable(Type.String({ maxLength: 150 })),
  date_of_birth: Nullable(Type.String({ format: 'date', maxLength: 10 }), { description: 'YYYY-MM-DD, not in the future.' }),
  timezone: Nullable(Type.String({ maxLength: 64 }), {
    description: 'IANA time zone name, exactly as in the tz database (e.g. `Europe/Berlin`, `UTC`).',
  }),
  locale: Nullable(Type.String({ maxLength: 35 }), { description: 'BCP 47 language tag (e.g. `en-US`); stored in canonical form.' }),
};

const profileProperties = {
  username: Type.String(),
  email: Type.String({ format: 'email' }),
  ...editableProfileProperties,
  onboarding_completed_at: NullableTimestamp(),
};

export const ProfileSchema = Type.Object(profileProperties, named('Profile'));
export type ProfileDto = Static<typeof ProfileSchema>;

const marketingConsent = Type.Boolean({ description: 'Consent to product and marketing emails.' });

export const SettingsSchema = Type.Object({ ...profileProperties, marketing_consent: marketingConsent }, named('Settings'));
export type SettingsDto = Static<typeof SettingsSchema>;

export const ProfilePatchSchema = Type.Partial(StrictObject(editableProfileProperties), {
  ...named('ProfileUpdate'),
  description: 'Names are trimmed; a blank one is stored as null.',
});

export const SettingsPatchSchema = Type.Partial(
  StrictObject({
    ...editableProfileProperties,
    email: Email({
      description:
        'New email address (stored lower-cased). Needs `current_password`; takes effect only once confirmed through the ' +
        'link emailed to it.',
    }),
    current_password: Type.String({ maxLength: 1024, description: 'Required with a new `email`.' }),
    marketing_consent: marketingConsent,
  }),
  { ...named('SettingsUpdate'), description: 'Names are trimmed; a blank one is stored as null.' },
);
export type SettingsPatch = Static<typeof SettingsPatchSchema>;

/** Path parameters are inlined into each operation (a named component of them would be unused). */
export const PrivacyPolicyParamsSchema = Type.Object({
  version: Type.String({ minLength: 1, maxLength: 64, description: 'The privacy policy version accepted.' }),
});

const ExportProfileSchema = Type.Object(
  {
    ...editableProfileProperties,
    marketing_consent: marketingConsent,
    onboarding_completed_at: NullableTimestamp(),
    privacy_policy_version_accepted: Nullable(Type.String(), { description: 'The privacy policy version last accepted.' }),
    privacy_policy_accepted_at: NullableTimestamp(),
  },
  named('ExportProfile'),
);

const ExportAccountSchema = Type.Object(
  { username: Type.String(), email: Type.String({ format: 'email' }), date_joined: Timestamp() },
  named('ExportAccount'),
);

const ExportMembershipSchema = Type.Object(
  { organization_id: Uuid(), organization_name: Type.String(), role: Ref(RoleSchema), created_at: Timestamp() },
  named('ExportMembership'),
);

export const AccountExportSchema = Type.Object(
  {
    account: Ref(ExportAccountSchema),
    profile: Ref(ExportProfileSchema),
    memberships: Type.Array(Ref(ExportMembershipSchema)),
  },
  {
    ...named('AccountExport'),
    description: 'Personal data only: never tokens, password hashes, SMTP data or workspace CRM records.',
  },
);
export type AccountExportDto = Static<typeof AccountExportSchema>;

export const DeleteAccountSchema = StrictObject(
  {
    password: Password({ description: 'The current password.' }),
    confirmation: Type.String({ maxLength: 100, description: 'Exactly `DELETE`.' }),
  },
  named('AccountDelete'),
);

const newPassword = Password({
  description: 'At least 8 characters, at most 1,024 bytes, not entirely numeric, not the username or email.',
});

export const PasswordChangeSchema = StrictObject({ current_password: Password(), new_password: newPassword }, named('PasswordChange'));

export const EmailChangeParamsSchema = Type.Object({
  token: Type.String({ maxLength: 200, description: 'Token from the emailed confirmation link.' }),
});

export const PasswordResetRequestSchema = StrictObject({ email: Email() }, named('PasswordResetRequest'));

export const PasswordResetConfirmSchema = StrictObject({ new_password: newPassword }, named('PasswordResetConfirm'));

export const PasswordResetParamsSchema = Type.Object({
  uidb64: Type.String({ maxLength: 200, description: 'base64url of the user id, from the emailed link.' }),
  token: Type.String({ maxLength: 200, description: 'Token from the emailed link.' }),
});

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const ACCOUNT_SCHEMAS = [
  MeSchema,
  ProfileSchema,
  SettingsSchema,
  ProfilePatchSchema,
  SettingsPatchSchema,
  ExportAccountSchema,
  ExportProfileSchema,
  ExportMembershipSchema,
  AccountExportSchema,
  DeleteAccountSchema,
  PasswordChangeSchema,
  PasswordResetRequestSchema,
  PasswordResetConfirmSchema,
];
