// The send_email action: one message to the rule's recipients through the workspace's sending account, sent now.
import type { Db } from '../../plugins/db.js';
import { sendMail, settingsOfAccount, SmtpError, type SmtpSettings } from '../email/mailer.js';
import { findSendingAccount } from '../email/outbox.js';
import { renderEmail } from '../email/templates.js';
import { ActionError } from './action-error.js';
import type { EventPayload } from './dispatch.js';
import type { SendEmailConfig } from './schemas.js';

/**
 * Sends through the organization's default account or the installation fallback. `db` is the unscoped client on
 * purpose: the fallback account belongs to no organization, so a tenant-scoped client could never find it.
 */
export async function sendEmailAction(
  config: SendEmailConfig,
  context: { automationName: string; payload: EventPayload },
  deps: { db: Db; encryptionKey: Buffer | null },
): Promise<void> {
  const account = await findSendingAccount(deps.db, context.payload.organization_id);
  if (!account) {
    throw new ActionError(
      'No email account can send this message: configure a default email account for the workspace or the installation fallback SMTP.',
      false,
    );
  }
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
    await sendMail(settings, { to: config.to.join(', '), ...message });
  } catch (error) {
    // SmtpError messages carry only a category and reply code; a connection failure may pass, the rest will not.
    if (error instanceof SmtpError) throw new ActionError(error.message, error.category === 'connection');
    throw error;
  }
}
