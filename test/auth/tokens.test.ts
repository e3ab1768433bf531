// Sign in, refresh rotation with reuse detection, logout, the sign-in rate limit, and secrets kept out of the logs.
import t from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { rejectsBadBodies } from './bad-input.js';

// The sign-in limit has its own app below; here it would trip over this file's many sign-ins.
const { app, logs } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '1000' });
const alice = await createUser(app, { username: 'alice', password: 'alice-password-1' });
const seenSecrets: string[] = [alice.password, alice.access, alice.refresh];

const signIn = (username: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password } });
const refresh = (token: unknown) => app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: token } });
const me = (access: string) => app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) });
const logout = (access: string, token: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/logout/', headers: bearer(access), payload: { refresh: token } });

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string; fam: string };

async function newSession() {
  const res = await signIn('alice', 'alice-password-1');
  t.equal(res.statusCode, 200);
  const pair = json<{ access: string; refresh: string }>(res);
  seenSecrets.push(pair.access, pair.refresh);
  return pair;
}

t.test('sign in returns a working pair and records the login', async (t) => {
  await app.db.user.update({ where: { id: alice.id }, data: { lastLogin: null } });
  const res = await signIn('alice', 'alice-password-1');
  t.equal(res.statusCode, 200);
  const body = json(res);
  t.same(Object.keys(body).sort(), ['access', 'refresh']);
  seenSecrets.push(body.access, body.refresh);
  t.equal((await me(body.access)).statusCode, 200);
  const user = await app.db.user.findUniqueOrThrow({ where: { id: alice.id } });
  t.ok(user.lastLogin && Date.now() - user.lastLogin.getTime() < 60_000, 'last_login set');
  t.ok(await app.db.refreshToken.findUnique({ where: { id: claims(body.refresh).jti } }), 'refresh token stored');
});

t.test('wrong password and unknown username get the same 401 after the same work', async (t) => {
  const started = Date.now();
  const wrong = await signIn('alice', 'not-the-password');
  const wrongMs = Date.now() - started;
  const unknownStart = Date.now();
  const unknown = await signIn('nobody-by-this-name', 'not-the-password');
  const unknownMs = Date.now() - unknownStart;
  for (const res of [wrong, unknown]) {
    t.equal(res.statusCode, 401);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
  }
  // Identical but for `instance`, which names each request.
  const { instance: unknownInstance, ...unknownBody } = json(unknown);
  const { instance: wrongInstance, ...wrongBody } = json(wrong);
  t.same(unknownBody, wrongBody, 'identical bodies');
  t.not(unknownInstance, wrongInstance, 'each names its own request');
  // argon2 takes tens of milliseconds; a bare lookup of a missing row takes about one.
  t.ok(unknownMs >= 15, `unknown username still verifies a hash (${unknownMs} ms, wrong password ${wrongMs} ms)`);
  t.equal((await signIn('alice@example.test', 'alice-password-1')).statusCode, 401, 'the email is not a username');
  t.equal((await signIn('ALICE', 'alice-password-1')).statusCode, 401, 'usernames match exactly');
});

t.test('refresh rotates: new pair, the old refresh token is dead', async (t) => {
  const first = await newSession();
  const res = await refresh(first.refresh);
  t.equal(res.statusCode, 200);
  const second = json(res);
  seenSecrets.push(second.access, second.refresh);
  t.not(second.refresh, first.refresh);
  t.equal((await me(second.access)).statusCode, 200, 'new access works');
  t.equal((await me(first.access)).statusCode, 200, 'older access of the same live session still works');
  const third = await refresh(second.refresh);
  t.equal(third.statusCode, 200, 'the new refresh token works');
  seenSecrets.push(json(third).access, json(third).refresh);
  const replayed = await refresh(first.refresh);
  t.equal(replayed.statusCode, 401, 'the rotated refresh token is refused');
  t.equal(json(replayed).code, 'token_not_valid');
});

t.test('reusing a rotated refresh token revokes its whole session, and only it', async (t) => {
  const other = await newSession();
  const first = await newSession();
  const rotated = json(await refresh(first.refresh));
  seenSecrets.push(rotated.access, rotated.refresh);

  const reuse = await refresh(first.refresh);
  t.equal(reuse.statusCode, 401, 'reuse is refused');
  t.equal(json(reuse).code, 'token_not_valid');
  t.equal((await refresh(rotated.refresh)).statusCode, 401, 'the newest refresh token of the family is dead too');
  t.equal((await me(rotated.access)).statusCode, 401, "the session's access tokens are dead");
  t.equal((await me(first.access)).statusCode, 401);
  const family = await app.db.refreshToken.findMany({ where: { familyId: claims(first.refresh).fam } });
  t.equal(family.length, 2);
  t.ok(
    family.every((row) => row.revokedAt !== null),
    'every token of the family is revoked in the database',
  );

  t.equal((await me(other.access)).statusCode, 200, 'another session of the same user lives on');
  t.equal((await refresh(other.refresh)).statusCode, 200);
});

t.test('refresh rejects bad tokens: 400 when malformed, 401 when invalid', async (t) => {
  const body400 = async (payload: unknown, label: string) => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: payload as object });
    t.equal(res.statusCode, 400, label);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
  };
  await body400({}, 'missing refresh');
  await body400({ refresh: 'not-a-jwt' }, 'not shaped like a JWT');
  await body400({ refresh: null }, 'null');
  const missingBody = await app.inject({ method: 'POST', url: '/api/v1/auth/token/refresh/' });
  t.equal(missingBody.statusCode, 400, 'no body at all');
  await rejectsBadBodies(t, app, { method: 'POST', url: '/api/v1/auth/token/refresh/' }, { refresh: 'a.b.c' }, ['refresh']);

  const session = await newSession();
  const [header, payload] = session.refresh.split('.');
  t.equal((await refresh(`${header}.${payload}.forgedsignature`)).statusCode, 401, 'forged signature');
  t.equal((await refresh(session.access)).statusCode, 401, 'an access token is not a refresh token');
  const other = await createUser(app);
  seenSecrets.push(other.access, other.refresh);
  await app.db.user.delete({ where: { id: other.id } });
  t.equal((await refresh(other.refresh)).statusCode, 401, 'token of a deleted user');
});

t.test('logout blacklists the refresh token and ends the session', async (t) => {
  const other = await newSession();
  const session = await newSession();
  const res = await logout(session.access, session.refresh);
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal((await refresh(session.refresh)).statusCode, 401, 'refresh after logout');
  t.equal((await me(session.access)).statusCode, 401, 'access token of the ended session');
  t.equal((await me(other.access)).statusCode, 200, 'other session unaffected');
  t.equal((await logout(other.access, session.refresh)).statusCode, 401, 'blacklisted twice');
});

t.test("logout refuses other people's tokens and anonymous callers", async (t) => {
  const session = await newSession();
  const bob = await createUser(app);
  seenSecrets.push(bob.access, bob.refresh);
  t.equal((await logout(bob.access, session.refresh)).statusCode, 401, "someone else's refresh token");
  t.equal((await refresh(session.refresh)).statusCode, 200, 'which stays valid');
  const anonymous = await app.inject({ method: 'POST', url: '/api/v1/auth/logout/', payload: { refresh: bob.refresh } });
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.headers['www-authenticate'], 'Bearer');
  await rejectsBadBodies(t, app, { method: 'POST', url: '/api/v1/auth/logout/', headers: bearer(bob.access) }, { refresh: bob.refresh }, [
    'refresh',
  ]);
  t.equal((await refresh(bob.refresh)).statusCode, 200, 'bad logout bodies blacklisted nothing');
});

t.test('sign in rejects bad bodies without counting as a login', async (t) => {
  const before = await app.db.refreshToken.count();
  await rejectsBadBodies(t, app, { method: 'POST', url: '/api/v1/auth/token/' }, { username: 'alice', password: 'alice-password-1' }, [
    'username',
    'password',
  ]);
  const text = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    headers: { 'content-type': 'text/plain' },
    payload: 'alice',
  });
  t.equal(text.statusCode, 415);
  t.equal(await app.db.refreshToken.count(), before, 'no session opened');
});

t.test('sign in is limited to 10 attempts a minute per IP and username', async (t) => {
  const { app, logs } = await buildTestApp(t);
  await createUser(app, { username: 'alice', password: 'alice-password-1' });
  const signIn = (username: string, password: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password } });
  for (let i = 1; i <= 10; i++) t.equal((await signIn('mallory-target', `guess-${i}-password`)).statusCode, 401, `attempt ${i}`);
  const limited = await signIn('mallory-target', 'guess-11-password');
  t.equal(limited.statusCode, 429);
  t.match(limited.headers['content-type'], /^application\/problem\+json/);
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After set');
  t.equal(json(limited).code, 'rate_limited');
  t.equal((await signIn('alice', 'alice-password-1')).statusCode, 200, 'another username from the same IP is not limited');
  t.notOk(logs.join('\n').includes('guess-'), 'no guessed password in the log');
});

t.test('no password or token reaches the log', async (t) => {
  const text = logs.join('\n');
  t.ok(logs.length > 0, 'something was logged');
  for (const secret of [...new Set(seenSecrets)]) t.notOk(text.includes(secret), 'secret absent from logs');
});
