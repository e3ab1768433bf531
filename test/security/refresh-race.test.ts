// A refresh token rotated while its sessions are being revoked (password change, reuse of a rotated token) dies too.
import t, { type Test } from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';

const { app, databaseUrl } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '1000' });
const _alice = await createUser(app, { username: 'alice', password: 'alice-password-1' });

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string; fam: string };
const jti = (jwt: string) => claims(jwt).jti;
const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: token } });
const me = (access: string) => app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) });
const signIn = async (password: string) =>
  json<{ access: string; refresh: string }>(
    await app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username: 'alice', password } }),
  );

/** Whatever a rotation returned must be dead: neither its access token nor its refresh token may work. */
async function assertDead(t: Test, rotation: Awaited<ReturnType<typeof refresh>>) {
  if (rotation.statusCode !== 200) {
    t.equal(rotation.statusCode, 401, 'the rotation was refused');
    return;
  }
  const pair = json<{ access: string; refresh: string }>(rotation);
  t.equal((await me(pair.access)).statusCode, 401, 'the access token of the rotated pair is dead');
  t.equal((await refresh(pair.refresh)).statusCode, 401, 'the refresh token of the rotated pair is dead');
}

t.test('a rotation in flight during a password change does not outlive the change', async (t) => {
  const session = await signIn('alice-password-1');
  // Holds the refresh token's row so the rotation stops mid-way; the password change then starts while it is in flight.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM refresh_tokens WHERE id = $1 FOR UPDATE', [jti(session.refresh)]);
  const rotation = track(refresh(session.refresh));
  await holder.waitForLockWaiters(1);
  const change = track(
    app.inject({
      method: 'POST',
      url: '/api/v1/auth/me/password/',
      headers: bearer(session.access),
      payload: { current_password: 'alice-password-1', new_password: 'alice-password-2' },
    }),
  );
  await holder.waitForLockWaiters(2, change.settled);
  await holder.release();
  t.equal((await change.promise).statusCode, 200, 'the password was changed');
  await assertDead(t, await rotation.promise);
  t.equal((await signIn('alice-password-2')).access.length > 0, true, 'the new password works');
});

t.test('a rotation in flight when a rotated token is reused is revoked with its family', async (t) => {
  const first = await signIn('alice-password-2');
  const second = json<{ access: string; refresh: string }>(await refresh(first.refresh));
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM refresh_tokens WHERE id = $1 FOR UPDATE', [jti(second.refresh)]);
  // The legitimate holder rotates the newest token while a thief replays the rotated one.
  const rotation = track(refresh(second.refresh));
  await holder.waitForLockWaiters(1);
  const reuse = track(refresh(first.refresh));
  await holder.waitForLockWaiters(2, reuse.settled);
  await holder.release();
  t.equal((await reuse.promise).statusCode, 401, 'the reused token is refused');
  await assertDead(t, await rotation.promise);
  const family = await app.db.refreshToken.findMany({ where: { familyId: claims(first.refresh).fam } });
  t.equal(family.length, 3, 'the rotation in flight did issue a successor');
  t.ok(
    family.every((row) => row.revokedAt !== null),
    'every token of the family is revoked, the successor included',
  );
});
