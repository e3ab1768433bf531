// Request and response schemas of the member endpoints.
import { Type, type Static } from '@sinclair/typebox';
import { named, Nullable, OrganizationParamsSchema, Ref, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { RoleSchema } from '../organizations/organization-dto.js';

export const MemberSchema = Type.Object(
  {
    id: Uuid({ description: 'Membership id: the `membership_id` of the member endpoints.' }),
    user_id: Uuid(),
    username: Type.String(),
    email: Type.String({ format: 'email' }),
    display_name: Nullable(Type.String()),
    role: Ref(RoleSchema),
    two_factor_enabled: Type.Boolean({ description: 'The member signs in with two factors (what `require_two_factor` asks of everyone).' }),
    created_at: Timestamp({ description: 'When the user joined.' }),
    updated_at: Timestamp(),
  },
  { ...named('Member'), description: "A user's membership of a workspace." },
);
export type MemberDto = Static<typeof MemberSchema>;

export const MemberUpdateSchema = StrictObject(
  {
    role: Ref(RoleSchema, {
      description:
        '`owner` transfers ownership (owner only; the previous owner becomes `admin`). Only the owner grants or changes `admin`.',
    }),
  },
  named('MemberUpdate'),
);
export type MemberUpdate = Static<typeof MemberUpdateSchema>;

export const MemberParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ membership_id: Type.String({ description: "Membership UUID (the member's `id`)." }) }),
]);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const MEMBER_SCHEMAS = [MemberSchema, MemberUpdateSchema];
