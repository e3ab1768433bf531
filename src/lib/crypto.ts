// Secret handling: random URL-safe tokens stored only as SHA-256, AES-256-GCM for secrets we must read back.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh URL-safe token of 32 random bytes (43 characters). */
export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Hex SHA-256 of a token: what the database keeps instead of the token. */
export const sha256Hex = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/** Constant-time string comparison (hashing first so lengths never leak through timing). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts with AES-256-GCM; returns base64 of iv | tag | ciphertext. */
export function encryptSecret(plaintext: string, key: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** Reverses encryptSecret; throws when the key is wrong or the value was tampered with. */
export function decryptSecret(encoded: string, key: Buffer): string {
  const raw = Buffer.from(encoded, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}
