// Request and response bodies of workspace invitations and of accepting an invitation link (shared with admin links).
import { Type, type Static } from '@sinclair/typebox';
import {
  Email,
  named,
  Nullable,
  NullableTimestamp,
  OrganizationParamsSchema,
  Ref,
  StrictObject,
  StringEnum,
  Timestamp,
  Uuid,
} from '../../lib/http-schemas.js';
import { Password, TokenPairSchema } from '../auth/schemas.js';
import { editableProfileProperties } from '../account/schemas.js';
import { RoleSchema } from '../organizations/organization-dto.js';

export const InvitableRoleSchema = StringEnum(['admin', 'member', 'viewer'], {
  $id: 'InvitableRole',
  description:
    'The roles an invitation grants (see `MembershipRole`): `admin` only when the caller is the owner; `owner` is never ' +
    'invitable here (it is handed over through provisioning).',
});

export const InvitationStatusSchema = StringEnum(['pending', 'accepted', 'expired', 'revoked'], {
  $id: 'InvitationStatus',
  description:
    'Derived when read: `revoked` (withdrawn), else `accepted` (used), else `expired` once `expires_at` has passed, else ' + '`pending`.',
});

export const InvitationCreateSchema = StrictObject(
  {
    email: Email({ description: "Address the link is sent to; stored lower-cased. A new user's account gets this address." }),
    role: Ref(InvitableRoleSchema),
  },
  named('InvitationCreate'),
);
export type InvitationCreate = Static<typeof InvitationCreateSchema>;

export const InvitationSchema = Type.Object(
  {
    id: Uuid(),
    email: Type.String({ format: 'email' }),
    role: Ref(InvitableRoleSchema),
    status: Ref(InvitationStatusSchema),
    invited_by: Nullable(Uuid(), { description: 'User id of the sender; null once that account is deleted.' }),
    created_at: Timestamp(),
    expires_at: Timestamp({ description: 'Seven days after sending (or resending).' }),
    accepted_at: NullableTimestamp(),
    revoked_at: NullableTimestamp(),
  },
  { ...named('Invitation'), description: 'An invitation to a workspace (its token is only ever in the emailed link).' },
);
export type InvitationDto = Static<typeof InvitationSchema>;

export const InvitationParamsSchema = Type.Object({
  ...OrganizationParamsSchema.properties,
  invitation_id: Type.String({ description: 'Invitation UUID.' }),
});

export const LinkTokenParamsSchema = Type.Object({
  token: Type.String({ maxLength: 200, description: 'Token from the emailed link.' }),
});

export const InvitationPreviewSchema = Type.Object(
  {
    email: Type.String({ format: 'email' }),
    organization_name: Type.String(),
    role: Ref(RoleSchema),
    expires_at: Timestamp(),
  },
  { ...named('InvitationPreview'), description: '`role` is `owner` for the Owner handoff of a newly provisioned workspace.' },
);

/** The body of both accept endpoints: a new user's registration, or nothing at all for a signed-in user. */
export const AcceptBodySchema = Type.Partial(
  StrictObject({
    username: Type.String({ minLength: 1, maxLength: 150, pattern: '^[\\w.@+-]+$', description: 'Letters, digits and @ . + - _ only.' }),
    password: Password({ description: 'At least 8 characters, at most 1,024 bytes, not entirely numeric, not the username or email.' }),
    ...editableProfileProperties,
    privacy_policy_accepted: Type.Boolean({
      description: 'New users: acceptance of the current privacy policy, required (`true`) when the installation sets one.',
    }),
  }),
  {
    ...named('InvitationAccept'),
    description:
      'New users (no Authorization header): `username`, `password` and `display_name` are required, the other profile ' +
      'fields optional, and `privacy_policy_accepted: true` when the installation has a privacy policy; the email address ' +
      'is the invited one. Signed-in users send `{}` or no body.',
  },
);
export type AcceptBody = Static<typeof AcceptBodySchema>;

export const InvitationAcceptedSchema = Type.Object(
  {
    organization_id: Uuid(),
    role: Ref(RoleSchema),
    membership_created: Type.Boolean({
      description: 'false when the user already was a member: the link is consumed and the existing membership (and its role) is kept.',
    }),
    tokens: Nullable(Ref(TokenPairSchema), { description: "A new account's tokens; null for a signed-in user." }),
  },
  named('InvitationAccepted'),
);
export type InvitationAcceptedDto = Static<typeof InvitationAcceptedSchema>;

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const INVITATION_SCHEMAS = [
  InvitableRoleSchema,
  InvitationStatusSchema,
  InvitationCreateSchema,
  InvitationSchema,
  InvitationPreviewSchema,
  AcceptBodySchema,
  InvitationAcceptedSchema,
];
