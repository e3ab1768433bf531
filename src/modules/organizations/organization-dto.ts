// The Organization body every endpoint returns, and its mapping from the database row and the caller's role.
import { Type, type Static } from '@sinclair/typebox';
import type { MembershipRole, Organization } from '../../generated/prisma/client.js';
import { named, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';

export const RoleSchema = StringEnum(['owner', 'admin', 'member', 'viewer'], {
  $id: 'MembershipRole',
  description:
    'Role in one organization: `owner` (one per workspace, everything), `admin` (manages members, invitations, email ' +
    'accounts and automations), `member` (reads and writes CRM records), `viewer` (reads only).',
});

export const OrganizationSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    slug: Type.String(),
    is_personal: Type.Boolean(),
    current_user_role: Ref(RoleSchema),
    require_two_factor: Type.Boolean({
      description: 'Members without two-factor sign-in get 403 `two_factor_required` on this workspace (set by the owner).',
    }),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { ...named('Organization'), description: 'A workspace, with the role the caller has in it.' },
);
export type OrganizationDto = Static<typeof OrganizationSchema>;

/** The organization fields the body shows (a full row, or the columns a raw query selected). */
export type OrganizationDtoSource = Pick<
  Organization,
  'id' | 'name' | 'slug' | 'isPersonal' | 'requireTwoFactor' | 'createdAt' | 'updatedAt'
>;

export function toOrganizationDto(organization: OrganizationDtoSource, role: MembershipRole): OrganizationDto {
  return {
    id: organization.id,
    name: organization.name,
    slug: organization.slug,
    is_personal: organization.isPersonal,
    current_user_role: role,
    require_two_factor: organization.requireTwoFactor,
    created_at: organization.createdAt.toISOString(),
    updated_at: organization.updatedAt.toISOString(),
  };
}
