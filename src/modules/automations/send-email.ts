// The send_email action: one message to the rule's recipients through the workspace's sending account, sent now.
import { transactionView, type TenantDb } from '../../db/tenant-scope.js';
import { lockOrganization } from '../../db/organization-lock.js';
import { sendMail, settingsOfAccount, SmtpError, type SmtpSettings } from '../../email/mailer.js';
import { findSendingAccount, isWorkspaceAccount, type SendingAccount } from '../../email/outbox.js';
import { renderEmail } from '../../email/templates.js';
import { ActionError, ActionSkipped } from './action-error.js';
import type { EventPayload } from './dispatch.js';
import type { SendEmailConfig } from './schemas.js';

const HOUR_MS = 60 * 60 * 1000;

/**
 * The sending policy that keeps the installation's SMTP from being an open relay for anyone who creates a workspace:
 * through the installation fallback, only the workspace's members may be mailed; and every workspace has an hourly
 * cap on automation messages. Admission to the cap is counted and recorded with the organization row locked, so
 * concurrent runs cannot all slip under it; a retried run was admitted on its first attempt already.
 */
async function assertSendingAllowed(
  tenant: TenantDb,
  account: SendingAccount,
  context: { organizationId: string; runId: string; recipients: string[] },
  perHour: number,
): Promise<void> {
  if (!isWorkspaceAccount(account)) {
    const wanted = [...new Set(context.recipients.map((address) => address.toLowerCase()))];
    const members = await tenant.membership.findMany({
      where: { user: { email: { in: wanted } } },
      select: { user: { select: { email: true } } },
    });
    const allowed = new Set(members.map((m) => m.user.email));
    const strangers = wanted.filter((address) => !allowed.has(address));
    if (strangers.length > 0) {
      throw new ActionSkipped(
        `Not sent: without an email account of its own, the workspace may only email its members (${strangers.length} ` +
          'recipient(s) are not members). Configure a default email account for the workspace.',
      );
    }
  }
  const admitted = await tenant.$transaction(async (tx) => {
    await lockOrganization(tx, context.organizationId);
    if (await tx.automationEmailSend.findFirst({ where: { runId: context.runId }, select: { id: true } })) return true;
    const since = new Date(Date.now() - HOUR_MS);
    await tx.automationEmailSend.deleteMany({ where: { sentAt: { lte: since } } });
    if ((await tx.automationEmailSend.count()) >= perHour) return false;
    await tx.automationEmailSend.create({ data: { organizationId: context.organizationId, runId: context.runId } });
    return true;
  });
  if (!admitted) {
    throw new ActionSkipped(`Not sent: the workspace reached its limit of ${perHour} automation emails per hour. Later events send again.`);
  }
}

/**
 * Sends through the organization's default account or the installation fallback (installation settings, which the
 * tenant client reads like any non-tenant table).
 */
export async function sendEmailAction(
  config: SendEmailConfig,
  context: { automationName: string; runId: string; payload: EventPayload },
  deps: { db: TenantDb; encryptionKey: Buffer | null; automationEmailsPerHour: number; smtpAllowPrivate: boolean },
): Promise<void> {
  const account = await findSendingAccount(transactionView(deps.db), context.payload.organization_id);
  if (!account) {
    throw new ActionError(
      'No email account can send this message: configure a default email account for the workspace or the installation fallback SMTP.',
      false,
    );
  }
  await assertSendingAllowed(
    deps.db,
    account,
    { organizationId: context.payload.organization_id, runId: context.runId, recipients: config.to },
    deps.automationEmailsPerHour,
  );
  let settings: SmtpSettings;
  try {
    settings = settingsOfAccount(account, deps.encryptionKey);
  } catch {
    throw new ActionError('The SMTP password cannot be decrypted: EMAIL_ENCRYPTION_KEY is missing or has changed.', false);
  }
  const message = renderEmail({
    subject: config.subject,
    paragraphs: config.body.split(/\r?\n\s*\r?\n/),
    footer: `Sent by the automation "${context.automationName}" on the event ${context.payload.event}.`,
  });
  try {
    await sendMail(
      settings,
      { to: config.to.join(', '), ...message },
      { publicOnly: isWorkspaceAccount(account) && !deps.smtpAllowPrivate },
    );
  } catch (error) {
    // SmtpError messages carry only a category and reply code; a connection failure may pass, the rest will not.
    if (error instanceof SmtpError) throw new ActionError(error.message, error.category === 'connection');
    throw error;
  }
}
