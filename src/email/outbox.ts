// The email outbox: rows and their jobs written in the caller's transaction, and the job that sends one row.
import type { EmailAccount, InstallationEmailAccount, Prisma } from '../generated/prisma/client.js';
import type { Db } from '../db/client.js';
import { badRequest } from '../lib/problem.js';
import { enqueueJob, isInterruptedAttempt, JOBS, mayRetry, RetryLater, rowIdOf } from '../jobs/queue.js';
import { sendMail, settingsOfAccount, SmtpError, type OutgoingMessage, type SmtpSettings } from './mailer.js';
import type { TaskList } from 'graphile-worker';

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
 * Queues a message inside the caller's transaction, so it is sent only if the change that causes it commits: the
 * outbox row and its job (which carries only the row's id) are written together.
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
  const row = await tx.emailOutbox.create({
    data: {
      emailAccountId: outboxAccountId(account),
      toAddress: message.to,
      subject: message.subject,
      textBody: message.text,
      htmlBody: message.html,
    },
    select: { id: true },
  });
  await enqueueJob(tx, JOBS.email, row.id);
}

/**
 * The Message-ID of an outbox row: the same on every attempt, so a retry after a crash mid-send (the server may
 * have accepted the first one) can be recognised as a duplicate by the receiving side.
 */
export const outboxMessageId = (rowId: string, fromEmail: string) => `<outbox.${rowId}@${fromEmail.split('@').pop() ?? 'localhost'}>`;

interface OutboxRow {
  id: string;
  email_account_id: string | null;
  to_address: string;
  subject: string;
  text_body: string | null;
  html_body: string | null;
  attempts: number;
}

export interface OutboxDeps {
  db: Db;
  encryptionKey: Buffer | null;
  /** EMAIL_SMTP_ALLOW_PRIVATE: otherwise workspace accounts may only reach public addresses. */
  allowPrivateHosts: boolean;
  log: { warn(obj: object, msg: string): void };
}

/** The account chosen when the row was queued; if it was deactivated or deleted since, whatever sends for its owner now. */
async function accountForRow(db: Db, accountId: string | null) {
  const chosen = accountId ? await db.emailAccount.findUnique({ where: { id: accountId } }) : null;
  if (chosen?.isActive) return chosen;
  return findSendingAccount(db, chosen?.organizationId ?? null);
}

/**
 * Sends one row; resolves to null when the server accepted it, else to the failure and whether it is worth another
 * attempt. Database errors propagate: the job fails and graphile-worker tries it again.
 */
async function sendRow(deps: OutboxDeps, row: OutboxRow): Promise<{ reason: string; transient: boolean } | null> {
  const account = await accountForRow(deps.db, row.email_account_id);
  if (!account) return { reason: 'no email account is configured', transient: false };
  let settings: SmtpSettings;
  try {
    settings = settingsOfAccount(account, deps.encryptionKey);
  } catch {
    // Fixed by configuring the right key and restarting, so worth retrying.
    return { reason: 'the stored SMTP password cannot be decrypted (EMAIL_ENCRYPTION_KEY missing or changed)', transient: true };
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
      { publicOnly: isWorkspaceAccount(account) && !deps.allowPrivateHosts },
    );
    return null;
  } catch (error) {
    if (!(error instanceof SmtpError)) throw error;
    // A 5xx refusal of the message or recipient is permanent; connection and login problems may be fixed meanwhile.
    const permanent = (error.category === 'rejected' && (error.responseCode ?? 0) >= 500) || error.category === 'blocked';
    return { reason: error.message, transient: !permanent };
  }
}

/**
 * The job of one outbox row (graphile-worker runs it: locked by one worker at a time, retried with its backoff,
 * released after a crash). The attempt is counted on the row before the send, so a crash mid-send shows; a row no
 * longer pending (sent, failed, deleted) is left alone, so a repeated job never sends twice.
 */
async function deliverOutboxRow(deps: OutboxDeps, id: string, attempt: number): Promise<void> {
  const [row] = await deps.db.$queryRaw<OutboxRow[]>`
    UPDATE email_outbox SET attempts = attempts + 1 WHERE id = ${id}::uuid AND status = 'pending'
    RETURNING id, email_account_id, to_address, subject, text_body, html_body, attempts`;
  if (!row) return;
  const failure = isInterruptedAttempt(JOBS.email, attempt)
    ? { reason: 'delivery was interrupted too often', transient: false }
    : await sendRow(deps, row);
  const retry = failure?.transient === true && mayRetry(JOBS.email, attempt);
  if (failure) deps.log.warn({ outboxId: row.id, attempts: row.attempts, final: !retry, reason: failure.reason }, 'email delivery failed');
  // The bodies may carry single-use links: they are kept only while another attempt is due.
  const data: Prisma.EmailOutboxUpdateManyMutationInput = !failure
    ? { status: 'sent', sentAt: new Date(), textBody: null, htmlBody: null, lastError: null }
    : retry
      ? { lastError: failure.reason }
      : { status: 'failed', lastError: failure.reason, textBody: null, htmlBody: null };
  await deps.db.emailOutbox.updateMany({ where: { id: row.id, status: 'pending' }, data });
  if (failure && retry) throw new RetryLater(failure.reason);
}

/** The outbox's task for the job runner (and for tests that run due jobs themselves). */
export const outboxTasks = (deps: OutboxDeps): TaskList => ({
  [JOBS.email.task]: (payload, helpers) => deliverOutboxRow(deps, rowIdOf(payload), helpers.job.attempts),
});
