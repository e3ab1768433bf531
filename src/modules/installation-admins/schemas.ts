// Request and response bodies of installation-administrator invitations.
import { Type, type Static } from '@sinclair/typebox';
import { Email, Nullable, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { TokenPairSchema } from '../auth/schemas.js';

export const AdminInvitationCreateSchema = StrictObject(
  { email: Email({ description: 'Address the link is sent to; stored lower-cased.' }) },
  { title: 'AdminInvitationCreate' },
);

export const AdminInvitationSchema = Type.Object(
  { id: Uuid(), email: Type.String({ format: 'email' }), expires_at: Timestamp({ description: 'Seven days after sending.' }) },
  { title: 'AdminInvitation' },
);
export type AdminInvitationDto = Static<typeof AdminInvitationSchema>;

export const AdminOverviewSchema = Type.Object(
  {
    administrators: Type.Array(
      Type.Object({ id: Uuid(), username: Type.String(), email: Type.String({ format: 'email' }) }, { title: 'InstallationAdmin' }),
      { description: 'Every installation administrator, oldest account first.' },
    ),
    invitations: Type.Array(AdminInvitationSchema, { description: 'Pending invitations only, newest first.' }),
  },
  { title: 'AdminOverview' },
);
export type AdminOverviewDto = Static<typeof AdminOverviewSchema>;

export const AdminInvitationPreviewSchema = Type.Object(
  { email: Type.String({ format: 'email' }), expires_at: Timestamp() },
  { title: 'AdminInvitationPreview' },
);

export const AdminInvitationAcceptedSchema = Type.Object(
  {
    is_superuser: Type.Literal(true),
    tokens: Nullable(TokenPairSchema, { description: "A new account's tokens; null for a signed-in user." }),
  },
  { title: 'AdminInvitationAccepted' },
);
export type AdminInvitationAcceptedDto = Static<typeof AdminInvitationAcceptedSchema>;
