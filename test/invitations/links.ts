// Shared by the invitation and installation-admin tests: the link an action emails, read from the real mailbox.
import type { Mailbox, ReceivedMail } from '../helpers/mailbox.js';
import { linkIn, tokenOf } from '../helpers/mailbox.js';

const mailsTo = (mailbox: Mailbox, address: string) => mailbox.messages.filter((m) => m.to.includes(address.toLowerCase()));

/**
 * Runs `action` and returns its result with the next email it caused to `address` and the token of the link with
 * `pathPrefix` in it (e.g. '/invite/').
 */
export async function emailedLink<T>(
  mailbox: Mailbox,
  address: string,
  pathPrefix: string,
  action: () => Promise<T>,
): Promise<{ result: T; mail: ReceivedMail; link: string; token: string }> {
  const before = mailsTo(mailbox, address).length;
  const result = await action();
  await mailbox.waitFor(() => mailsTo(mailbox, address).length > before);
  const mail = mailsTo(mailbox, address)[before]!;
  const link = linkIn(mail, pathPrefix);
  return { result, mail, link, token: tokenOf(link) };
}
