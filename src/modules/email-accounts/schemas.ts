// Request and response schemas of a workspace's SMTP accounts: the shared `smtp` input object, the password write-only.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, Nullable, OrganizationParamsSchema, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { SmtpAccountInputSchema } from '../../email/smtp-account-input.js';

const IsActive = Type.Object({
  is_active: Type.Optional(
    Type.Boolean({ description: 'An inactive default account leaves the workspace on the installation fallback SMTP. Default true.' }),
  ),
});

export const EmailAccountCreateSchema = Type.Composite([SmtpAccountInputSchema, IsActive], {
  additionalProperties: false,
  ...named('EmailAccountCreate'),
  description:
    'The `smtp` object plus `is_active`. An empty `password` stores none. The first account of a workspace always becomes its default.',
});
export type EmailAccountCreate = Static<typeof EmailAccountCreateSchema>;

export const EmailAccountUpdateSchema = Type.Composite([Type.Partial(SmtpAccountInputSchema), IsActive], {
  additionalProperties: false,
  minProperties: 1,
  ...named('EmailAccountUpdate'),
  description:
    'Only the fields to change. A new `password` replaces the stored one; an empty one removes it. `is_default: true` moves ' +
    'the default here; `is_default: false` on the default is refused (make another account the default instead).',
});
export type EmailAccountUpdate = Static<typeof EmailAccountUpdateSchema>;

export const EmailAccountSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    host: Type.String(),
    port: Type.Integer(),
    username: Type.String(),
    has_password: Type.Boolean({ description: 'Whether a password is stored; the password itself is never returned.' }),
    from_email: Type.String({ format: 'email' }),
    from_name: Nullable(Type.String()),
    use_tls: Type.Boolean(),
    use_ssl: Type.Boolean(),
    is_default: Type.Boolean({ description: 'The account the workspace sends with; exactly one account is the default.' }),
    is_active: Type.Boolean(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { ...named('EmailAccount'), description: "One of a workspace's SMTP accounts (its password is never returned)." },
);
export type EmailAccountDto = Static<typeof EmailAccountSchema>;

export const EmailAccountTestSchema = StrictObject(
  { recipient: Email({ description: 'Where to send the test message.' }) },
  named('EmailAccountTest'),
);

export const EmailAccountParamsSchema = Type.Composite([
  OrganizationParamsSchema,
  Type.Object({ account_id: Type.String({ description: 'Email account UUID.' }) }),
]);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const EMAIL_ACCOUNT_SCHEMAS = [EmailAccountCreateSchema, EmailAccountUpdateSchema, EmailAccountSchema, EmailAccountTestSchema];
