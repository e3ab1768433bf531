// TOTP (RFC 6238: SHA-1, 30 s steps, 6 digits) through the otpauth library, and the one-time recovery codes.
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { sha256Hex } from '../../lib/crypto.js';

const ISSUER = 'CRM';
const PERIOD_SECONDS = 30;
/** Codes of the step before and after the current one are accepted too (clock skew). */
const SKEW_STEPS = 1;
export const RECOVERY_CODE_COUNT = 10;

const totpOf = (secret: string, label = '') =>
  new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: PERIOD_SECONDS, secret: Secret.fromBase32(secret) });

/** A fresh 160-bit secret (base32) and its otpauth:// URI for authenticator apps. */
export function newTotpSecret(accountLabel: string): { secret: string; uri: string } {
  const secret = new Secret({ size: 20 }).base32;
  return { secret, uri: totpOf(secret, accountLabel).toString() };
}

/** The time step `code` belongs to (within the skew of `now`), or null when it matches none. */
export function matchingStep(secret: string, code: string, now = Date.now()): number | null {
  const totp = totpOf(secret);
  const delta = totp.validate({ token: code, timestamp: now, window: SKEW_STEPS });
  return delta === null ? null : totp.counter({ timestamp: now }) + delta;
}

/** Recovery codes are compared case- and dash-insensitively: what the user may type from a printout. */
export const normalizeRecoveryCode = (code: string): string => code.toLowerCase().replace(/[\s-]/g, '');
export const hashRecoveryCode = (code: string): string => sha256Hex(normalizeRecoveryCode(code));

// 32 symbols, so `byte & 31` picks each one equally often.
const RECOVERY_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** Ten fresh codes like `k7m2q-x9pta` (50 random bits each). */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = [...randomBytes(10)].map((byte) => RECOVERY_ALPHABET[byte & 31]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}
