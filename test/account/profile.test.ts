// GET /auth/me/, the profile and the settings: their bodies, PATCH rules and validation (email changes: test/security).
import t from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const { app } = await buildTestApp(t);
const ada = await createUser(app, { username: 'ada' });
const bob = await createUser(app, { username: 'bob' });

const get = (url: string, headers: Record<string, string> = ada.headers) =>
  app.inject({ method: 'GET', url: `/api/v1/auth/me/${url}`, headers });
const patch = (url: string, payload: Record<string, unknown>, headers: Record<string, string> = ada.headers) =>
  app.inject({ method: 'PATCH', url: `/api/v1/auth/me/${url}`, headers, payload });
const profileRow = () => app.db.profile.findUnique({ where: { userId: ada.id } });

t.test("me lists the active workspaces of the caller, newest membership first, each with the caller's role", async (t) => {
  const org = (slug: string, status: 'active' | 'pending_owner' | 'cancelled' = 'active') =>
    app.db.organization.create({ data: { name: slug.toUpperCase(), slug, status } });
  const older = await org('older');
  const newer = await org('newer');
  const pending = await org('pending', 'pending_owner');
  const cancelled = await org('cancelled', 'cancelled');
  await org('foreign');
  await app.db.membership.create({
    data: { organizationId: older.id, userId: ada.id, role: 'viewer', createdAt: new Date(Date.now() - 60_000) },
  });
  await app.db.membership.create({ data: { organizationId: newer.id, userId: ada.id, role: 'admin' } });
  await app.db.membership.create({ data: { organizationId: pending.id, userId: ada.id, role: 'owner' } });
  await app.db.membership.create({ data: { organizationId: cancelled.id, userId: ada.id, role: 'owner' } });

  const res = await get('');
  t.equal(res.statusCode, 200);
  const body = json(res);
  t.same(Object.keys(body).sort(), [
    'can_create_workspaces',
    'email',
    'id',
    'is_superuser',
    'organizations',
    'privacy_policy_acceptance_required',
    'privacy_policy_version_accepted',
    'two_factor_enabled',
    'username',
  ]);
  t.match(body, {
    id: ada.id,
    username: 'ada',
    email: 'ada@example.test',
    is_superuser: false,
    can_create_workspaces: false,
    two_factor_enabled: false,
    privacy_policy_version_accepted: null,
    privacy_policy_acceptance_required: false,
  });
  t.same(
    body.organizations.map((o: { slug: string }) => o.slug),
    ['newer', 'older'],
  );
  t.same(body.organizations[0], {
    id: newer.id,
    name: 'NEWER',
    slug: 'newer',
    is_personal: false,
    current_user_role: 'admin',
    require_two_factor: false,
    created_at: newer.createdAt.toISOString(),
    updated_at: newer.updatedAt.toISOString(),
  });
  t.equal(body.organizations[1].current_user_role, 'viewer');
  t.same(json(await get('', bob.headers)).organizations, [], 'bob sees none of them');
});

t.test('installation administrators may create workspaces', async (t) => {
  await app.db.user.update({ where: { id: bob.id }, data: { isSuperuser: true } });
  t.match(json(await get('', bob.headers)), { is_superuser: true, can_create_workspaces: true });
  await app.db.user.update({ where: { id: bob.id }, data: { isSuperuser: false } });
});

t.test('every account endpoint needs a valid access token', async (t) => {
  for (const url of ['', 'profile/', 'settings/', 'export/']) {
    t.equal((await get(url, {})).statusCode, 401, `GET ${url} anonymous`);
    t.equal((await get(url, bearer('not.a.token'))).statusCode, 401, `GET ${url} garbage token`);
  }
  t.equal((await get('', bearer(ada.refresh))).statusCode, 401, 'a refresh token is not an access token');
  t.equal((await patch('profile/', { first_name: 'X' }, {})).statusCode, 401);
});

t.test('a user without a profile row reads nulls; the first PATCH creates the row', async (t) => {
  await app.db.profile.delete({ where: { userId: ada.id } });
  const res = await get('profile/');
  t.equal(res.statusCode, 200);
  t.same(json(res), {
    username: 'ada',
    email: 'ada@example.test',
    display_name: null,
    first_name: null,
    last_name: null,
    date_of_birth: null,
    timezone: null,
    locale: null,
    onboarding_completed_at: null,
  });
  t.equal(await profileRow(), null, 'reading creates nothing');
  const updated = await patch('profile/', { first_name: 'Ada' });
  t.equal(updated.statusCode, 200);
  t.equal(json(updated).first_name, 'Ada');
  t.equal(json(updated).onboarding_completed_at, null, 'no display name yet: onboarding not complete');
  t.equal((await profileRow())?.firstName, 'Ada');
});

t.test('setting a display name the first time completes onboarding, once', async (t) => {
  const blank = await patch('profile/', { display_name: '   ' });
  t.equal(json(blank).display_name, null, 'a blank name is stored as null');
  t.equal(json(blank).onboarding_completed_at, null, 'and does not complete onboarding');
  const first = json(await patch('profile/', { display_name: '  Ada Lovelace ' }));
  t.equal(first.display_name, 'Ada Lovelace', 'trimmed');
  t.ok(first.onboarding_completed_at, 'onboarding completed');
  const second = json(await patch('profile/', { display_name: 'Countess' }));
  t.equal(second.onboarding_completed_at, first.onboarding_completed_at, 'the completion time stays');
});

t.test('profile PATCH updates every editable field and null clears them', async (t) => {
  const res = await patch('profile/', {
    first_name: 'Augusta',
    last_name: 'King',
    date_of_birth: '1815-12-10',
    timezone: 'Europe/London',
    locale: 'en-gb',
  });
  t.equal(res.statusCode, 200);
  t.match(json(res), { first_name: 'Augusta', last_name: 'King', date_of_birth: '1815-12-10', timezone: 'Europe/London', locale: 'en-GB' });
  t.same(json(await get('profile/')), json(res), 'GET shows what PATCH returned');
  t.equal(json(await patch('profile/', { timezone: 'UTC' })).timezone, 'UTC', 'UTC is an IANA name');
  const cleared = json(await patch('profile/', { last_name: null, date_of_birth: null, timezone: null, locale: null }));
  t.match(cleared, { first_name: 'Augusta', last_name: null, date_of_birth: null, timezone: null, locale: null });
  const unchanged = await patch('profile/', {});
  t.equal(unchanged.statusCode, 200, 'an empty PATCH changes nothing');
  t.same(json(unchanged), cleared);
});

t.test('invalid profile values answer 400 with every field and change nothing', async (t) => {
  const before = await profileRow();
  const res = await patch('profile/', {
    first_name: 'Changed',
    timezone: 'Mars/Olympus_Mons',
    locale: 'en_US',
    date_of_birth: '2999-01-01',
  });
  t.equal(res.statusCode, 400);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
  const body = json(res);
  t.equal(body.code, 'validation_failed');
  t.same(Object.keys(body.errors).sort(), ['date_of_birth', 'locale', 'timezone']);
  for (const [payload, field] of [
    [{ timezone: 'europe/london' }, 'timezone'],
    [{ timezone: 'EST' }, 'timezone'],
    [{ date_of_birth: '2001-02-30' }, 'date_of_birth'],
    [{ date_of_birth: '10/12/1815' }, 'date_of_birth'],
    [{ locale: '' }, 'locale'],
    [{ display_name: 'x'.repeat(151) }, 'display_name'],
  ] as const) {
    const bad = await patch('profile/', payload);
    t.equal(bad.statusCode, 400, JSON.stringify(payload));
    t.ok(json(bad).errors?.[field], `errors.${field}`);
  }
  for (const field of ['email', 'marketing_consent', 'username', 'onboarding_completed_at']) {
    t.equal((await patch('profile/', { [field]: 'x' })).statusCode, 400, `${field} is not a profile PATCH field`);
  }
  await rejectsBadBodies(t, app, { method: 'PATCH', url: '/api/v1/auth/me/profile/', headers: ada.headers }, { first_name: 'Changed' }, [
    'display_name',
    'first_name',
    'last_name',
    'date_of_birth',
    'timezone',
    'locale',
  ]);
  t.same(await profileRow(), before, 'profile unchanged');
});

t.test('settings show the profile plus the marketing consent', async (t) => {
  const res = await get('settings/');
  t.equal(res.statusCode, 200);
  const body = json(res);
  const { marketing_consent: consent, ...profile } = body;
  t.equal(consent, false);
  t.same(profile, json(await get('profile/')), 'the profile fields, as the profile shows them');

  const changed = await patch('settings/', { marketing_consent: true, last_name: 'King' });
  t.equal(changed.statusCode, 200);
  t.match(json(changed), { email: 'ada@example.test', marketing_consent: true, last_name: 'King' });
  t.equal(
    json(await patch('settings/', { email: 'Ada@Example.test' })).email,
    'ada@example.test',
    'keeping the own email needs no password',
  );
  t.equal(json(await patch('settings/', { marketing_consent: false })).marketing_consent, false);
});

t.test('an email change without the current password answers 400 and changes nothing', async (t) => {
  const before = await app.db.user.findUniqueOrThrow({ where: { id: ada.id }, include: { profile: true } });
  const res = await patch('settings/', { email: 'BOB@example.test', first_name: 'Not applied', marketing_consent: true });
  t.equal(res.statusCode, 400);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
  t.ok(json(res).errors.current_password);
  const after = await app.db.user.findUniqueOrThrow({ where: { id: ada.id }, include: { profile: true } });
  t.same(after, before, 'user and profile unchanged');
});

t.test('settings PATCH rejects bad bodies and changes nothing', async (t) => {
  const before = await app.db.user.findUniqueOrThrow({ where: { id: ada.id }, include: { profile: true } });
  await rejectsBadBodies(t, app, { method: 'PATCH', url: '/api/v1/auth/me/settings/', headers: ada.headers }, { first_name: 'Changed' }, [
    'email',
    'marketing_consent',
    'display_name',
    'timezone',
  ]);
  for (const payload of [{ email: 'not-an-email' }, { marketing_consent: 'yes' }, { username: 'renamed' }, { timezone: 'Nowhere/City' }]) {
    t.equal((await patch('settings/', payload)).statusCode, 400, JSON.stringify(payload));
  }
  t.same(await app.db.user.findUniqueOrThrow({ where: { id: ada.id }, include: { profile: true } }), before);
});
