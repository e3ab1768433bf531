// Two-factor sign-in with TOTP: enrolment, confirmation with recovery codes, disabling, and the sign-in challenge.
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { decryptSecret, encryptSecret, randomToken, sha256Hex } from '../../lib/crypto.js';
import { verifyPassword } from '../../lib/passwords.js';
import { badRequest, conflict, ProblemError, serviceUnavailable, unauthorized } from '../../lib/problem.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import type { SessionClient, TokenPair, TokenService } from '../auth/token-service.js';
import { hashRecoveryCode, matchingStep, newRecoveryCodes, newTotpSecret } from './totp.js';
import { endOtherSessions } from '../sessions/service.js';

type Tx = Prisma.TransactionClient;

const CHALLENGE_TTL_MS = 5 * 60_000;
/** Wrong codes one challenge takes before it is spent (sign in again for a new one). */
export const CHALLENGE_MAX_FAILURES = 5;
/** Wrong codes one account takes per window, over every challenge, confirmation and disabling together. */
export const USER_MAX_FAILURES = 10;
const USER_FAILURE_WINDOW_SECONDS = 15 * 60;

const codeInvalid = () => badRequest('two_factor_code_invalid', 'The code is wrong, expired or was already used.');
const signInCodeInvalid = () => unauthorized('two_factor_code_invalid', 'The code is wrong, expired or was already used.');
const challengeInvalid = () =>
  unauthorized('two_factor_challenge_invalid', 'The two-factor challenge is unknown, used, expired or out of attempts: sign in again.');
const keyMissing = () =>
  badRequest('encryption_key_missing', 'Two-factor sign-in cannot be turned on: the server has no EMAIL_ENCRYPTION_KEY configured.');

/** The user row as the code checks need it, read under a row lock so that two checks of one code serialize. */
interface TwoFactorUser {
  id: string;
  username: string;
  passwordHash: string;
  isActive: boolean;
  tokenVersion: number;
  secret: string | null;
  enabled: boolean;
  lastStep: number | null;
  retryAfter: number | null;
}

async function lockUser(tx: Tx, userId: string): Promise<TwoFactorUser | undefined> {
  const rows = await tx.$queryRaw<TwoFactorUser[]>`
    SELECT id, username, password_hash AS "passwordHash", is_active AS "isActive", token_version AS "tokenVersion",
           two_factor_secret AS secret, two_factor_enabled_at IS NOT NULL AS enabled, two_factor_last_step AS "lastStep",
           CASE WHEN two_factor_failures >= ${USER_MAX_FAILURES}
                 AND two_factor_failures_since > now() - make_interval(secs => ${USER_FAILURE_WINDOW_SECONDS})
                THEN ceil(extract(epoch FROM two_factor_failures_since
                                  + make_interval(secs => ${USER_FAILURE_WINDOW_SECONDS}) - now()))::int END AS "retryAfter"
    FROM users WHERE id = ${userId}::uuid FOR NO KEY UPDATE`;
  return rows[0];
}

/** Counts a wrong code against the user's window (a new window starts when the last one is over). */
async function countFailure(tx: Tx, userId: string): Promise<void> {
  await tx.$executeRaw`
    UPDATE users SET
      two_factor_failures = CASE WHEN two_factor_failures_since > now() - make_interval(secs => ${USER_FAILURE_WINDOW_SECONDS})
                                 THEN two_factor_failures + 1 ELSE 1 END,
      two_factor_failures_since = CASE WHEN two_factor_failures_since > now() - make_interval(secs => ${USER_FAILURE_WINDOW_SECONDS})
                                       THEN two_factor_failures_since ELSE now() END
    WHERE id = ${userId}::uuid`;
}

function assertNotLockedOut(user: TwoFactorUser): void {
  if (user.retryAfter === null) return;
  throw new ProblemError({
    status: 429,
    code: 'two_factor_attempts_exceeded',
    title: 'Too many requests',
    detail: 'Too many wrong two-factor codes for this account; try again later.',
    headers: { 'retry-after': String(Math.max(1, user.retryAfter)) },
  });
}

export function createTwoFactorService(deps: { db: Db; encryptionKey: Buffer | null; tokens: TokenService }) {
  const { db, encryptionKey, tokens } = deps;

  /** The secret in force (or pending); 503 when the server can no longer decrypt it (recovery codes still work). */
  function readSecret(user: TwoFactorUser): string {
    if (!user.secret) throw badRequest('two_factor_not_enabled', 'Two-factor sign-in is not on for this account.');
    if (!encryptionKey) throw serviceUnavailable('two_factor_unavailable', 'TOTP secrets cannot be read: use a recovery code.');
    try {
      return decryptSecret(user.secret, encryptionKey);
    } catch {
      throw serviceUnavailable('two_factor_unavailable', 'TOTP secrets cannot be read: use a recovery code.');
    }
  }

  /**
   * Checks a TOTP code of a locked user: accepted once, in a step later than the last accepted one (so a code
   * cannot be replayed inside its window). False counts against the user's limit.
   */
  async function acceptCode(tx: Tx, user: TwoFactorUser, code: string): Promise<boolean> {
    const step = matchingStep(readSecret(user), code);
    if (step === null || (user.lastStep !== null && step <= user.lastStep)) {
      await countFailure(tx, user.id);
      return false;
    }
    await tx.user.update({ where: { id: user.id }, data: { twoFactorLastStep: step } });
    return true;
  }

  /** Runs `check` on the locked user; a failed check commits its counted failure before the 400 is thrown. */
  async function withCheckedUser<T>(
    userId: string,
    check: (tx: Tx, user: TwoFactorUser) => Promise<T | undefined>,
    refusal: () => ProblemError = codeInvalid,
  ): Promise<T> {
    const result = await db.$transaction(async (tx) => {
      const user = await lockUser(tx, userId);
      if (!user) throw unauthorized();
      assertNotLockedOut(user);
      return check(tx, user);
    });
    if (result === undefined) throw refusal();
    return result;
  }

  /** Starts (or restarts) enrolment: a new pending secret, shown once. */
  async function enrol(user: CurrentUser): Promise<{ secret: string; otpauth_uri: string }> {
    if (!encryptionKey) throw keyMissing();
    const { secret, uri } = newTotpSecret(user.username);
    const updated = await db.user.updateMany({
      where: { id: user.id, twoFactorEnabledAt: null },
      data: { twoFactorSecret: encryptSecret(secret, encryptionKey), twoFactorLastStep: null },
    });
    if (updated.count === 0) throw conflict('two_factor_already_enabled', 'Two-factor sign-in is already on; disable it first.');
    return { secret, otpauth_uri: uri };
  }

  /**
   * Turns two-factor on with a first code: stores ten hashed recovery codes and ends the user's other sessions
   * (they were opened with the password alone); the calling session stays.
   */
  async function confirm(user: CurrentUser, sessionId: string, code: string, audit: AuditContext): Promise<{ recovery_codes: string[] }> {
    const recoveryCodes = newRecoveryCodes();
    return withCheckedUser(user.id, async (tx, row) => {
      if (row.enabled) throw conflict('two_factor_already_enabled', 'Two-factor sign-in is already on.');
      if (!row.secret) throw conflict('two_factor_not_pending', 'No enrolment is waiting for confirmation: start one first.');
      if (!(await acceptCode(tx, row, code))) return undefined;
      await tx.user.update({ where: { id: user.id }, data: { twoFactorEnabledAt: new Date(), twoFactorFailures: 0 } });
      await tx.twoFactorRecoveryCode.deleteMany({ where: { userId: user.id } });
      await tx.twoFactorRecoveryCode.createMany({
        data: recoveryCodes.map((recovery) => ({ userId: user.id, codeHash: hashRecoveryCode(recovery) })),
      });
      await endOtherSessions(tx, user.id, sessionId, audit);
      await recordAudit(tx, { ...audit, action: 'account.two_factor_enrolled', target: { type: 'user', id: user.id } });
      return { recovery_codes: recoveryCodes };
    });
  }

  /** Turns two-factor off with the password and a current code; sessions stay as they are. */
  async function disable(user: CurrentUser, input: { password: string; code: string }, audit: AuditContext): Promise<void> {
    const passwordHash = await db.user.findUnique({ where: { id: user.id }, select: { passwordHash: true } });
    if (!passwordHash) throw unauthorized();
    // The argon2 check runs outside the row lock: it is slow and needs no consistency with the code check.
    if (!(await verifyPassword(passwordHash.passwordHash, input.password))) {
      throw badRequest('wrong_password', 'The current password is incorrect.', { password: ['The current password is incorrect.'] });
    }
    await withCheckedUser(user.id, async (tx, row) => {
      if (!row.enabled) throw badRequest('two_factor_not_enabled', 'Two-factor sign-in is not on for this account.');
      if (!(await acceptCode(tx, row, input.code))) return undefined;
      await tx.user.update({
        where: { id: user.id },
        data: { twoFactorSecret: null, twoFactorEnabledAt: null, twoFactorLastStep: null, twoFactorFailures: 0 },
      });
      await tx.twoFactorRecoveryCode.deleteMany({ where: { userId: user.id } });
      await tx.twoFactorChallenge.deleteMany({ where: { userId: user.id } });
      await recordAudit(tx, { ...audit, action: 'account.two_factor_disabled', target: { type: 'user', id: user.id } });
      return true;
    });
  }

  /**
   * After a right password: a short-lived challenge instead of tokens (only its hash is stored). The user's expired
   * challenges go at the same time, so the table holds at most a few minutes of sign-ins per user.
   */
  async function challenge(userId: string): Promise<string> {
    const token = randomToken();
    const now = new Date();
    await db.$transaction([
      db.twoFactorChallenge.deleteMany({ where: { userId, expiresAt: { lt: now } } }),
      db.twoFactorChallenge.create({
        data: { userId, tokenHash: sha256Hex(token), expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS) },
      }),
    ]);
    return token;
  }

  /**
   * Completes a sign-in: the challenge and a code (or a recovery code, used up) open a session. Each wrong code
   * counts against the challenge and the user; a challenge is spent by success or by its fifth wrong code.
   */
  async function signIn(input: { challenge: string; code?: string; recovery_code?: string }, client: SessionClient): Promise<TokenPair> {
    const found = await db.twoFactorChallenge.findUnique({ where: { tokenHash: sha256Hex(input.challenge) } });
    if (!found) throw challengeInvalid();
    const user = await withCheckedUser(
      found.userId,
      async (tx, row) => {
        // The challenge is re-read under the user's lock: two answers to one challenge serialize here.
        const live = await tx.twoFactorChallenge.findFirst({
          where: { id: found.id, usedAt: null, expiresAt: { gt: new Date() }, failures: { lt: CHALLENGE_MAX_FAILURES } },
        });
        if (!live || !row.isActive || !row.enabled) throw challengeInvalid();
        const accepted =
          input.recovery_code !== undefined
            ? await spendRecoveryCode(tx, row, input.recovery_code, client)
            : await acceptCode(tx, row, input.code ?? '');
        if (!accepted) {
          await tx.twoFactorChallenge.update({ where: { id: live.id }, data: { failures: { increment: 1 } } });
          return undefined;
        }
        await tx.twoFactorChallenge.update({ where: { id: live.id }, data: { usedAt: new Date() } });
        await tx.user.update({ where: { id: row.id }, data: { twoFactorFailures: 0 } });
        return row;
      },
      signInCodeInvalid,
    );
    return tokens.openSession(user, client);
  }

  /** Marks one unused recovery code used (and audits it); false counts against the user's limit. */
  async function spendRecoveryCode(tx: Tx, user: TwoFactorUser, code: string, client: SessionClient): Promise<boolean> {
    const used = await tx.twoFactorRecoveryCode.updateMany({
      where: { userId: user.id, codeHash: hashRecoveryCode(code), usedAt: null },
      data: { usedAt: new Date() },
    });
    if (used.count === 0) {
      await countFailure(tx, user.id);
      return false;
    }
    const actor = { type: 'user' as const, userId: user.id, username: user.username };
    await recordAudit(tx, { actor, ip: client.ip, action: 'account.recovery_code_used', target: { type: 'user', id: user.id } });
    return true;
  }

  return { enrol, confirm, disable, challenge, signIn };
}

export type TwoFactorService = ReturnType<typeof createTwoFactorService>;
