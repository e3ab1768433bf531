// Emailed invitation links (workspace and installation-admin): their tokens, their status derived when read, their one 404.
import { transactionView, type AnyTx } from '../../db/tenant-scope.js';
import { randomToken, sha256Hex } from '../../lib/crypto.js';
import { notFound } from '../../lib/problem.js';

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export type InvitationStatus = 'pending' | 'accepted' | 'expired' | 'revoked';

interface LinkTimestamps {
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

/** A fresh single-use link token, the hash the database keeps instead of it, and its seven-day expiry. */
export function newLinkToken(now = Date.now()): { token: string; tokenHash: string; expiresAt: Date } {
  const token = randomToken();
  return { token, tokenHash: sha256Hex(token), expiresAt: new Date(now + INVITATION_TTL_MS) };
}

/** No background job expires links: their status follows from the timestamps at the moment they are read. */
export function linkStatus(link: LinkTimestamps, now: Date): InvitationStatus {
  if (link.revokedAt) return 'revoked';
  if (link.acceptedAt) return 'accepted';
  return link.expiresAt <= now ? 'expired' : 'pending';
}

/** Prisma `where` fragment of the links still usable at `now` (the `pending` status as a query). */
export const usableAt = (now: Date) => ({ acceptedAt: null, revokedAt: null, expiresAt: { gt: now } });

/** Unknown, replayed, expired and revoked links all get the same answer. */
export const invalidLink = () => notFound('This invitation link is invalid, has expired or has already been used.', 'invitation_invalid');

/**
 * Serializes, until the transaction ends, the writes that check-then-create invitations for one address in one
 * scope, so two simultaneous requests cannot both leave a pending invitation behind.
 */
export async function lockInvitee(tx: AnyTx, scope: string, email: string): Promise<void> {
  await transactionView(tx).$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`invitation:${scope}:${email}`}, 0))`;
}
