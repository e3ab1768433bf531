// A real SMTP server (smtp-server) for tests: accepts authenticated mail on 127.0.0.1 and parses what it receives.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import PostalMime from 'postal-mime';
import type { Test } from 'tap';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  raw: string;
  authUser: string | undefined;
}

export interface Mailbox {
  host: string;
  port: number;
  username: string;
  password: string;
  messages: ReceivedMail[];
  /**
   * While true, a message is read to its end and then never answered (the sender hangs in DATA, as with a server
   * that dies mid-transaction); its raw text goes to `held`, not to `messages`.
   */
  stall: boolean;
  held: string[];
  /** Resolves with the first message (already received or arriving within `timeoutMs`) that matches. */
  waitFor(predicate: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** Resolves with the newest message to `address`, waiting for it if needed. */
  waitForTo(address: string, timeoutMs?: number): Promise<ReceivedMail>;
  /** The smtp object the API takes (setup, email accounts) pointing at this server. */
  smtpConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export interface MailboxOptions {
  username?: string;
  password?: string;
  /** Refuse every message at DATA (SMTP 550), to test failing sends. */
  rejectMessages?: boolean;
}

export async function startMailbox(t: Test, options: MailboxOptions = {}): Promise<Mailbox> {
  const username = options.username ?? 'smtp-user';
  const password = options.password ?? 'smtp-secret-password';
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();

  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: false,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === username && auth.password === password) return callback(null, { user: auth.username });
      return callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (mailbox.stall) {
          mailbox.held.push(Buffer.concat(chunks).toString('utf8'));
          for (const wake of waiters) wake();
          return;
        }
        if (options.rejectMessages) {
          return callback(Object.assign(new Error('Message refused by test server'), { responseCode: 550 }));
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        PostalMime.parse(raw)
          .then((parsed) => {
            messages.push({
              from: parsed.from?.address ?? '',
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: parsed.html ?? '',
              raw,
              authUser: typeof session.user === 'string' ? session.user : undefined,
            });
            for (const wake of waiters) wake();
            callback();
          })
          .catch((err: Error) => callback(err));
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;

  const mailbox: Mailbox = {
    host: '127.0.0.1',
    port,
    username,
    password,
    messages,
    stall: false,
    held: [],
    waitFor(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching email within ${timeoutMs} ms (received ${messages.length})`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    waitForTo(address, timeoutMs) {
      const wanted = address.toLowerCase();
      return mailbox.waitFor((m) => m.to.includes(wanted), timeoutMs);
    },
    smtpConfig(overrides = {}) {
      return {
        name: 'Test SMTP',
        host: '127.0.0.1',
        port,
        username,
        password,
        from_email: 'crm@example.test',
        from_name: 'Workspace CRM',
        use_tls: false,
        use_ssl: false,
        ...overrides,
      };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  t.teardown(() => mailbox.close());
  return mailbox;
}

/** Extracts the first link of the app's public origin from a message (the token travels only there). */
export function linkIn(mail: ReceivedMail, pathPrefix: string): string {
  const match = new RegExp(`https?://[^\\s"'<>]+${pathPrefix.replace(/[/]/g, '\\/')}[^\\s"'<>]+`).exec(mail.text);
  if (!match) throw new Error(`no ${pathPrefix} link in email "${mail.subject}"`);
  return match[0];
}

/** The last path segment of a link: the token. */
export const tokenOf = (link: string): string => link.replace(/\/+$/, '').split('/').pop() ?? '';
