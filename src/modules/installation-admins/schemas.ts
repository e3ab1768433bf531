// Request and response bodies of installation-administrator invitations.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Nullable, Ref, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { TokenPairSchema } from '../auth/schemas.js';

export const AdminInvitationCreateSchema = StrictObject(
  { email: Email({ description: 'Address the link is sent to; stored lower-cased.' }) },
  named('AdminInvitationCreate'),
);

export const AdminInvitationSchema = Type.Object(
  { id: Uuid(), email: Type.String({ format: 'email' }), expires_at: Timestamp({ description: 'Seven days after sending.' }) },
  { ...named('AdminInvitation'), description: 'A pending invitation to become an installation administrator.' },
);
export type AdminInvitationDto = Static<typeof AdminInvitationSchema>;

const InstallationAdminSchema = Type.Object(
  { id: Uuid(), username: Type.String(), email: Type.String({ format: 'email' }) },
  named('InstallationAdmin'),
);

export const AdminOverviewSchema = Type.Object(
  {
    administrators: Type.Array(Ref(InstallationAdminSchema), {
      description: 'Every installation administrator, oldest account first.',
    }),
    invitations: Type.Array(Ref(AdminInvitationSchema), { description: 'Pending invitations only, newest first.' }),
  },
  named('AdminOverview'),
);
export type AdminOverviewDto = Static<typeof AdminOverviewSchema>;

export const AdminInvitationPreviewSchema = Type.Object(
  { email: Type.String({ format: 'email' }), expires_at: Timestamp() },
  named('AdminInvitationPreview'),
);

export const AdminInvitationAcceptedSchema = Type.Object(
  {
    is_superuser: Type.Literal(true),
    tokens: Nullable(Ref(TokenPairSchema), { description: "A new account's tokens; null for a signed-in user." }),
  },
  named('AdminInvitationAccepted'),
);
export type AdminInvitationAcceptedDto = Static<typeof AdminInvitationAcceptedSchema>;

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const INSTALLATION_ADMIN_SCHEMAS = [
  AdminInvitationCreateSchema,
  AdminInvitationSchema,
  InstallationAdminSchema,
  AdminOverviewSchema,
  AdminInvitationPreviewSchema,
  AdminInvitationAcceptedSchema,
];
