// Changing the account's email address: the current password, a notice to the old address, and a confirmation link.
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { badRequest, conflict, notFound, unauthorized, validationFailed } from '../../lib/problem.js';
import { verifyPassword } from '../../lib/passwords.js';
import { isUniqueViolation } from '../../lib/prisma-errors.js';
import { randomToken, sha256Hex } from '../../lib/crypto.js';
import { enqueueEmail } from '../../email/outbox.js';
import { renderEmail } from '../../email/templates.js';
import { updateAccount } from './profile-service.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { SettingsPatch } from './schemas.js';

const CONFIRMATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

interface Deps {
  db: Db;
  appUrl: string;
}

interface Owner {
  id: string;
  username: string;
  email: string;
}

/**
 * Inside the settings transaction: ends outstanding reset links and earlier pending changes, tells the current
 * address, and emails a confirmation link to the new one unless another account uses it. Whether it does is not
 * visible to the caller, so the endpoint does not reveal which addresses have accounts.
 */
async function startEmailChange(tx: Prisma.TransactionClient, appUrl: string, user: Owner, newEmail: string): Promise<void> {
  const now = new Date();
  await tx.passwordResetToken.updateMany({ where: { userId: user.id, usedAt: null }, data: { usedAt: now } });
  await tx.emailChangeRequest.updateMany({ where: { userId: user.id, usedAt: null }, data: { usedAt: now } });
  const notice = renderEmail({
    subject: 'Your email address is being changed',
    paragraphs: [
      `Someone signed in to the account "${user.username}" asked to change its email address to ${newEmail}. ` +
        'The change takes effect only once it is confirmed from the new address.',
    ],
    footer: 'If it was not you, change your password now: whoever did this knows it. Password reset links sent earlier no longer work.',
  });
  await enqueueEmail(tx, { to: user.email, ...notice }, { organizationId: null, requireAccount: false });
  if (await tx.user.findUnique({ where: { email: newEmail }, select: { id: true } })) return;
  const token = randomToken();
  await tx.emailChangeRequest.create({
    data: { userId: user.id, newEmail, tokenHash: sha256Hex(token), expiresAt: new Date(now.getTime() + CONFIRMATION_TTL_MS) },
  });
  const confirmation = renderEmail({
    subject: 'Confirm your new email address',
    paragraphs: [`Confirm that ${newEmail} is the new email address of the account "${user.username}".`],
    action: { label: 'Confirm the address', url: `${appUrl}/confirm-email/${token}` },
    footer: 'This link works once and expires in seven days. If you did not ask for it, ignore this email.',
  });
  await enqueueEmail(tx, { to: newEmail, ...confirmation }, { organizationId: null, requireAccount: false });
}

/**
 * Applies a settings PATCH. A new `email` needs `current_password` and only starts a change (see startEmailChange);
 * the address stays the same until the link is confirmed.
 */
export async function updateSettings(deps: Deps, userId: string, patch: SettingsPatch) {
  const { email, current_password: currentPassword, ...profilePatch } = patch;
  const user = await deps.db.user.findUnique({
    where: { id: userId },
    select: { id: true, username: true, email: true, passwordHash: true },
  });
  if (!user) throw unauthorized();
  const newEmail = email?.toLowerCase();
  if (newEmail === undefined || newEmail === user.email) return updateAccount(deps.db, userId, profilePatch);
  if (currentPassword === undefined) throw validationFailed({ current_password: ['Required to change the email address.'] });
  if (!(await verifyPassword(user.passwordHash, currentPassword))) {
    throw badRequest('wrong_password', 'The current password is incorrect.', { current_password: ['The current password is incorrect.'] });
  }
  return updateAccount(deps.db, userId, profilePatch, (tx) => startEmailChange(tx, deps.appUrl, user, newEmail));
}

const confirmationInvalid = () =>
  notFound(
    'This email confirmation link is invalid, has expired, was replaced by a newer one or was already used.',
    'email_change_invalid',
  );

const emailTaken = () =>
  conflict('email_taken', 'Another account already uses this email address.', {
    email: ['Another account already uses this email address.'],
  });

/**
 * Makes the pending address the account's email; the link is consumed and reset links sent to the old address die.
 * The audit row's actor is the account's user (the link is the credential).
 */
export async function confirmEmailChange(db: Db, token: string, audit: Pick<AuditContext, 'ip'>): Promise<void> {
  try {
    await db.$transaction(async (tx) => {
      const now = new Date();
      const request = await tx.emailChangeRequest.findUnique({ where: { tokenHash: sha256Hex(token) } });
      if (!request) throw confirmationInvalid();
      // Claimed with a condition: of two concurrent uses of one link, only one wins.
      const claimed = await tx.emailChangeRequest.updateMany({
        where: { id: request.id, usedAt: null, expiresAt: { gt: now } },
        data: { usedAt: now },
      });
      if (claimed.count === 0) throw confirmationInvalid();
      const user = await tx.user.update({ where: { id: request.userId }, data: { email: request.newEmail }, select: { username: true } });
      await recordAudit(tx, {
        actor: { type: 'user', userId: request.userId, username: user.username },
        ip: audit.ip,
        action: 'account.email_changed',
        target: { type: 'user', id: request.userId },
      });
      await tx.passwordResetToken.updateMany({ where: { userId: request.userId, usedAt: null }, data: { usedAt: now } });
    });
  } catch (error) {
    // Another account took the address after the link was sent.
    if (isUniqueViolation(error, 'users', 'email')) throw emailTaken();
    throw error;
  }
}
