// Signing in with a username and password: checks the credentials and opens a session (a refresh-token family).
import type pg from 'pg';
import { findSignInUser } from '../../db/token-store.js';
import { unauthorized } from '../../lib/problem.js';
import { burnPasswordCheck, verifyPassword } from '../../lib/passwords.js';
import type { TokenPair, TokenService } from './token-service.js';

const invalidCredentials = () => unauthorized('invalid_credentials', 'No active account found with the given credentials.');

/**
 * Exchanges credentials for a token pair and records the login time. An unknown username and a wrong password get
 * the same answer after the same argon2 work, so the endpoint does not reveal which usernames exist; so does a
 * deactivated account.
 */
export async function signIn(
  deps: { pool: pg.Pool; tokens: TokenService },
  credentials: { username: string; password: string },
): Promise<TokenPair> {
  const { pool, tokens } = deps;
  const user = await findSignInUser(pool, credentials.username);
  if (!user) {
    await burnPasswordCheck(credentials.password);
    throw invalidCredentials();
  }
  // A deactivated account gets the wrong password's answer, after the same argon2 work.
  if (!(await verifyPassword(user.passwordHash, credentials.password)) || !user.isActive) throw invalidCredentials();
  return tokens.openSession(user);
}

/** The token endpoints: sign in, refresh with rotation, sign out. */
export function createAuthService(deps: { pool: pg.Pool; tokens: TokenService }) {
  const { tokens } = deps;
  return {
    signIn: (credentials: { username: string; password: string }) => signIn(deps, credentials),
    refresh: (refresh: string) => tokens.rotate(refresh),
    logout: (refresh: string, userId: string) => tokens.revoke(refresh, userId),
  };
}
