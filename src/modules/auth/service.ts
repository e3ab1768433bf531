// Signing in with a username and password: checks the credentials and opens a session (a refresh-token family).
import type pg from 'pg';
import { findSignInUser } from '../../db/token-store.js';
import { ProblemError, unauthorized } from '../../lib/problem.js';
import { burnPasswordCheck, verifyPassword } from '../../lib/passwords.js';
import type { SessionClient, TokenPair, TokenService } from './token-service.js';

/** Opens the short-lived challenge a sign-in with two-factor on answers instead of tokens. */
type ChallengeIssuer = (userId: string) => Promise<string>;

const invalidCredentials = () => unauthorized('invalid_credentials', 'No active account found with the given credentials.');

/**
 * Exchanges credentials for a token pair and records the login time. An unknown username and a wrong password get
 * the same answer after the same argon2 work, so the endpoint does not reveal which usernames exist; so does a
 * deactivated account.
 */
export async function signIn(
  deps: { pool: pg.Pool; tokens: TokenService; challenge: ChallengeIssuer },
  credentials: { username: string; password: string },
  client: SessionClient,
): Promise<TokenPair> {
  const { pool, tokens } = deps;
  const user = await findSignInUser(pool, credentials.username);
  if (!user) {
    await burnPasswordCheck(credentials.password);
    throw invalidCredentials();
  }
  // A deactivated account gets the wrong password's answer, after the same argon2 work.
  if (!(await verifyPassword(user.passwordHash, credentials.password)) || !user.isActive) throw invalidCredentials();
  if (user.twoFactorEnabled) {
    throw new ProblemError({
      status: 401,
      code: 'two_factor_required',
      title: 'Unauthorized',
      detail: 'Two-factor sign-in is on: send the challenge with a code from your authenticator to POST /api/v1/auth/token/two-factor/.',
      headers: { 'www-authenticate': 'Bearer' },
      extensions: { challenge: await deps.challenge(user.id) },
    });
  }
  return tokens.openSession(user, client);
}

/** The token endpoints: sign in, refresh with rotation, sign out. */
export function createAuthService(deps: { pool: pg.Pool; tokens: TokenService; challenge: ChallengeIssuer }) {
  const { tokens } = deps;
  return {
    signIn: (credentials: { username: string; password: string }, client: SessionClient) => signIn(deps, credentials, client),
    refresh: (refresh: string, client: SessionClient) => tokens.rotate(refresh, client),
    logout: (refresh: string, userId: string) => tokens.revoke(refresh, userId),
  };
}
