// The email outbox: rows written in the caller's transaction, and the worker step that claims and sends them.
import type { EmailAccount, InstallationEmailAccount, Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { badRequest } from '../../lib/problem.js';
import { sendMail, settingsOfAccount, SmtpError, type OutgoingMessage } from './mailer.js';

type DbClient = Db | Prisma.TransactionClient;

/** An SMTP account that can send: a workspace's own, or the installation's fallback. */
export type SendingAccount = EmailAccount | InstallationEmailAccount;

/** The installation's fallback account when it is active (installation settings: readable through any client). */
export const findFallbackAccount = (client: Pick<DbClient, 'installationEmailAccount'>) =>
  client.installationEmailAccount.findFirst({ where: { isActive: true } });

/** The account that sends for an organization: its active default account, else the installation fallback. */
export async function findSendingAccount(client: DbClient, organizationId: string | null): Promise<SendingAccount | null> {
  if (organizationId) {
    const own = await client.emailAccount.findFirst({ where: { organizationId, isDefault: true, isActive: true } });
    if (own) return own;
  }
  return findFallbackAccount(client);
}

/** Whether `account` is a workspace's own (the host policy applies) rather than the installation's fallback. */
export const isWorkspaceAccount = (account: SendingAccount): account is EmailAccount => 'organizationId' in account;

/** The `email_outbox.email_account_id` of a message sent through `account`: NULL stands for the installation fallback. */
export const outboxAccountId = (account: SendingAccount | null): string | null =>
  account && isWorkspaceAccount(account) ? account.id : null;

export const noEmailAccount = () =>
  badRequest(
    'email_not_configured',
    'No email account can send this message: configure a default email account for the workspace or the installation fallback SMTP.',
  );

/**
 * Queues a message inside the caller's transaction, so it is sent only if the change that causes it commits.
 * `requireAccount`: refuse (400) when no SMTP account can send it; otherwise queue anyway (e.g. password reset,
 * whose answer must not reveal anything) and let the worker record the failure.
 */
export async function enqueueEmail(
  tx: Prisma.TransactionClient,
  message: OutgoingMessage,
  options: { organizationId: string | null; requireAccount: boolean; installationOnly?: boolean },
): Promise<void> {
  const account = await findSendingAccount(tx, options.installationOnly ? null : options.organizationId);
  if (!account && options.requireAccount) throw noEmailAccount();
  await tx.emailOutbox.create({
    data: {
      emailAccountId: outboxAccountId(account),
      toAddress: message.to,
      subject: message.subject,
      textBody: message.text,
      htmlBody: message.html,
    },
  });
}

const MAX_ATTEMPTS = 6;
/** Longer than a batch can take (10 messages, each bounded by 10 s SMTP timeouts): a row held longer was lost by its worker. */
const LEASE_MS = 10 * 60_000;
const BATCH = 10;

/** Backoff before attempt n+1: 10 s, 40 s, 2.5 min, 10 min, 40 min (with ±20 % jitter). */
export const retryDelayMs = (attempts: number) => Math.round(10_000 * 4 ** (attempts - 1) * (0.8 + Math.random() * 0.4));

/**
 * The Message-ID of an outbox row: the same on every attempt, so a retry after a crash mid-send (the server may
 * have accepted the first one) can be recognised as a duplicate by the receiving side.
 */
export const outboxMessageId = (rowId: string, fromEmail: string) => `<outbox.${rowId}@${fromEmail.split('@').pop() ?? 'localhost'}>`;

interface ClaimedRow {
  id: string;
  email_account_id: string | null;
  to_address: string;
  subject: string;
  text_body: string | null;
  html_body: string | null;
  attempts: number;
}

/** The account chosen when the row was queued; if it was deactivated or deleted since, whatever sends for its owner now. */
async function accountForRow(db: Db, accountId: string | null) {
  const chosen = accountId ? await db.emailAccount.findUnique({ where: { id: accountId } }) : null;
  if (chosen?.isActive) return chosen;
  return findSendingAccount(db, chosen?.organizationId ?? null);
}

/**
 * Sends one claimed row; resolves to null when the server accepted it, else to the failure and whether to retry.
 * Database errors propagate: the row then stays claimed until its lease ends and is tried again.
 */
async function sendRow(
  db: Db,
  encryptionKey: Buffer | null,
  allowPrivateHosts: boolean,
  row: ClaimedRow,
): Promise<{ reason: string; retry: boolean } | null> {
  if (row.attempts > MAX_ATTEMPTS) return { reason: 'delivery was interrupted too often', retry: false };
  const retryable = row.attempts < MAX_ATTEMPTS;
  const account = await accountForRow(db, row.email_account_id);
  if (!account) return { reason: 'no email account is configured', retry: false };
  let settings;
  try {
    settings = settingsOfAccount(account, encryptionKey);
  } catch {
    // Fixed by configuring the right key and restarting, so worth retrying.
    return { reason: 'the stored SMTP password cannot be decrypted (EMAIL_ENCRYPTION_KEY missing or changed)', retry: retryable };
  }
  try {
    await sendMail(
      settings,
      {
        to: row.to_address,
        subject: row.subject,
        text: row.text_body ?? '',
        html: row.html_body ?? '',
        messageId: outboxMessageId(row.id, settings.fromEmail),
      },
      { publicOnly: isWorkspaceAccount(account) && !allowPrivateHosts },
    );
    return null;
  } catch (error) {
    if (!(error instanceof SmtpError)) throw error;
    // A 5xx refusal of the message or recipient is permanent; connection and login problems may be fixed meanwhile.
    const permanent = (error.category === 'rejected' && (error.responseCode ?? 0) >= 500) || error.category === 'blocked';
    return { reason: error.message, retry: retryable && !permanent };
  }
}

/**
 * Claims due rows (safe with several instances: FOR UPDATE SKIP LOCKED plus a lease, so a crashed worker's rows
 * come back), sends them one by one, and records the outcome. Returns how many rows it claimed.
 */
export async function processOutboxBatch(
  db: Db,
  encryptionKey: Buffer | null,
  log: { warn(obj: object, msg: string): void },
  /** EMAIL_SMTP_ALLOW_PRIVATE: otherwise workspace accounts may only reach public addresses. */
  allowPrivateHosts: boolean,
): Promise<number> {
  const rows = await db.$queryRaw<ClaimedRow[]>`
    UPDATE email_outbox SET attempts = attempts + 1, next_attempt_at = now() + ${LEASE_MS} * interval '1 millisecond'
    WHERE id IN (
      SELECT id FROM email_outbox WHERE status = 'pending' AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED
    )
    RETURNING id, email_account_id, to_address, subject, text_body, html_body, attempts`;
  for (const row of rows) {
    const failure = await sendRow(db, encryptionKey, allowPrivateHosts, row);
    if (failure)
      log.warn({ outboxId: row.id, attempts: row.attempts, final: !failure.retry, reason: failure.reason }, 'email delivery failed');
    // The bodies may carry single-use links: they are kept only while another attempt is due.
    const data: Prisma.EmailOutboxUpdateManyMutationInput = !failure
      ? { status: 'sent', sentAt: new Date(), textBody: null, htmlBody: null, lastError: null }
      : failure.retry
        ? { lastError: failure.reason, nextAttemptAt: new Date(Date.now() + retryDelayMs(row.attempts)) }
        : { status: 'failed', lastError: failure.reason, textBody: null, htmlBody: null };
    // Fenced by `attempts`: if this worker's lease ran out and another claimed the row, the newer attempt's result stands.
    await db.emailOutbox.updateMany({ where: { id: row.id, status: 'pending', attempts: row.attempts }, data });
  }
  return rows.length;
}
