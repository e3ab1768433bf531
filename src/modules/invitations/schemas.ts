// Request and response bodies of workspace invitations and of accepting an invitation link (shared with admin links).
import { Type, type Static } from '@sinclair/typebox';
import { Email, Nullable, NullableTimestamp, OrganizationParamsSchema, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { Password, TokenPairSchema } from '../auth/schemas.js';
import { editableProfileProperties } from '../account/schemas.js';
import { RoleSchema } from '../organizations/organization-dto.js';

const InvitableRoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')], {
  description: '`admin` only when the caller is the owner; `owner` is never invitable here (it is handed over through provisioning).',
});

export const InvitationCreateSchema = StrictObject(
  {
    email: Email({ description: "Address the link is sent to; stored lower-cased. A new user's account gets this address." }),
    role: InvitableRoleSchema,
  },
  { title: 'InvitationCreate' },
);
export type InvitationCreate = Static<typeof InvitationCreateSchema>;

export const InvitationSchema = Type.Object(
  {
    id: Uuid(),
    email: Type.String({ format: 'email' }),
    role: InvitableRoleSchema,
    status: Type.Union([Type.Literal('pending'), Type.Literal('accepted'), Type.Literal('expired'), Type.Literal('revoked')], {
      description: 'Derived when read: revoked, else accepted, else expired once `expires_at` has passed, else pending.',
    }),
    invited_by: Nullable(Uuid(), { description: 'User id of the sender; null once that account is deleted.' }),
    created_at: Timestamp(),
    expires_at: Timestamp({ description: 'Seven days after sending (or resending).' }),
    accepted_at: NullableTimestamp(),
    revoked_at: NullableTimestamp(),
  },
  { title: 'Invitation' },
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
    role: Type.Ref(RoleSchema),
    expires_at: Timestamp(),
  },
  { title: 'InvitationPreview', description: '`role` is `owner` for the Owner handoff of a newly provisioned workspace.' },
);

/** The body of both accept endpoints: a new user's registration, or nothing at all for a signed-in user. */
export const AcceptBodySchema = Type.Partial(
  StrictObject({
    username: Type.String({ minLength: 1, maxLength: 150, pattern: '^[\\w.@+-]+$', description: 'Letters, digits and @ . + - _ only.' }),
    password: Password({ description: 'At least 8 characters, at most 1,024 bytes, not entirely numeric, not the username or email.' }),
    ...editableProfileProperties,
  }),
  {
    title: 'AcceptInvitation',
    description:
      'New users (no Authorization header): `username`, `password` and `display_name` are required, the other profile ' +
      'fields optional; the email address is the invited one. Signed-in users send `{}` or no body.',
  },
);
export type AcceptBody = Static<typeof AcceptBodySchema>;

export const InvitationAcceptedSchema = Type.Object(
  {
    organization_id: Uuid(),
    role: Type.Ref(RoleSchema),
    membership_created: Type.Boolean({
      description: 'false when the user already was a member: the link is consumed and the existing membership (and its role) is kept.',
    }),
    tokens: Nullable(TokenPairSchema, { description: "A new account's tokens; null for a signed-in user." }),
  },
  { title: 'InvitationAccepted' },
);
export type InvitationAcceptedDto = Static<typeof InvitationAcceptedSchema>;
