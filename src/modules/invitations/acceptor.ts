// Who accepts an invitation link: the signed-in user holding the invited address, or a new account registered from the body.
import type { Prisma, User } from '../../generated/prisma/client.js';
import type { Db } from '../../db/client.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { ProblemError, conflict, forbidden, unauthorized, validationFailed, type FieldErrors } from '../../lib/problem.js';
import { hashPassword, passwordProblems } from '../../lib/passwords.js';
import { isUniqueViolation } from '../../lib/prisma-errors.js';
import { profileChanges } from '../account/profile-service.js';
import type { AcceptBody } from './schemas.js';

interface NewAccount {
  username: string;
  email: string;
  passwordHash: string;
  profile: ReturnType<typeof profileChanges>;
}

export type Acceptor = { kind: 'existing'; userId: string } | { kind: 'new'; account: NewAccount };

const accountExists = () =>
  conflict('account_exists', 'An account with the invited email address exists: sign in and accept the invitation with an empty body.');

const usernameTaken = () =>
  conflict('username_taken', 'A user with that username already exists.', { username: ['A user with that username already exists.'] });

/**
 * Checks a registration body completely (every invalid field at once) and hashes its password. With a privacy policy
 * (`privacyPolicyVersion`), the body must accept it; the account then records that version as accepted.
 */
async function registration(db: Db, body: AcceptBody, email: string, privacyPolicyVersion: string | null): Promise<NewAccount> {
  const errors: FieldErrors = {};
  let profile: NewAccount['profile'] = {};
  // The profile PATCH's rules and messages, its errors merged with the account fields' so all come in one answer.
  try {
    profile = profileChanges(body, new Date().toISOString().slice(0, 10));
  } catch (error) {
    if (!(error instanceof ProblemError) || !error.errors) throw error;
    Object.assign(errors, error.errors);
  }
  const { username, password } = body;
  if (username === undefined) errors.username = ['This field is required.'];
  if (password === undefined) errors.password = ['This field is required.'];
  else {
    const problems = passwordProblems(password, { username, email });
    if (problems.length > 0) errors.password = problems;
  }
  if (!errors.display_name && !body.display_name?.trim()) errors.display_name = ['This field is required.'];
  if (privacyPolicyVersion !== null) {
    if (body.privacy_policy_accepted !== true) errors.privacy_policy_accepted = ['You must accept the privacy policy.'];
    else profile = { ...profile, privacyPolicyVersion, privacyPolicyAcceptedAt: new Date() };
  }
  if (username === undefined || password === undefined || Object.keys(errors).length > 0) throw validationFailed(errors);
  // Sign-in names differing only in case would be indistinguishable to people.
  if (await db.user.findFirst({ where: { username: { equals: username, mode: 'insensitive' } }, select: { id: true } })) {
    throw usernameTaken();
  }
  return { username, email, passwordHash: await hashPassword(password), profile };
}

/**
 * Decides who accepts, before anything is written: a signed-in user must send no body and hold the invited address
 * (403 otherwise, the link stays usable); an anonymous caller registers, unless the address already has an account
 * (409: sign in instead).
 */
export async function identifyAcceptor(
  db: Db,
  user: CurrentUser | null,
  body: AcceptBody,
  invitedEmail: string,
  privacyPolicyVersion: string | null,
): Promise<Acceptor> {
  if (user) {
    const fields = Object.keys(body);
    if (fields.length > 0) {
      throw validationFailed(
        Object.fromEntries(fields.map((field) => [field, ['Not accepted from a signed-in user.']])),
        'A signed-in user accepts an invitation with an empty body.',
      );
    }
    if (user.email.toLowerCase() !== invitedEmail) {
      throw forbidden('invitation_email_mismatch', 'This invitation was sent to another email address: sign in with the invited account.');
    }
    return { kind: 'existing', userId: user.id };
  }
  if (await db.user.findUnique({ where: { email: invitedEmail }, select: { id: true } })) throw accountExists();
  return { kind: 'new', account: await registration(db, body, invitedEmail, privacyPolicyVersion) };
}

/**
 * Inside the accept transaction: the accepting user's id, creating the new account (profile onboarded) first when
 * there is one. `created` is that new user, whose tokens the response carries.
 */
export async function acceptingUser(tx: Prisma.TransactionClient, acceptor: Acceptor): Promise<{ id: string; created: User | null }> {
  if (acceptor.kind === 'existing') {
    // Locked like the membership's foreign key would, but checked: an account deleted while this request was in
    // flight answers 401 instead of failing the insert.
    const rows = await tx.$queryRaw<unknown[]>`SELECT 1 FROM users WHERE id = ${acceptor.userId}::uuid FOR KEY SHARE`;
    if (rows.length === 0) throw unauthorized();
    return { id: acceptor.userId, created: null };
  }
  const { account } = acceptor;
  try {
    const created = await tx.user.create({
      data: {
        username: account.username,
        email: account.email,
        passwordHash: account.passwordHash,
        profile: { create: { ...account.profile, onboardingCompletedAt: new Date() } },
      },
    });
    return { id: created.id, created };
  } catch (error) {
    // Only a concurrent registration gets here: the checks before the transaction saw both values free.
    if (isUniqueViolation(error, 'users', 'username')) throw usernameTaken();
    if (isUniqueViolation(error, 'users', 'email')) throw accountExists();
    throw error;
  }
}
