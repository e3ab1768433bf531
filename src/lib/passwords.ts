// Password hashing (argon2id) and the password rules every endpoint that sets a password applies.
import argon2 from 'argon2';
import { serviceUnavailable } from './problem.js';
import { Slots } from './slots.js';

export const MAX_PASSWORD_BYTES = 1024;

/**
 * OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane): the library default's 64 MiB per hash would dominate the
 * server's memory under concurrent sign-ins. Parameters travel inside each hash, so older hashes still verify.
 */
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

const hashingBusy = () =>
  serviceUnavailable('server_busy', 'Too many password checks are in progress; try again in a moment.', { 'retry-after': '1' });

/**
 * Bounds concurrent argon2 work: each hash holds a libuv thread (the pool DNS lookups and file I/O share) and 19 MiB
 * for its whole duration. Up to `concurrency` hashes run, up to `queue` more wait; beyond that the caller gets 503.
 */
const hashing = new Slots(2, 32, hashingBusy);

/** Sets the bounds once at boot (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE). */
export function configurePasswordHashing(limits: { concurrency: number; queue: number }): void {
  hashing.concurrency = limits.concurrency;
  hashing.queue = limits.queue;
}

export const hashPassword = (password: string): Promise<string> => hashing.run(() => argon2.hash(password, HASH_OPTIONS));

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) return false;
  return hashing.run(async () => {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  });
}

/** A hash of a random password, verified against when a user is unknown so both paths take similar time. */
let dummyHash: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummyHash ??= hashPassword('timing-equaliser-password');
  await verifyPassword(await dummyHash, password);
}

/** Returns the rule violations of a new password (empty when acceptable). */
export function passwordProblems(password: string, context: { username?: string | null; email?: string | null }): string[] {
  const problems: string[] = [];
  if ([...password].length < 8) problems.push('This password is too short. It must contain at least 8 characters.');
  if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES)
    problems.push(`This password is too long. It must be at most ${MAX_PASSWORD_BYTES} bytes.`);
  if (/^[0-9]+$/.test(password)) problems.push('This password is entirely numeric.');
  const lowered = password.toLowerCase();
  const similar = [context.username, context.email, context.email?.split('@')[0]]
    .filter((v): v is string => typeof v === 'string' && v.length > 0)
    .some((v) => v.toLowerCase() === lowered);
  if (similar) problems.push('The password is too similar to the username or email.');
  return problems;
}
