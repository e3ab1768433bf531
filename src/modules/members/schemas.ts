// Request and response schemas of the member endpoints.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, OrganizationParamsSchema, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { RoleSchema } from '../organizations/organization-dto.js';

export const MemberSchema = Type.Object(
  {
    id: Uuid({ description: 'Membership id: the `membership_id` of the member endpoints.' }),
    user_id: Uuid(),
    username: Type.String(),
    email: Type.String({ format: 'email' }),
    display_name: Nullable(Type.String()),
    role: Type.Ref(RoleSchema),
    two_factor_enabled: Type.Boolean({ description: 'The member signs in with two factors (what `require_two_factor` asks of everyone).' }),
    created_at: Timestamp({ description: 'When the user joined.' }),
    updated_at: Timestamp(),
  },
  { title: 'Member' },
);
export type MemberDto = Static<typeof MemberSchema>;

export const MemberUpdateSchema = StrictObject(
  {
    // The literals of RoleSchema, inlined: request bodies are validated without the shared components.
    role: Type.Union(RoleSchema.anyOf, {
      description:
        '`owner` transfers ownership (owner only; the previous owner becomes `admin`). Only the owner grants or changes `admin`.',
    }),
  },
  { title: 'MemberUpdate' },
);
export type MemberUpdate = Static<typeof MemberUpdateSchema>;

export const MemberParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ membership_id: Type.String({ description: "Membership UUID (the member's `id`)." }) }),
]);
