// Common test scenery: a completed first-run setup, extra users and memberships, signing in.
import type { App } from '../../src/app.js';
import type { MembershipRole } from '../../src/generated/prisma/enums.js';
import { hashPassword } from '../../src/lib/passwords.js';
import type { Mailbox } from './mailbox.js';
import { TEST_SETUP_TOKEN, bearer, json } from './app.js';

export const ADMIN = { username: 'admin', email: 'admin@example.test', password: 'correct-horse-battery' };

export interface SignedIn {
  id: string;
  username: string;
  email: string;
  password: string;
  access: string;
  refresh: string;
  headers: { authorization: string };
}

export async function signIn(app: App, username: string, password: string): Promise<SignedIn> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password } });
  if (res.statusCode !== 200) throw new Error(`sign-in of ${username} failed: ${res.statusCode} ${res.body}`);
  const tokens = json<{ access: string; refresh: string }>(res);
  const me = json<{ id: string; email: string }>(
    await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(tokens.access) }),
  );
  return { id: me.id, username, email: me.email, password, ...tokens, headers: bearer(tokens.access) };
}

/**
 * Completes first-run setup through the API (with the mailbox as installation fallback SMTP when given) and signs
 * the installation admin in. Returns the admin and the first workspace's id.
 */
export async function setupInstallation(app: App, mailbox?: Mailbox): Promise<{ admin: SignedIn; organizationId: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/setup/',
    payload: {
      setup_token: TEST_SETUP_TOKEN,
      ...ADMIN,
      organization_name: 'Acme',
      organization_slug: 'acme',
      ...(mailbox ? { smtp: mailbox.smtpConfig() } : {}),
    },
  });
  if (res.statusCode !== 201) throw new Error(`setup failed: ${res.statusCode} ${res.body}`);
  const admin = await signIn(app, ADMIN.username, ADMIN.password);
  const org = await app.db.organization.findFirstOrThrow({ where: { slug: 'acme' } });
  return { admin, organizationId: org.id };
}

let counter = 0;

/**
 * Creates a user straight in the database (scenery for tests whose subject is not registration) and signs in.
 * With `membership`, also makes the user a member of that organization with that role.
 */
export async function createUser(
  app: App,
  options: { username?: string; email?: string; password?: string; membership?: { organizationId: string; role: MembershipRole } } = {},
): Promise<SignedIn> {
  counter += 1;
  const username = options.username ?? `user${counter}-${Math.random().toString(36).slice(2, 8)}`;
  const email = (options.email ?? `${username}@example.test`).toLowerCase();
  const password = options.password ?? 'a-long-enough-password';
  const user = await app.db.user.create({
    data: { username, email, passwordHash: await hashPassword(password), profile: { create: { displayName: username } } },
  });
  if (options.membership) {
    await app.db.membership.create({
      data: { organizationId: options.membership.organizationId, userId: user.id, role: options.membership.role },
    });
  }
  return signIn(app, username, password);
}

/** Asks the API to delete the user's own account, with their password and the confirmation unless `payload` says otherwise. */
export const deleteAccount = (app: App, user: SignedIn, payload: object = { password: user.password, confirmation: 'DELETE' }) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/me/delete/', headers: user.headers, payload });
