// Password change and reset by emailed link; either one ends every session and reset link the old password allowed.
import { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import { badRequest, notFound, unauthorized, validationFailed } from '../../lib/problem.js';
import { hashPassword, passwordProblems, verifyPassword } from '../../lib/passwords.js';
import { randomToken, sha256Hex } from '../../lib/crypto.js';
import type { TaskList } from 'graphile-worker';
import { addJobSql, JOBS, rowIdOf } from '../../jobs/queue.js';
import { enqueueEmail } from '../../email/outbox.js';
import { renderEmail } from '../../email/templates.js';
import type { TokenService } from '../auth/token-service.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';

const RESET_LINK_TTL_MS = 60 * 60 * 1000;

interface Deps {
  db: Db;
  tokens: TokenService;
}

/** Applies the password rules to a new password (400 under `new_password`) and hashes it. */
async function hashNewPassword(password: string, user: { username: string; email: string }): Promise<string> {
  const problems = passwordProblems(password, user);
  if (problems.length > 0) throw validationFailed({ new_password: problems });
  return hashPassword(password);
}

/**
 * Stores the new hash and ends what the old password opened: refresh tokens are revoked, the token version bump kills
 * older access tokens, console sessions end, and unused reset links die.
 */
async function storePassword(tx: Prisma.TransactionClient, tokens: TokenService, userId: string, passwordHash: string): Promise<void> {
  await tx.user.update({ where: { id: userId }, data: { passwordHash, tokenVersion: { increment: 1 } } });
  await tokens.revokeAllForUser(userId, tx);
  await tx.passwordResetToken.updateMany({ where: { userId, usedAt: null }, data: { usedAt: new Date() } });
  await tx.adminSession.deleteMany({ where: { userId } });
}

/** Changes the caller's password. No new tokens are issued: the caller signs in again like every other session. */
export async function changePassword(
  deps: Deps,
  userId: string,
  input: { current_password: string; new_password: string },
  audit: AuditContext,
): Promise<void> {
  const user = await deps.db.user.findUnique({ where: { id: userId }, select: { username: true, email: true, passwordHash: true } });
  if (!user) throw unauthorized();
  if (!(await verifyPassword(user.passwordHash, input.current_password))) {
    throw badRequest('wrong_password', 'The current password is incorrect.', { current_password: ['The current password is incorrect.'] });
  }
  const passwordHash = await hashNewPassword(input.new_password, user);
  await deps.db.$transaction(async (tx) => {
    await storePassword(tx, deps.tokens, userId, passwordHash);
    await recordAudit(tx, { ...audit, action: 'account.password_changed', target: { type: 'user', id: userId } });
  });
}

/** `<uidb64>` of a reset link: base64url of the user id. */
const encodeUid = (userId: string): string => Buffer.from(userId, 'utf8').toString('base64url');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function decodeUid(uidb64: string): string | null {
  const decoded = Buffer.from(uidb64, 'base64url').toString('utf8');
  return UUID.test(decoded) ? decoded : null;
}

/**
 * Queues the request and returns: the answer runs one statement (the request row and its job, which carries only
 * the row's id) whether or not the address belongs to an account, and the lookup, the link and the email happen
 * later in the job (see `passwordResetTasks`), so neither the answer nor its timing tells whether the address is known.
 */
export async function requestPasswordReset(db: Db, email: string): Promise<void> {
  await db.$executeRaw`
    WITH request AS (INSERT INTO password_reset_requests (id, email) VALUES (gen_random_uuid(), ${email.toLowerCase()}) RETURNING id)
    SELECT ${Prisma.raw(addJobSql(JOBS.passwordReset, 'request.id'))} FROM request`;
}

/**
 * The job behind `requestPasswordReset`: takes its request off the table and, for an address with an account,
 * creates a single-use link valid for one hour and queues its email, all in one transaction (a repeated job finds
 * no request and does nothing).
 */
async function processPasswordResetRequest(db: Db, appUrl: string, id: string): Promise<void> {
  await db.$transaction(async (tx) => {
    const [request] = await tx.$queryRaw<
      Array<{ email: string }>
    >`DELETE FROM password_reset_requests WHERE id = ${id}::uuid RETURNING email`;
    if (!request) return;
    const user = await tx.user.findUnique({ where: { email: request.email }, select: { id: true, username: true, email: true } });
    if (!user) return;
    const token = randomToken();
    await tx.passwordResetToken.create({
      data: { userId: user.id, tokenHash: sha256Hex(token), expiresAt: new Date(Date.now() + RESET_LINK_TTL_MS) },
    });
    const message = renderEmail({
      subject: 'Reset your password',
      paragraphs: [`Someone asked to reset the password of the account "${user.username}". If it was you, choose a new password.`],
      action: { label: 'Choose a new password', url: `${appUrl}/reset-password/${encodeUid(user.id)}/${token}` },
      footer: 'This link works once and expires in one hour. If you did not ask for it, ignore this email: your password stays the same.',
    });
    // Queued even without a usable SMTP account: the outbox job records the failure, nobody is waiting for an answer.
    await enqueueEmail(tx, { to: user.email, ...message }, { organizationId: null, requireAccount: false });
  });
}

/** The password-reset task for the job runner. */
export const passwordResetTasks = (deps: { db: Db; appUrl: string }): TaskList => ({
  [JOBS.passwordReset.task]: (payload) => processPasswordResetRequest(deps.db, deps.appUrl, rowIdOf(payload)),
});

const resetLinkInvalid = () => notFound('This password reset link is invalid, has expired or was already used.', 'reset_link_invalid');

/**
 * Sets a new password through a reset link; the link is consumed, and every other link and session ends. The audit
 * row's actor is the link's user.
 */
export async function confirmPasswordReset(
  deps: Deps,
  link: { uidb64: string; token: string },
  newPassword: string,
  audit: Pick<AuditContext, 'ip'>,
): Promise<void> {
  const userId = decodeUid(link.uidb64);
  const row = userId
    ? await deps.db.passwordResetToken.findUnique({
        where: { tokenHash: sha256Hex(link.token) },
        include: { user: { select: { username: true, email: true } } },
      })
    : null;
  if (!row || row.userId !== userId || row.usedAt || row.expiresAt <= new Date()) throw resetLinkInvalid();
  const passwordHash = await hashNewPassword(newPassword, row.user);
  await deps.db.$transaction(async (tx) => {
    // Claimed again inside the transaction: of two concurrent uses of one link, only one wins.
    const claimed = await tx.passwordResetToken.updateMany({
      where: { id: row.id, usedAt: null, expiresAt: { gt: new Date() } },
      data: { usedAt: new Date() },
    });
    if (claimed.count === 0) throw resetLinkInvalid();
    await storePassword(tx, deps.tokens, row.userId, passwordHash);
    await recordAudit(tx, {
      actor: { type: 'user', userId: row.userId, username: row.user.username },
      ip: audit.ip,
      action: 'account.password_reset',
      target: { type: 'user', id: row.userId },
    });
  });
}
