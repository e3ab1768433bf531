// Privacy policy acceptance: nothing changes without PRIVACY_POLICY_VERSION; with it, registering through an invitation
// accepts it, `me` says whether the current version is accepted, and the account records and exports the acceptance.
import t from 'tap';
import { buildTestApp, bearer, json, type TestApp } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { emailedLink } from '../invitations/links.js';

const VERSION = '2026-11';
const mailbox = await startMailbox(t);

/** An app with `env`, its installation set up, and a way to invite an address to its first workspace. */
async function installation(env: Record<string, string | undefined>) {
  const built: TestApp = await buildTestApp(t, env);
  const { admin, organizationId } = await setupInstallation(built.app, mailbox);
  const invite = async (email: string) => {
    const { result, token } = await emailedLink(mailbox, email, '/invite/', () =>
      built.app.inject({
        method: 'POST',
        url: `/api/v1/organizations/${organizationId}/invitations/`,
        headers: admin.headers,
        payload: { email, role: 'member' },
      }),
    );
    if (result.statusCode !== 201) throw new Error(`invitation failed: ${result.statusCode} ${result.body}`);
    return token;
  };
  const accept = (token: string, payload: Record<string, unknown>) =>
    built.app.inject({ method: 'POST', url: `/api/v1/invitations/${token}/accept/`, payload });
  const me = async (access: string) => json(await built.app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) }));
  return { app: built.app, invite, accept, me };
}

const registration = (username: string) => ({ username, password: 'a-fine-passphrase', display_name: `${username} display` });

t.test('PRIVACY_POLICY_VERSION unset: registration as before, nothing to accept', async (t) => {
  const { invite, accept, me } = await installation({ PRIVACY_POLICY_VERSION: undefined });
  const res = await accept(await invite('plain@example.test'), registration('plain'));
  t.equal(res.statusCode, 201);
  const body = await me(json(res).tokens.access);
  t.equal(body.privacy_policy_version_accepted, null);
  t.equal(body.privacy_policy_acceptance_required, false);
});

t.test('PRIVACY_POLICY_VERSION set', async (t) => {
  const { app, invite, accept, me } = await installation({ PRIVACY_POLICY_VERSION: VERSION });

  t.test('registration through an invitation needs privacy_policy_accepted: true', async (t) => {
    const token = await invite('careful@example.test');
    for (const payload of [registration('careful'), { ...registration('careful'), privacy_policy_accepted: false }]) {
      const refused = await accept(token, payload);
      t.equal(refused.statusCode, 400);
      t.same(Object.keys(json(refused).errors), ['privacy_policy_accepted']);
    }
    const res = await accept(token, { ...registration('careful'), privacy_policy_accepted: true });
    t.equal(res.statusCode, 201);
    const body = await me(json(res).tokens.access);
    t.equal(body.privacy_policy_version_accepted, VERSION);
    t.equal(body.privacy_policy_acceptance_required, false);
  });

  t.test('me asks an existing account to accept; POST records the current version only', async (t) => {
    const user = await createUser(app);
    const before = await me(user.access);
    t.equal(before.privacy_policy_version_accepted, null);
    t.equal(before.privacy_policy_acceptance_required, true);

    const other = await app.inject({ method: 'POST', url: '/api/v1/auth/me/privacy-policy/2025-01', headers: user.headers });
    t.equal(other.statusCode, 400);
    t.same(Object.keys(json(other).errors), ['version']);
    const anonymous = await app.inject({ method: 'POST', url: `/api/v1/auth/me/privacy-policy/${VERSION}` });
    t.equal(anonymous.statusCode, 401);

    const accepted = await app.inject({ method: 'POST', url: `/api/v1/auth/me/privacy-policy/${VERSION}`, headers: user.headers });
    t.equal(accepted.statusCode, 200);
    t.equal(json(accepted).privacy_policy_version_accepted, VERSION);
    t.equal(json(accepted).privacy_policy_acceptance_required, false);
    t.same(await me(user.access), json(accepted));

    const exported = json(await app.inject({ method: 'GET', url: '/api/v1/auth/me/export/', headers: user.headers }));
    t.equal(exported.profile.privacy_policy_version_accepted, VERSION);
    t.ok(Date.now() - Date.parse(exported.profile.privacy_policy_accepted_at) < 60_000, 'when it was accepted');
  });
});

t.test('without a configured version, no version can be accepted', async (t) => {
  const { app } = await installation({ PRIVACY_POLICY_VERSION: undefined });
  const user = await createUser(app);
  const res = await app.inject({ method: 'POST', url: `/api/v1/auth/me/privacy-policy/${VERSION}`, headers: user.headers });
  t.equal(res.statusCode, 400);
});
