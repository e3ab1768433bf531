// A deactivated user is refused everywhere in the API at once (sign-in, refresh, issued access tokens); reactivation
// restores sign-in while the old tokens stay dead.
import t from 'tap';
import { buildTestApp, bearer, json, problemBody } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { organizationId } = await setupInstallation(app);
const dora = await createUser(app, { username: 'dora', membership: { organizationId, role: 'member' } });
const other = await createUser(app, { username: 'olga', membership: { organizationId, role: 'member' } });

const signIn = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password } });
const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: token } });
const me = (access: string) => app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) });
const tenantRead = (access: string) =>
  app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/`, headers: bearer(access) });

/**
 * What the console's deactivation does: the row inactive, older access tokens killed by the version bump, refresh
 * tokens revoked. Reactivation only sets the flag back.
 */
async function setActive(userId: string, active: boolean): Promise<void> {
  await app.db
    .$executeRaw`UPDATE users SET is_active = ${active}, token_version = token_version + ${active ? 0 : 1} WHERE id = ${userId}::uuid`;
  if (!active)
    await app.db.$executeRaw`UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = ${userId}::uuid AND revoked_at IS NULL`;
}

t.test('before: the user signs in, refreshes and reads', async (t) => {
  t.equal((await me(dora.access)).statusCode, 200);
  t.equal((await tenantRead(dora.access)).statusCode, 200);
});

t.test('deactivated: sign-in, refresh and the issued access token all answer 401 at once', async (t) => {
  // A second session whose refresh token was never used, so only deactivation can refuse it.
  const spare = json<{ access: string; refresh: string }>(await signIn('dora', dora.password));
  await setActive(dora.id, false);

  const wrongPassword = await signIn('dora', 'not-doras-password');
  const deactivated = await signIn('dora', dora.password);
  t.equal(deactivated.statusCode, 401, 'sign-in refused');
  t.same(problemBody(deactivated), problemBody(wrongPassword), 'the same answer as a wrong password');
  t.notMatch(deactivated.body, /deactivat|inactive/i, 'nothing tells the account exists but is off');

  t.equal((await refresh(spare.refresh)).statusCode, 401, 'refresh refused');
  t.equal((await me(dora.access)).statusCode, 401, 'access token refused on a plain route');
  t.equal((await tenantRead(spare.access)).statusCode, 401, 'access token refused on a tenant route');
  t.equal((await me(other.access)).statusCode, 200, 'other users are unaffected');
});

t.test('the API checks is_active itself, not only the token version', async (t) => {
  const fresh = json<{ access: string; refresh: string }>(await signIn('olga', other.password));
  // Deactivated without the version bump: the flag alone must refuse the token and the refresh.
  await app.db.$executeRaw`UPDATE users SET is_active = false WHERE id = ${other.id}::uuid`;
  t.equal((await me(fresh.access)).statusCode, 401);
  t.equal((await tenantRead(fresh.access)).statusCode, 401);
  await app.db.$executeRaw`UPDATE users SET is_active = true WHERE id = ${other.id}::uuid`;
  t.equal((await me(fresh.access)).statusCode, 200, 'the flag was the only reason');
  await app.db.$executeRaw`UPDATE users SET is_active = false WHERE id = ${other.id}::uuid`;
  t.equal((await refresh(fresh.refresh)).statusCode, 401, 'refresh refused by the flag alone');
  await app.db.$executeRaw`UPDATE users SET is_active = true WHERE id = ${other.id}::uuid`;
});

t.test('reactivated: sign-in works again, tokens issued before stay dead', async (t) => {
  await setActive(dora.id, true);
  const res = await signIn('dora', dora.password);
  t.equal(res.statusCode, 200, 'sign-in restored');
  const pair = json<{ access: string; refresh: string }>(res);
  t.equal((await me(pair.access)).statusCode, 200, 'the new token works');
  t.equal((await me(dora.access)).statusCode, 401, 'the old access token stays dead');
  t.equal((await refresh(dora.refresh)).statusCode, 401, 'the old refresh token stays dead');
});
