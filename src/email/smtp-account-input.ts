// The `smtp` object clients submit (setup, SMTP test, email accounts) and its two uses: sending now, or storing.
import { Type, type Static } from '@sinclair/typebox';
import { Email, named, StrictObject } from '../lib/http-schemas.js';
import { encryptSecret } from '../lib/crypto.js';
import type { FieldErrors } from '../lib/problem.js';
import type { SmtpSettings } from './mailer.js';

export const SmtpAccountInputSchema = StrictObject(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'Label of the account.' }),
    host: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s/]+$', description: 'SMTP server host name or IP address.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    username: Type.String({ maxLength: 254, description: 'Login; empty for a server that needs no authentication.' }),
    password: Type.String({ maxLength: 1024, description: 'Stored encrypted (AES-256-GCM) and never returned.' }),
    from_email: Email({ description: 'Sender address.' }),
    from_name: Type.Optional(Type.String({ maxLength: 150, description: 'Sender display name.' })),
    use_tls: Type.Boolean({ description: 'Require STARTTLS on a plain connection. Mutually exclusive with use_ssl.' }),
    use_ssl: Type.Boolean({ description: 'Connect with implicit TLS (usually port 465). Mutually exclusive with use_tls.' }),
    is_default: Type.Optional(Type.Boolean({ description: "Use this account for the workspace's emails." })),
  },
  { ...named('SmtpAccountInput'), description: 'SMTP account settings.' },
);
export type SmtpAccountInput = Static<typeof SmtpAccountInputSchema>;

/** Errors the schema cannot express, keyed under `field` (the name of the smtp object in the body; none at top level). */
export function smtpInputErrors(input: Pick<SmtpAccountInput, 'use_tls' | 'use_ssl'>, field?: string): FieldErrors {
  const key = field ? `${field}.use_ssl` : 'use_ssl';
  return input.use_tls && input.use_ssl ? { [key]: ['use_tls and use_ssl are mutually exclusive; choose one.'] } : {};
}

/** Settings to send with right away (SMTP test), password in clear. */
export function smtpSettingsOf(input: SmtpAccountInput): SmtpSettings {
  return {
    host: input.host,
    port: input.port,
    username: input.username,
    password: input.password === '' ? null : input.password,
    fromEmail: input.from_email,
    fromName: input.from_name || null,
    useTls: input.use_tls,
    useSsl: input.use_ssl,
  };
}

/** The columns of an email_accounts row for this input, the password encrypted with the installation key. */
export function emailAccountColumns(input: SmtpAccountInput, key: Buffer) {
  return {
    name: input.name,
    host: input.host,
    port: input.port,
    username: input.username,
    passwordEncrypted: input.password === '' ? null : encryptSecret(input.password, key),
    fromEmail: input.from_email,
    fromName: input.from_name || null,
    useTls: input.use_tls,
    useSsl: input.use_ssl,
  };
}
