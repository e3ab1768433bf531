// Invitation links: preview, acceptance by new and existing users, single use under concurrency, expiry, revocation,
// and the Owner handoff that activates a provisioned workspace.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { issueInvitation } from '../../src/modules/invitations/issue.js';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { emailedLink } from './links.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_INVITATIONS_PER_DAY: '1000', RATE_LIMIT_PROVISIONING_PER_DAY: '1000' });
const mailbox = await startMailbox(t);
const { admin: owner, organizationId: orgA } = await setupInstallation(app, mailbox);
const bob = await createUser(app, { username: 'bob' });
const carol = await createUser(app, { username: 'carol' });
const orgB = (
  await app.db.organization.create({
    data: { name: 'Beta', slug: 'beta', memberships: { create: { userId: owner.id, role: 'owner' } } },
  })
).id;
const secrets: string[] = [];

const PASSWORD = 'a-fine-passphrase';
const registration = (username: string) => ({ username, password: PASSWORD, display_name: `${username} display` });
const acceptUrl = (token: string) => `/api/v1/invitations/${token}/accept/`;
const accept = (token: string, options: { headers?: Record<string, string>; payload?: Record<string, unknown> } = {}) =>
  app.inject({ method: 'POST', url: acceptUrl(token), ...options });
const preview = (token: string) => app.inject({ method: 'GET', url: `/api/v1/invitations/${token}/` });
const invitationsUrl = (org: string) => `/api/v1/organizations/${org}/invitations/`;

/** Invites `email` (as the owner) and returns the invitation id and the emailed token. */
async function inviteTo(email: string, role = 'member', org = orgA) {
  const { result, token } = await emailedLink(mailbox, email, '/invite/', () =>
    app.inject({ method: 'POST', url: invitationsUrl(org), headers: owner.headers, payload: { email, role } }),
  );
  if (result.statusCode !== 201) throw new Error(`invitation failed: ${result.statusCode} ${result.body}`);
  secrets.push(token);
  return { id: json<{ id: string }>(result).id, token };
}

/** Provisions a workspace for `ownerEmail` through the API and returns its id and the Owner link's token. */
async function provision(name: string, ownerEmail: string) {
  const { result, token } = await emailedLink(mailbox, ownerEmail, '/invite/', () =>
    app.inject({ method: 'POST', url: '/api/v1/organizations/', headers: owner.headers, payload: { name, owner_email: ownerEmail } }),
  );
  if (result.statusCode !== 201) throw new Error(`provisioning failed: ${result.statusCode} ${result.body}`);
  secrets.push(token);
  return { organizationId: json<{ id: string }>(result).id, token };
}

const expectInvalid = (t: Test, res: LightMyRequestResponse, label: string) => {
  t.equal(res.statusCode, 404, `${label}: 404`);
  t.match(String(res.headers['content-type']), /^application\/problem\+json/);
  t.equal(json(res).code, 'invitation_invalid', `${label}: invitation_invalid`);
};

t.test('preview shows the workspace, role and address of a pending link, nothing for unknown links', async (t) => {
  const { token } = await inviteTo('Preview@Example.test', 'viewer');
  const res = await preview(token);
  t.equal(res.statusCode, 200);
  const body = json(res);
  t.same(Object.keys(body).sort(), ['email', 'expires_at', 'organization_name', 'role']);
  t.match(body, { email: 'preview@example.test', organization_name: 'Acme', role: 'viewer' });
  t.ok(Date.parse(body.expires_at) > Date.now() + 6 * 24 * 3600 * 1000);
  expectInvalid(t, await preview('A'.repeat(43)), 'unknown token');
  expectInvalid(t, await preview('x'), 'short token');
  expectInvalid(t, await accept('A'.repeat(43), { payload: registration('ghost') }), 'accepting an unknown token');
});

t.test('a new user registers by accepting: tokens, the invited address, a membership in that workspace only', async (t) => {
  const { id, token } = await inviteTo('newbie@example.test');
  const res = await accept(token, {
    payload: {
      ...registration('newbie'),
      first_name: 'New',
      last_name: 'Bee',
      date_of_birth: '1990-05-17',
      timezone: 'Europe/Berlin',
      locale: 'en-us',
    },
  });
  t.equal(res.statusCode, 201);
  const body = json(res);
  secrets.push(body.tokens.access, body.tokens.refresh);
  t.same(Object.keys(body).sort(), ['membership_created', 'organization_id', 'role', 'tokens']);
  t.match(body, { organization_id: orgA, role: 'member', membership_created: true });
  t.same(Object.keys(body.tokens).sort(), ['access', 'refresh']);

  const user = await app.db.user.findUniqueOrThrow({ where: { username: 'newbie' }, include: { profile: true, memberships: true } });
  t.equal(user.email, 'newbie@example.test', 'email taken from the invitation');
  t.equal(user.isSuperuser, false);
  t.match(user.profile, { displayName: 'newbie display', firstName: 'New', lastName: 'Bee', timezone: 'Europe/Berlin', locale: 'en-US' });
  t.equal(user.profile?.dateOfBirth?.toISOString().slice(0, 10), '1990-05-17');
  t.ok(user.profile?.onboardingCompletedAt, 'onboarding completed');
  t.same(
    user.memberships.map((m) => [m.organizationId, m.role]),
    [[orgA, 'member']],
    'that workspace only',
  );

  const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(body.tokens.access) });
  t.equal(me.statusCode, 200);
  t.same(
    json(me).organizations.map((o: { id: string; current_user_role: string }) => [o.id, o.current_user_role]),
    [[orgA, 'member']],
  );
  const signIn = await app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username: 'newbie', password: PASSWORD } });
  t.equal(signIn.statusCode, 200, 'the chosen password signs in');
  secrets.push(json(signIn).access, json(signIn).refresh);

  const row = await app.db.invitation.findUniqueOrThrow({ where: { id } });
  t.ok(row.acceptedAt, 'consumed');
  expectInvalid(t, await accept(token, { payload: registration('newbie2') }), 'replay by a stranger');
  expectInvalid(t, await accept(token, { headers: bearer(body.tokens.access) }), 'replay by the same user');
  expectInvalid(t, await preview(token), 'preview after acceptance');
  t.equal(await app.db.user.count({ where: { username: 'newbie2' } }), 0);
});

t.test('registration input is checked completely, and nothing is written when it is wrong', async (t) => {
  const { token } = await inviteTo('checks@example.test');
  await rejectsBadBodies(t, app, { method: 'POST', url: acceptUrl(token) }, registration('checker'), [
    'username',
    'password',
    'display_name',
    'first_name',
    'last_name',
    'date_of_birth',
    'timezone',
    'locale',
  ]);
  const cases: Array<[string, Record<string, unknown> | undefined, string[]]> = [
    ['no body', undefined, ['username', 'password', 'display_name']],
    ['empty body', {}, ['username', 'password', 'display_name']],
    ['short password', { ...registration('checker'), password: 'short' }, ['password']],
    ['numeric password', { ...registration('checker'), password: '1234567890' }, ['password']],
    ['password equal to the username', { ...registration('checker'), password: 'checker-name', username: 'checker-name' }, ['password']],
    ['blank display name', { ...registration('checker'), display_name: '   ' }, ['display_name']],
    ['null display name', { ...registration('checker'), display_name: null }, ['display_name']],
    ['username with a space', { ...registration('checker'), username: 'check er' }, ['username']],
    ['unknown time zone', { ...registration('checker'), timezone: 'Mars/Olympus_Mons' }, ['timezone']],
    ['invalid locale', { ...registration('checker'), locale: 'not a locale' }, ['locale']],
    ['birth date in the future', { ...registration('checker'), date_of_birth: '2999-01-01' }, ['date_of_birth']],
    ['impossible birth date', { ...registration('checker'), date_of_birth: '2020-02-30' }, ['date_of_birth']],
    ['several at once', { username: 'checker', password: '123', timezone: 'Nowhere' }, ['password', 'display_name', 'timezone']],
  ];
  for (const [label, payload, fields] of cases) {
    const res = await accept(token, payload === undefined ? {} : { payload });
    t.equal(res.statusCode, 400, `${label}: 400`);
    t.equal(json(res).code, 'validation_failed', label);
    t.same(Object.keys(json(res).errors ?? {}).sort(), [...fields].sort(), `${label}: errors name ${fields.join(', ')}`);
  }
  for (const username of ['bob', 'BOB']) {
    const taken = await accept(token, { payload: registration(username) });
    t.equal(taken.statusCode, 409, `${username}: 409`);
    t.equal(json(taken).code, 'username_taken');
    t.ok(json(taken).errors.username);
  }
  t.equal((await preview(token)).statusCode, 200, 'the link is still pending');
  t.equal(await app.db.user.count({ where: { email: 'checks@example.test' } }), 0, 'no account created');
});

t.test('an existing user accepts with the Bearer token and an empty body; the email must match', async (t) => {
  const { token } = await inviteTo(bob.email.toUpperCase(), 'viewer');
  const anonymous = await accept(token, { payload: registration('bob-again') });
  t.equal(anonymous.statusCode, 409, 'anonymous accept for an address with an account');
  t.equal(json(anonymous).code, 'account_exists');
  const mismatch = await accept(token, { headers: carol.headers });
  t.equal(mismatch.statusCode, 403);
  t.equal(json(mismatch).code, 'invitation_email_mismatch');
  const withBody = await accept(token, { headers: bob.headers, payload: { display_name: 'Bob' } });
  t.equal(withBody.statusCode, 400, 'a signed-in user sends no registration data');
  t.ok(json(withBody).errors.display_name);
  t.equal((await accept(token, { headers: bearer('not-a-jwt') })).statusCode, 401);
  t.equal((await preview(token)).statusCode, 200, 'still pending after every refusal');
  t.equal(await app.db.membership.count({ where: { userId: { in: [bob.id, carol.id] } } }), 0);

  const res = await accept(token, { headers: bob.headers });
  t.equal(res.statusCode, 201);
  t.same(json(res), { organization_id: orgA, role: 'viewer', membership_created: true, tokens: null });
  const memberships = await app.db.membership.findMany({ where: { userId: bob.id } });
  t.same(
    memberships.map((m) => [m.organizationId, m.role]),
    [[orgA, 'viewer']],
  );

  const other = await inviteTo(bob.email, 'member', orgB);
  const withEmptyObject = await accept(other.token, { headers: bob.headers, payload: {} });
  t.equal(withEmptyObject.statusCode, 201, '`{}` works like no body');
  t.match(json(withEmptyObject), { organization_id: orgB, role: 'member', membership_created: true, tokens: null });
});

t.test('someone who already is a member consumes the link and keeps the membership they have', async (t) => {
  const { id, token } = await inviteTo(carol.email, 'admin');
  await app.db.membership.create({ data: { organizationId: orgA, userId: carol.id, role: 'viewer' } });
  t.teardown(() => app.db.membership.deleteMany({ where: { organizationId: orgA, userId: carol.id } }));
  const res = await accept(token, { headers: carol.headers });
  t.equal(res.statusCode, 201);
  t.same(json(res), { organization_id: orgA, role: 'viewer', membership_created: false, tokens: null });
  t.equal((await app.db.membership.findFirstOrThrow({ where: { organizationId: orgA, userId: carol.id } })).role, 'viewer');
  t.ok((await app.db.invitation.findUniqueOrThrow({ where: { id } })).acceptedAt);
});

t.test('of two simultaneous accepts exactly one succeeds', async (t) => {
  const fresh = await inviteTo('racer@example.test');
  const newcomers = await Promise.all([
    accept(fresh.token, { payload: registration('racer-one') }),
    accept(fresh.token, { payload: registration('racer-two') }),
  ]);
  t.same(newcomers.map((res) => res.statusCode).sort(), [201, 404]);
  t.equal(await app.db.user.count({ where: { email: 'racer@example.test' } }), 1, 'one account');
  t.equal(await app.db.user.count({ where: { username: { in: ['racer-one', 'racer-two'] } } }), 1);
  for (const res of newcomers) if (res.statusCode === 201) secrets.push(json(res).tokens.access, json(res).tokens.refresh);

  const existing = await inviteTo(carol.email, 'member', orgB);
  const both = await Promise.all([accept(existing.token, { headers: carol.headers }), accept(existing.token, { headers: carol.headers })]);
  t.same(both.map((res) => res.statusCode).sort(), [201, 404]);
  t.equal(await app.db.membership.count({ where: { organizationId: orgB, userId: carol.id } }), 1);
});

t.test('expired, revoked and resent-over links are 404 and create nothing', async (t) => {
  const expiring = await inviteTo('expiring@example.test');
  await app.db.$executeRaw`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = ${expiring.id}::uuid`;
  expectInvalid(t, await preview(expiring.token), 'expired preview');
  expectInvalid(t, await accept(expiring.token, { payload: registration('too-late') }), 'expired accept');

  const revoked = await inviteTo('revoked@example.test');
  const del = await app.inject({ method: 'DELETE', url: `${invitationsUrl(orgA)}${revoked.id}/`, headers: owner.headers });
  t.equal(del.statusCode, 204);
  expectInvalid(t, await accept(revoked.token, { payload: registration('too-revoked') }), 'revoked accept');
  t.equal(await app.db.user.count({ where: { username: { in: ['too-late', 'too-revoked'] } } }), 0);

  const first = await inviteTo('resent@example.test');
  const { result, token } = await emailedLink(mailbox, 'resent@example.test', '/invite/', () =>
    app.inject({ method: 'POST', url: `${invitationsUrl(orgA)}${first.id}/resend/`, headers: owner.headers }),
  );
  secrets.push(token);
  t.equal(result.statusCode, 201);
  expectInvalid(t, await accept(first.token, { payload: registration('resent-user') }), 'link replaced by a resend');
  const res = await accept(token, { payload: registration('resent-user') });
  t.equal(res.statusCode, 201, 'the new link works');
  secrets.push(json(res).tokens.access, json(res).tokens.refresh);
});

t.test('accepting an Owner handoff activates the workspace and removes the temporary membership', async (t) => {
  const { organizationId, token } = await provision('Gamma', 'founder@example.test');
  const hidden = await app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/`, headers: owner.headers });
  t.equal(hidden.statusCode, 404, 'pending workspace hidden');
  t.equal((await app.inject({ method: 'GET', url: invitationsUrl(organizationId), headers: owner.headers })).statusCode, 404);
  t.match(json(await preview(token)), { email: 'founder@example.test', organization_name: 'Gamma', role: 'owner' });

  const res = await accept(token, { payload: registration('founder') });
  t.equal(res.statusCode, 201);
  const body = json(res);
  secrets.push(body.tokens.access, body.tokens.refresh);
  t.match(body, { organization_id: organizationId, role: 'owner', membership_created: true });
  const organization = await app.db.organization.findUniqueOrThrow({
    where: { id: organizationId },
    include: { memberships: { include: { user: true } } },
  });
  t.equal(organization.status, 'active');
  t.equal(organization.ownerEmail, null);
  t.same(
    organization.memberships.map((m) => [m.user.username, m.role, m.isTemporary]),
    [['founder', 'owner', false]],
    'temporary membership removed',
  );
  const visible = await app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/`, headers: bearer(body.tokens.access) });
  t.equal(visible.statusCode, 200);
  t.equal(json(visible).current_user_role, 'owner');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/`, headers: owner.headers })).statusCode, 404);
  expectInvalid(t, await accept(token, { payload: registration('founder-again') }), 'handoff replay');

  const forCarol = await provision('Delta', carol.email);
  const byCarol = await accept(forCarol.token, { headers: carol.headers });
  t.equal(byCarol.statusCode, 201);
  t.same(json(byCarol), { organization_id: forCarol.organizationId, role: 'owner', membership_created: true, tokens: null });
  t.equal((await app.db.organization.findUniqueOrThrow({ where: { id: forCarol.organizationId } })).status, 'active');
});

t.test('links of cancelled and inactive workspaces are 404', async (t) => {
  const cancelled = await provision('Epsilon', 'never@example.test');
  const cancel = await app.inject({
    method: 'DELETE',
    url: `/api/v1/organizations/provisioning/${cancelled.organizationId}/`,
    headers: owner.headers,
  });
  t.equal(cancel.statusCode, 204);
  expectInvalid(t, await preview(cancelled.token), 'cancelled handoff preview');
  expectInvalid(t, await accept(cancelled.token, { payload: registration('never') }), 'cancelled handoff accept');

  // A member invitation of a workspace that is not active, whether or not its links were revoked.
  const inactive = await app.db.organization.create({ data: { name: 'Zeta', slug: 'zeta', status: 'cancelled' } });
  const { token } = await emailedLink(mailbox, 'zeta@example.test', '/invite/', () =>
    app.db.$transaction((tx) =>
      issueInvitation(tx, {
        organization: inactive,
        email: 'zeta@example.test',
        role: 'member',
        invitedBy: owner,
        appUrl: app.config.appUrl,
      }),
    ),
  );
  secrets.push(token);
  expectInvalid(t, await preview(token), 'inactive workspace preview');
  expectInvalid(t, await accept(token, { payload: registration('zeta') }), 'inactive workspace accept');
  t.equal(await app.db.user.count({ where: { username: { in: ['never', 'zeta'] } } }), 0);
});

t.test('no link token, password or issued token reaches the log', async (t) => {
  t.ok(secrets.length > 15);
  const all = logs.join('\n');
  for (const secret of [...secrets, PASSWORD]) t.notOk(all.includes(secret), 'secret absent from the log');
});
