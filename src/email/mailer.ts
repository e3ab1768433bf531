// Sends one message through an SMTP account with nodemailer; failures surface without credentials.
import nodemailer from 'nodemailer';
import { decryptSecret } from '../lib/crypto.js';
import { isPublicAddress, resolveHost } from '../modules/automations/network-policy.js';

/** SMTP settings with the password in clear (decrypted, or as just submitted); never logged or returned. */
export interface SmtpSettings {
  host: string;
  port: number;
  username: string;
  password: string | null;
  fromEmail: string;
  fromName: string | null;
  useTls: boolean;
  useSsl: boolean;
}

export interface OutgoingMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** A fixed Message-ID (`<…@…>`), so that every attempt at one message carries the same one and a server can deduplicate. */
  messageId?: string;
}

const TIMEOUT_MS = 10_000;

/**
 * The address to connect to when only public ones are allowed: every address of the host must be public (a name
 * resolving to an internal address is refused), and the connection goes to the checked one, not to a second answer.
 */
async function publicTarget(host: string): Promise<string> {
  let addresses: Awaited<ReturnType<typeof resolveHost>>;
  try {
    addresses = await resolveHost(host.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, ''));
  } catch {
    throw new SmtpError('connection');
  }
  const [first] = addresses;
  if (!first) throw new SmtpError('connection');
  if (!addresses.every((a) => isPublicAddress(a.address))) throw new SmtpError('blocked');
  return first.address;
}

/**
 * Sends and resolves when the server accepted the message; rejects with a credential-free SmtpError. `publicOnly`
 * (workspace accounts, unless EMAIL_SMTP_ALLOW_PRIVATE) refuses hosts that resolve to non-public addresses.
 */
export async function sendMail(settings: SmtpSettings, message: OutgoingMessage, options: { publicOnly?: boolean } = {}): Promise<void> {
  const address = options.publicOnly ? await publicTarget(settings.host) : null;
  const transport = nodemailer.createTransport({
    // The checked address; TLS still verifies the certificate against the configured name.
    host: address ?? settings.host,
    ...(address ? { servername: settings.host } : {}),
    port: settings.port,
    secure: settings.useSsl,
    requireTLS: settings.useTls && !settings.useSsl,
    // Neither TLS flag: plain SMTP as configured, no opportunistic STARTTLS.
    ignoreTLS: !settings.useTls && !settings.useSsl,
    auth: settings.username ? { user: settings.username, pass: settings.password ?? '' } : undefined,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    logger: false,
    debug: false,
  });
  try {
    await transport.sendMail({
      from: settings.fromName ? { name: settings.fromName, address: settings.fromEmail } : settings.fromEmail,
      to: message.to,
      subject: message.subject,
      text: message.text,
      html: message.html,
      ...(message.messageId ? { messageId: message.messageId } : {}),
    });
  } catch (error) {
    throw SmtpError.from(error);
  } finally {
    transport.close();
  }
}

/** An SMTP failure reduced to what is safe to store and log: a category and the server's reply code. */
export class SmtpError extends Error {
  override name = 'SmtpError';
  constructor(
    readonly category: 'connection' | 'authentication' | 'rejected' | 'blocked' | 'other',
    readonly responseCode?: number,
  ) {
    super(
      category === 'blocked'
        ? 'SMTP host refused: it resolves to a private, loopback or otherwise non-public address'
        : `SMTP ${category} failure${responseCode ? ` (reply ${responseCode})` : ''}`,
    );
  }

  static from(error: unknown): SmtpError {
    const e = error as { code?: string; responseCode?: number };
    const code = typeof e?.responseCode === 'number' ? e.responseCode : undefined;
    if (e?.code === 'EAUTH') return new SmtpError('authentication', code);
    if (e?.code === 'ECONNECTION' || e?.code === 'ETIMEDOUT' || e?.code === 'ESOCKET' || e?.code === 'EDNS' || e?.code === 'ETLS') {
      return new SmtpError('connection', code);
    }
    if (e?.code === 'EENVELOPE' || e?.code === 'EMESSAGE') return new SmtpError('rejected', code);
    return new SmtpError('other', code);
  }
}

/** SMTP settings of a stored account, decrypting its password with the installation key. */
export function settingsOfAccount(
  account: {
    host: string;
    port: number;
    username: string;
    passwordEncrypted: string | null;
    fromEmail: string;
    fromName: string | null;
    useTls: boolean;
    useSsl: boolean;
  },
  key: Buffer | null,
): SmtpSettings {
  let password: string | null = null;
  if (account.passwordEncrypted) {
    if (!key) throw new Error('EMAIL_ENCRYPTION_KEY is not configured: stored SMTP passwords cannot be decrypted.');
    password = decryptSecret(account.passwordEncrypted, key);
  }
  return {
    host: account.host,
    port: account.port,
    username: account.username,
    password,
    fromEmail: account.fromEmail,
    fromName: account.fromName,
    useTls: account.useTls,
    useSsl: account.useSsl,
  };
}
