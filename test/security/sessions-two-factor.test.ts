// Sessions (list, end, revoke-others), TOTP two-factor sign-in, the workspace rule, and secrets kept out of answers and logs.
import t, { type Test } from 'tap';
import { Secret, TOTP } from 'otpauth';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { holdLocks } from '../helpers/locks.js';
import { hashRecoveryCode } from '../../src/modules/two-factor/totp.js';

const { app, logs, databaseUrl } = await buildTestApp(t, {
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000',
  RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR: '1000',
});
const { admin: owner, organizationId: acme } = await setupInstallation(app);

/** Every secret the test saw; none may appear in a log line or in an answer other than the one that created it. */
const secrets: string[] = [];
const answers: LightMyRequestResponse[] = [];

async function call(options: InjectOptions) {
  const res = await app.inject(options);
  answers.push(res);
  return res;
}
const signIn = (username: string, password: string, agent = 'test-agent') =>
  call({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password }, headers: { 'user-agent': agent } });
const me = (access: string) => call({ method: 'GET', url: '/api/v1/auth/me/', headers: bearer(access) });
const refresh = (token: string) => call({ method: 'POST', url: '/api/v1/auth/token/refresh/', payload: { refresh: token } });
const sessions = (access: string) => call({ method: 'GET', url: '/api/v1/auth/sessions/', headers: bearer(access) });
const confirmCode = (headers: { authorization: string }, code: string) =>
  call({ method: 'POST', url: '/api/v1/auth/me/two-factor/confirm/', headers, payload: { code } });
const auditCount = (action: string, actorUserId: string) => app.db.auditLog.count({ where: { action, actorUserId } });

async function device(user: SignedIn, agent: string) {
  const res = await signIn(user.username, user.password, agent);
  t.equal(res.statusCode, 200, res.body);
  return json<{ access: string; refresh: string }>(res);
}

const totpFor = (secret: string) => new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });
/** A code of the step `offset` steps away from now, taken away from a step boundary so the step cannot change under the test. */
async function codeAt(secret: string, offset = 0): Promise<string> {
  const intoStep = (Date.now() / 1000) % 30;
  if (intoStep > 26) await new Promise((resolve) => setTimeout(resolve, (31 - intoStep) * 1000));
  const code = totpFor(secret).generate({ timestamp: Date.now() + offset * 30_000 });
  secrets.push(code);
  return code;
}
/** Forgets the last accepted step: scenery for the next check to use a step of its own choosing. */
const forgetLastStep = (userId: string) => app.db.user.update({ where: { id: userId }, data: { twoFactorLastStep: null } });

t.test('sessions: listed with client and current flag; ending another one stops its tokens at the next request', async (t) => {
  const ada = await createUser(app, { username: 'ada', password: 'ada-password-123' });
  const laptop = await device(ada, 'Laptop/1.0');
  const phone = await device(ada, 'Phone/2.0');
  const listed = await sessions(phone.access);
  t.equal(listed.statusCode, 200);
  const rows =
    json<{ id: string; user_agent: string; client_ip: string; current: boolean; created_at: string; last_used_at: string }[]>(listed);
  t.ok(Array.isArray(rows), 'a JSON array, as every list');
  t.equal(rows.length, 3, 'the fixture sign-in, the laptop and the phone');
  t.equal(rows[0]!.user_agent, 'Phone/2.0', 'newest use first');
  t.ok(rows[0]!.current, 'the phone asked');
  t.equal(rows.filter((row) => row.current).length, 1);
  t.equal(rows[1]!.user_agent, 'Laptop/1.0');
  t.equal(rows[0]!.client_ip, '127.0.0.1');

  // A refresh moves the laptop to the top and keeps its session id.
  const laptopId = rows[1]!.id;
  const rotated = json<{ access: string; refresh: string }>(await refresh(laptop.refresh));
  const after = json<{ id: string }[]>(await sessions(phone.access));
  t.equal(after[0]!.id, laptopId, 'refreshing is a use of the session');

  t.equal((await me(rotated.access)).statusCode, 200, 'the laptop works before');
  const ended = await call({ method: 'DELETE', url: `/api/v1/auth/sessions/${laptopId}/`, headers: bearer(phone.access) });
  t.equal(ended.statusCode, 204);
  // The bound is zero: the very next request with the laptop's access token is refused.
  t.equal((await me(rotated.access)).statusCode, 401, "the ended session's access token is refused at once");
  t.equal((await refresh(rotated.refresh)).statusCode, 401, 'and its refresh token');
  t.equal((await me(phone.access)).statusCode, 200, 'the phone stays signed in');
  t.notOk(json<{ id: string }[]>(await sessions(phone.access)).some((row) => row.id === laptopId));
  t.equal(await auditCount('account.session_ended', ada.id), 1);

  const again = await call({ method: 'DELETE', url: `/api/v1/auth/sessions/${laptopId}/`, headers: bearer(phone.access) });
  t.equal(again.statusCode, 404);
  t.equal(json(again).code, 'session_not_found');
  t.equal((await call({ method: 'DELETE', url: '/api/v1/auth/sessions/not-a-uuid/', headers: bearer(phone.access) })).statusCode, 404);
  // Someone else's session is not yours to end.
  const ownersSession = json<{ id: string }[]>(await sessions(owner.access))[0]!.id;
  t.equal(
    (await call({ method: 'DELETE', url: `/api/v1/auth/sessions/${ownersSession}/`, headers: bearer(phone.access) })).statusCode,
    404,
  );
  t.equal((await me(owner.access)).statusCode, 200);
});

t.test('revoke-others ends every session but the current one', async (t) => {
  const bob = await createUser(app, { username: 'bob', password: 'bob-password-123' });
  const tablet = await device(bob, 'Tablet');
  const res = await call({ method: 'POST', url: '/api/v1/auth/sessions/revoke-others/', headers: bearer(tablet.access) });
  t.equal(res.statusCode, 200);
  t.same(json(res), { ended: 1 });
  t.equal((await me(bob.access)).statusCode, 401, "the other session's access token is refused at once");
  t.equal((await refresh(bob.refresh)).statusCode, 401);
  t.equal((await me(tablet.access)).statusCode, 200);
  t.equal((await refresh(tablet.refresh)).statusCode, 200, 'the current session refreshes on');
  t.equal(json<unknown[]>(await sessions(tablet.access)).length, 1);
});

t.test('a refresh racing the end of its session never yields a live successor', async (t) => {
  const eve = await createUser(app);
  const laptop = await device(eve, 'Racing laptop');
  const laptopId = json<{ id: string; user_agent: string }[]>(await sessions(eve.access)).find(
    (row) => row.user_agent === 'Racing laptop',
  )!.id;
  // Both wait on the user row held here, then run in whichever order PostgreSQL wakes them.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [eve.id]);
  const rotating = refresh(laptop.refresh);
  const ending = call({ method: 'DELETE', url: `/api/v1/auth/sessions/${laptopId}/`, headers: eve.headers });
  await holder.waitForLockWaiters(2);
  await holder.release();
  const [rotated, ended] = await Promise.all([rotating, ending]);
  t.equal(ended.statusCode, 204);
  if (rotated.statusCode === 200) {
    const successor = json<{ access: string; refresh: string }>(rotated);
    t.equal((await me(successor.access)).statusCode, 401, "the successor's access token is dead");
    t.equal((await refresh(successor.refresh)).statusCode, 401, 'and its refresh token');
  } else t.equal(rotated.statusCode, 401);
  t.notOk(json<{ id: string }[]>(await sessions(eve.access)).some((row) => row.id === laptopId));
});

// Ada's two-factor life: enrol, confirm, sign in, replay, skew, recovery, limits, disable.
const ada = { username: 'cyd', password: 'cyd-password-123', id: '', secret: '', recovery: [] as string[] };

t.test('enrolment: a secret and URI, confirmed with a code; other sessions end, the enrolling one stays', async (t) => {
  const cyd = await createUser(app, { username: ada.username, password: ada.password });
  ada.id = cyd.id;
  const other = await device(cyd, 'Other');
  t.equal(json(await me(cyd.access)).two_factor_enabled, false);
  const confirmEarly = await confirmCode(cyd.headers, '123456');
  t.equal(confirmEarly.statusCode, 409);
  t.equal(json(confirmEarly).code, 'two_factor_not_pending');

  const enrol = await call({ method: 'POST', url: '/api/v1/auth/me/two-factor/', headers: cyd.headers });
  t.equal(enrol.statusCode, 200);
  const { secret, otpauth_uri } = json<{ secret: string; otpauth_uri: string }>(enrol);
  answers.pop(); // The one answer that shows the secret.
  secrets.push(secret);
  ada.secret = secret;
  t.match(secret, /^[A-Z2-7]{32}$/);
  t.match(otpauth_uri, /^otpauth:\/\/totp\/.*cyd\?.*secret=/);
  t.match(otpauth_uri, /period=30/);
  const stored = await app.db.user.findUniqueOrThrow({ where: { id: cyd.id } });
  t.ok(stored.twoFactorSecret && !stored.twoFactorSecret.includes(secret), 'stored encrypted');
  t.equal(json(await me(cyd.access)).two_factor_enabled, false, 'not on before confirmation');
  t.equal((await signIn(ada.username, ada.password)).statusCode, 200, 'sign-in unchanged before confirmation');

  const wrong = await confirmCode(cyd.headers, '000000');
  t.equal(wrong.statusCode, 400);
  t.equal(json(wrong).code, 'two_factor_code_invalid');
  const confirm = await confirmCode(cyd.headers, await codeAt(secret));
  t.equal(confirm.statusCode, 200, confirm.body);
  ada.recovery = json<{ recovery_codes: string[] }>(confirm).recovery_codes;
  answers.pop(); // The one answer that shows the recovery codes.
  secrets.push(...ada.recovery);
  t.equal(ada.recovery.length, 10);
  t.equal(new Set(ada.recovery).size, 10);
  const hashes = await app.db.twoFactorRecoveryCode.findMany({ where: { userId: cyd.id } });
  t.equal(hashes.length, 10);
  t.notOk(
    hashes.some((row) => ada.recovery.includes(row.codeHash)),
    'stored hashed',
  );

  t.equal(json(await me(cyd.access)).two_factor_enabled, true);
  t.equal((await me(other.access)).statusCode, 401, 'another session ends when two-factor is turned on');
  t.equal((await refresh(cyd.refresh)).statusCode, 200, "the enrolling session's refresh token stays alive");
  t.equal(await auditCount('account.two_factor_enrolled', cyd.id), 1);
  const twice = await call({ method: 'POST', url: '/api/v1/auth/me/two-factor/', headers: cyd.headers });
  t.equal(twice.statusCode, 409);
  t.equal(json(twice).code, 'two_factor_already_enabled');
});

/** A password sign-in that must answer the challenge. */
async function challenge(t: Test): Promise<string> {
  const res = await signIn(ada.username, ada.password);
  t.equal(res.statusCode, 401);
  const body = json<{ code: string; challenge: string; access?: string }>(res);
  t.equal(body.code, 'two_factor_required');
  t.notOk(body.access, 'no tokens');
  t.match(body.challenge, /^[A-Za-z0-9_-]{43}$/);
  secrets.push(body.challenge);
  return body.challenge;
}
const answer = (payload: Record<string, string>) => call({ method: 'POST', url: '/api/v1/auth/token/two-factor/', payload });

t.test('sign-in with a code: one step of skew either way, a code accepted once', async (t) => {
  await forgetLastStep(ada.id);
  const code = await codeAt(ada.secret, -1);
  const ok = await answer({ challenge: await challenge(t), code });
  t.equal(ok.statusCode, 200, ok.body);
  t.equal((await me(json<{ access: string }>(ok).access)).statusCode, 200, 'the pair works');

  const replay = await answer({ challenge: await challenge(t), code });
  t.equal(replay.statusCode, 401, 'the same code again is refused');
  t.equal(json(replay).code, 'two_factor_code_invalid');

  const ahead = await answer({ challenge: await challenge(t), code: await codeAt(ada.secret, 1) });
  t.equal(ahead.statusCode, 200, 'a code one step ahead is accepted');
  await forgetLastStep(ada.id);
  const tooOld = await answer({ challenge: await challenge(t), code: await codeAt(ada.secret, -3) });
  t.equal(tooOld.statusCode, 401, 'a code three steps old is refused');
  const tooNew = await answer({ challenge: await challenge(t), code: await codeAt(ada.secret, 3) });
  t.equal(tooNew.statusCode, 401, 'a code three steps ahead is refused');
  const bogus = await answer({ challenge: 'not-a-challenge', code: await codeAt(ada.secret) });
  t.equal(bogus.statusCode, 401);
  t.equal(json(bogus).code, 'two_factor_challenge_invalid');
  const twoAnswers = await answer({ challenge: await challenge(t), code: '123456', recovery_code: ada.recovery[0]! });
  t.equal(twoAnswers.statusCode, 400, 'a code or a recovery code, not both');
  await app.db.user.update({ where: { id: ada.id }, data: { twoFactorFailures: 0 } });
});

t.test('a recovery code signs in once and is audited', async (t) => {
  const code = ada.recovery[0]!;
  const ok = await answer({ challenge: await challenge(t), recovery_code: code.toUpperCase() });
  t.equal(ok.statusCode, 200, 'case does not matter');
  t.equal(await auditCount('account.recovery_code_used', ada.id), 1);
  const again = await answer({ challenge: await challenge(t), recovery_code: code });
  t.equal(again.statusCode, 401, 'used up');
  t.equal(json(again).code, 'two_factor_code_invalid');
  t.equal(await auditCount('account.recovery_code_used', ada.id), 1);
  const used = await app.db.user.findUniqueOrThrow({ where: { id: ada.id } });
  t.equal(used.twoFactorFailures, 1, 'the reuse counted as a wrong code');
  await app.db.user.update({ where: { id: ada.id }, data: { twoFactorFailures: 0 } });
});

t.test('wrong codes are limited per challenge and per account', async (t) => {
  const spent = await challenge(t);
  for (let i = 0; i < 5; i += 1) t.equal((await answer({ challenge: spent, code: '000000' })).statusCode, 401);
  await forgetLastStep(ada.id);
  const afterFive = await answer({ challenge: spent, code: await codeAt(ada.secret) });
  t.equal(afterFive.statusCode, 401, 'a challenge takes five wrong codes, then not even a right one');
  t.equal(json(afterFive).code, 'two_factor_challenge_invalid');

  const next = await challenge(t);
  for (let i = 0; i < 4; i += 1) t.equal((await answer({ challenge: next, code: '000000' })).statusCode, 401);
  const third = await challenge(t);
  t.equal((await answer({ challenge: third, code: '000000' })).statusCode, 401, 'the tenth wrong code for the account');
  const locked = await answer({ challenge: third, code: await codeAt(ada.secret) });
  t.equal(locked.statusCode, 429, 'the account is locked even for a right code');
  t.equal(json(locked).code, 'two_factor_attempts_exceeded');
  t.ok(Number(locked.headers['retry-after']) > 0);
  // The window passes (moved back in the database rather than waited for).
  await app.db.user.update({ where: { id: ada.id }, data: { twoFactorFailuresSince: new Date(Date.now() - 16 * 60_000) } });
  await forgetLastStep(ada.id);
  t.equal((await answer({ challenge: third, code: await codeAt(ada.secret) })).statusCode, 200, 'open again after the window');
});

t.test('one code sent twice at once signs in once', async (t) => {
  await forgetLastStep(ada.id);
  const code = await codeAt(ada.secret);
  const [first, second] = [await challenge(t), await challenge(t)];
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [ada.id]);
  const racing = Promise.all([answer({ challenge: first, code }), answer({ challenge: second, code })]);
  await holder.waitForLockWaiters(2);
  await holder.release();
  t.same((await racing).map((res) => res.statusCode).sort(), [200, 401], 'the replay loses whichever runs second');
  await app.db.user.update({ where: { id: ada.id }, data: { twoFactorFailures: 0 } });
});

t.test('disable: password and a current code; sign-in is one step again', async (t) => {
  await forgetLastStep(ada.id);
  const signedIn = json<{ access: string }>(await answer({ challenge: await challenge(t), code: await codeAt(ada.secret) }));
  const headers = bearer(signedIn.access);
  const url = '/api/v1/auth/me/two-factor/disable/';
  const wrongPassword = await call({ method: 'POST', url, headers, payload: { password: 'nope-nope-nope', code: '123456' } });
  t.equal(wrongPassword.statusCode, 400);
  t.equal(json(wrongPassword).code, 'wrong_password');
  const wrongCode = await call({ method: 'POST', url, headers, payload: { password: ada.password, code: '000000' } });
  t.equal(wrongCode.statusCode, 400);
  t.equal(json(wrongCode).code, 'two_factor_code_invalid');
  await forgetLastStep(ada.id);
  const off = await call({ method: 'POST', url, headers, payload: { password: ada.password, code: await codeAt(ada.secret) } });
  t.equal(off.statusCode, 204, off.body);
  t.equal(json(await me(signedIn.access)).two_factor_enabled, false);
  t.equal((await signIn(ada.username, ada.password)).statusCode, 200, 'the password alone signs in again');
  t.equal(await app.db.twoFactorRecoveryCode.count({ where: { userId: ada.id } }), 0);
  t.equal(await auditCount('account.two_factor_disabled', ada.id), 1);
  const notOn = await call({ method: 'POST', url, headers, payload: { password: ada.password, code: '123456' } });
  t.equal(json(notOn).code, 'two_factor_not_enabled');
});

/** Turns two-factor on for a signed-in user through the API; answers their secret. */
async function enable(user: SignedIn): Promise<string> {
  const { secret } = json<{ secret: string }>(await call({ method: 'POST', url: '/api/v1/auth/me/two-factor/', headers: user.headers }));
  answers.pop();
  secrets.push(secret);
  const confirm = await confirmCode(user.headers, await codeAt(secret));
  secrets.push(...json<{ recovery_codes: string[] }>(confirm).recovery_codes);
  answers.pop();
  return secret;
}

t.test('the workspace rule: owner only, owner with two-factor; members without it get 403 there and only there', async (t) => {
  const url = `/api/v1/organizations/${acme}/`;
  const adminMember = await createUser(app, { membership: { organizationId: acme, role: 'admin' } });
  const plain = await createUser(app, { membership: { organizationId: acme, role: 'member' } });
  const elsewhere = await app.db.organization.create({ data: { name: 'Elsewhere', slug: 'elsewhere' } });
  await app.db.membership.create({ data: { organizationId: elsewhere.id, userId: plain.id, role: 'member' } });

  const renamed = await call({ method: 'PATCH', url, headers: adminMember.headers, payload: { name: 'Acme Inc.' } });
  t.equal(renamed.statusCode, 200, 'admins rename');
  t.match(json(renamed), { name: 'Acme Inc.', slug: 'acme', require_two_factor: false });
  const byAdmin = await call({ method: 'PATCH', url, headers: adminMember.headers, payload: { require_two_factor: true } });
  t.equal(byAdmin.statusCode, 403);
  t.equal(json(byAdmin).code, 'owner_required');
  const byMember = await call({ method: 'PATCH', url, headers: plain.headers, payload: { name: 'Mine' } });
  t.equal(byMember.statusCode, 403);
  t.equal((await call({ method: 'PATCH', url, headers: owner.headers, payload: {} })).statusCode, 400, 'an empty change');
  t.equal((await call({ method: 'PATCH', url, headers: owner.headers, payload: { slug: 'other' } })).statusCode, 400, 'the slug stays');

  const ownerWithout = await call({ method: 'PATCH', url, headers: owner.headers, payload: { require_two_factor: true } });
  t.equal(ownerWithout.statusCode, 403, 'the owner must have two-factor on first');
  t.equal(json(ownerWithout).code, 'two_factor_required');

  await enable(owner);
  const on = await call({ method: 'PATCH', url, headers: owner.headers, payload: { require_two_factor: true } });
  t.equal(on.statusCode, 200, on.body);
  t.equal(json(on).require_two_factor, true);
  t.equal(await app.db.auditLog.count({ where: { action: 'workspace.updated', organizationId: acme } }), 2);

  const blocked = await call({ method: 'GET', url: `${url}companies/`, headers: plain.headers });
  t.equal(blocked.statusCode, 403);
  t.equal(json(blocked).code, 'two_factor_required');
  t.match(json(blocked).detail, /POST \/api\/v1\/auth\/me\/two-factor\//, 'says how to enrol');
  t.equal((await call({ method: 'GET', url, headers: plain.headers })).statusCode, 403);
  t.equal(
    (await call({ method: 'GET', url: `/api/v1/organizations/${elsewhere.id}/companies/`, headers: plain.headers })).statusCode,
    200,
    'other workspaces unaffected',
  );
  t.equal((await me(plain.access)).statusCode, 200, 'the account itself unaffected');

  const members = await call({ method: 'GET', url: `${url}members/`, headers: owner.headers });
  t.equal(members.statusCode, 200);
  const byUser = new Map(json<{ user_id: string; two_factor_enabled: boolean }[]>(members).map((m) => [m.user_id, m.two_factor_enabled]));
  t.equal(byUser.get(owner.id), true);
  t.equal(byUser.get(plain.id), false);

  await enable(plain);
  t.equal((await call({ method: 'GET', url: `${url}companies/`, headers: plain.headers })).statusCode, 200, 'in once enrolled');
});

t.test('no secret, code or challenge in any later answer, the audit log, the export or a log line', async (t) => {
  t.ok(secrets.length > 30, `${secrets.length} secrets collected`);
  const exported = await call({ method: 'GET', url: '/api/v1/auth/me/export/', headers: owner.headers });
  t.equal(exported.statusCode, 200);
  const audit = JSON.stringify(await app.db.auditLog.findMany());
  for (const secret of new Set(secrets)) {
    // Codes are six digits: looked for as whole JSON strings, where a log or body would carry one.
    const needle = /^\d{6}$/.test(secret) ? `"${secret}"` : secret;
    t.notOk(
      logs.some((line) => line.includes(needle)),
      'not in a log line',
    );
    t.notOk(audit.includes(needle), 'not in the audit log');
    // Challenges are shown once, by the sign-in that issued them (that answer is allowed to carry it).
    const shownBy = answers.filter((res) => res.body.includes(needle));
    t.ok(
      shownBy.every((res) => json(res).code === 'two_factor_required' && json(res).challenge === secret),
      'not in an answer',
    );
  }
});

t.test('without EMAIL_ENCRYPTION_KEY nothing is enrolled; with the key gone, recovery codes still sign in', async (t) => {
  const keyless = await buildTestApp(t, { EMAIL_ENCRYPTION_KEY: undefined });
  const user = await createUser(keyless.app);
  const res = await keyless.app.inject({ method: 'POST', url: '/api/v1/auth/me/two-factor/', headers: user.headers });
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'encryption_key_missing');
  t.equal((await keyless.app.db.user.findUniqueOrThrow({ where: { id: user.id } })).twoFactorSecret, null);

  // An account enrolled under a key the server no longer has: codes cannot be checked, recovery codes can.
  const stored = await app.db.user.findUniqueOrThrow({ where: { username: 'cyd' } });
  t.equal(stored.twoFactorEnabledAt, null, 'cyd turned it off above');
  const owners = await app.db.user.findUniqueOrThrow({ where: { id: owner.id }, select: { twoFactorSecret: true } });
  const recovery = 'abcde-fghij';
  await keyless.app.db.user.update({
    where: { id: user.id },
    data: { twoFactorSecret: owners.twoFactorSecret, twoFactorEnabledAt: new Date() },
  });
  await keyless.app.db.twoFactorRecoveryCode.create({
    data: { userId: user.id, codeHash: hashRecoveryCode(recovery) },
  });
  const signIn = await keyless.app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    payload: { username: user.username, password: user.password },
  });
  const { challenge } = json<{ challenge: string }>(signIn);
  const withCode = await keyless.app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/two-factor/',
    payload: { challenge, code: '123456' },
  });
  t.equal(withCode.statusCode, 503);
  t.equal(json(withCode).code, 'two_factor_unavailable');
  const withRecovery = await keyless.app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/two-factor/',
    payload: { challenge, recovery_code: recovery },
  });
  t.equal(withRecovery.statusCode, 200);
});
