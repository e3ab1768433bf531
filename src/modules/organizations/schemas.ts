// Request and response schemas of the workspace endpoints: creation, provisioning handoffs, personal workspaces.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Ref, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { OrganizationSchema } from './organization-dto.js';

export const SLUG_PATTERN = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
export const SLUG_MAX_LENGTH = 100;
export const NAME_MAX_LENGTH = 200;

const OrganizationName = Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, description: 'Display name of the workspace.' });

export const OrganizationCreateSchema = StrictObject(
  {
    name: OrganizationName,
    slug: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SLUG_MAX_LENGTH,
        pattern: SLUG_PATTERN,
        description: 'Lower-case letters and digits in dash-separated groups; generated from the name when omitted.',
      }),
    ),
    owner_email: Email({
      description: 'The Owner. Your own address makes you the owner at once; any other address starts a provisioning handoff.',
    }),
  },
  named('OrganizationCreate'),
);
export type OrganizationCreate = Static<typeof OrganizationCreateSchema>;

export const OrganizationCreatedSchema = Type.Intersect(
  [
    Ref(OrganizationSchema),
    Type.Object({
      owner_invitation_pending: Type.Boolean({
        description:
          'true when an Owner invitation was emailed to owner_email: the workspace stays hidden (also from you) until it is accepted.',
      }),
    }),
  ],
  {
    ...named('OrganizationCreated'),
    description:
      'The new workspace. While the handoff is pending, current_user_role is `admin`: your temporary membership, removed ' +
      'when the Owner accepts.',
  },
);

export const OrganizationUpdateSchema = StrictObject(
  {
    name: Type.Optional(OrganizationName),
    require_two_factor: Type.Optional(
      Type.Boolean({
        description:
          'Owner only, and only while the owner has two-factor sign-in on. Members without it then get 403 ' +
          '`two_factor_required` on every endpoint of this workspace (their other workspaces are unaffected).',
      }),
    ),
  },
  {
    ...named('OrganizationUpdate'),
    description: 'Any subset; the slug never changes.',
    minProperties: 1,
  },
);
export type OrganizationUpdate = Static<typeof OrganizationUpdateSchema>;

export const PersonalOrganizationCreateSchema = StrictObject(
  { name: Type.Optional(OrganizationName) },
  { ...named('PersonalOrganizationCreate'), description: 'Optional; the body may also be omitted.' },
);
export type PersonalOrganizationCreate = Static<typeof PersonalOrganizationCreateSchema>;

export const ProvisioningItemSchema = Type.Object(
  {
    organization_id: Uuid(),
    name: Type.String(),
    slug: Type.String(),
    owner_email: Type.String({ format: 'email' }),
    created_at: Timestamp(),
  },
  { ...named('ProvisioningItem'), description: 'A workspace awaiting its Owner.' },
);
export type ProvisioningItem = Static<typeof ProvisioningItemSchema>;

export const ProvisioningResendSchema = StrictObject(
  {},
  { ...named('ProvisioningResend'), description: 'No fields; the body may be omitted.' },
);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const ORGANIZATION_SCHEMAS = [
  OrganizationCreateSchema,
  OrganizationCreatedSchema,
  OrganizationUpdateSchema,
  PersonalOrganizationCreateSchema,
  ProvisioningItemSchema,
  ProvisioningResendSchema,
];
