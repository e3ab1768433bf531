// Workspace members: who may list them, role changes and their limits, ownership transfer (raced), removal and leaving.
import t from 'tap';
import type { MembershipRole } from '../../src/generated/prisma/enums.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const { app } = await buildTestApp(t);
const { admin: owner, organizationId: acmeId } = await setupInstallation(app);
const other = await app.db.organization.create({ data: { name: 'Other', slug: 'other' } });
const outsider = await createUser(app, { membership: { organizationId: other.id, role: 'owner' } });

const membersUrl = (organizationId = acmeId) => `/api/v1/organizations/${organizationId}/members/`;
const list = (user: SignedIn, query = '', organizationId = acmeId) =>
  app.inject({ method: 'GET', url: `${membersUrl(organizationId)}${query}`, headers: user.headers });
const patch = (user: SignedIn, membershipId: string, payload: unknown, organizationId = acmeId) =>
  app.inject({ method: 'PATCH', url: `${membersUrl(organizationId)}${membershipId}/`, headers: user.headers, payload: payload as object });
const remove = (user: SignedIn, membershipId: string, organizationId = acmeId) =>
  app.inject({ method: 'DELETE', url: `${membersUrl(organizationId)}${membershipId}/`, headers: user.headers });

/** A user with a membership in Acme, and that membership's id. */
async function joined(role: MembershipRole) {
  const user = await createUser(app, { membership: { organizationId: acmeId, role } });
  const membership = await app.db.membership.findFirstOrThrow({ where: { organizationId: acmeId, userId: user.id } });
  return Object.assign(user, { membershipId: membership.id });
}
const roleOf = async (membershipId: string) => (await app.db.membership.findUnique({ where: { id: membershipId } }))?.role;
const ownersOf = (organizationId = acmeId) => app.db.membership.count({ where: { organizationId, role: 'owner' } });

const ownerMembershipId = (await app.db.membership.findFirstOrThrow({ where: { organizationId: acmeId, userId: owner.id } })).id;
const admin = await joined('admin');
const member = await joined('member');
const viewer = await joined('viewer');
const otherMembershipId = (await app.db.membership.findFirstOrThrow({ where: { organizationId: other.id } })).id;

t.test('owners and admins list members; members and viewers get 403; non-members 404', async (t) => {
  const res = await list(owner);
  t.equal(res.statusCode, 200);
  const body = json<Array<Record<string, unknown>>>(res);
  t.equal(body.length, 4);
  t.same(
    body.map((m) => m.id),
    [viewer.membershipId, member.membershipId, admin.membershipId, ownerMembershipId],
    'newest first',
  );
  t.same(body[0], {
    id: viewer.membershipId,
    user_id: viewer.id,
    username: viewer.username,
    email: viewer.email,
    display_name: viewer.username,
    role: 'viewer',
    two_factor_enabled: false,
    created_at: body[0]!.created_at,
    updated_at: body[0]!.updated_at,
  });
  t.match(body[3], { user_id: owner.id, role: 'owner' });
  t.notOk(
    body.some((m) => m.user_id === outsider.id),
    'only this organization',
  );

  t.equal((await list(admin)).statusCode, 200);
  for (const user of [member, viewer]) {
    const denied = await list(user);
    t.equal(denied.statusCode, 403, user.username);
    t.equal(json(denied).code, 'permission_denied');
  }
  t.equal((await list(outsider)).statusCode, 404);
  t.equal(json(await list(outsider)).code, 'organization_not_found');

  const page = await list(owner, '?limit=3');
  t.equal(json(page).length, 3);
  t.match(page.headers.link, /rel="next"/);
  const next = /<([^>]+)>/.exec(String(page.headers.link))![1]!;
  t.same(
    json(await app.inject({ method: 'GET', url: next, headers: owner.headers })).map((m: { id: string }) => m.id),
    [ownerMembershipId],
  );
  t.equal((await list(owner, '?cursor=%%%')).statusCode, 400);
  t.equal((await list(owner, '?limit=500')).statusCode, 400);
});

t.test('there is no direct membership creation', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: membersUrl(),
    headers: owner.headers,
    payload: { user_id: outsider.id, role: 'member' },
  });
  t.equal(res.statusCode, 404);
  t.equal(await app.db.membership.count({ where: { organizationId: acmeId, userId: outsider.id } }), 0);
});

t.test('role changes: admins move members and viewers; only the owner touches admin; members and viewers may not', async (t) => {
  const target = await joined('member');
  const demoted = await patch(admin, target.membershipId, { role: 'viewer' });
  t.equal(demoted.statusCode, 200);
  t.match(json(demoted), { id: target.membershipId, user_id: target.id, role: 'viewer' });
  t.equal(await roleOf(target.membershipId), 'viewer');
  t.equal(json(await patch(admin, target.membershipId, { role: 'member' })).role, 'member');

  for (const [label, actor, role, code] of [
    ['admin grants admin', admin, 'admin', 'owner_required'],
    ['member changes a role', member, 'viewer', 'permission_denied'],
    ['viewer changes a role', viewer, 'member', 'permission_denied'],
    ['admin transfers ownership', admin, 'owner', 'owner_required'],
  ] as const) {
    const res = await patch(actor, target.membershipId, { role });
    t.equal(res.statusCode, 403, label);
    t.equal(json(res).code, code, label);
  }
  t.equal(await roleOf(target.membershipId), 'member', 'unchanged');

  const otherAdmin = await joined('admin');
  const res = await patch(admin, otherAdmin.membershipId, { role: 'member' });
  t.equal(res.statusCode, 403, 'an admin cannot demote an admin');
  t.equal(json(res).code, 'owner_required');
  t.equal((await patch(admin, admin.membershipId, { role: 'member' })).statusCode, 403, 'not even themselves');

  const onOwner = await patch(admin, ownerMembershipId, { role: 'member' });
  t.equal(onOwner.statusCode, 403);
  t.equal(json(onOwner).code, 'owner_role_locked');
  const ownSelf = await patch(owner, ownerMembershipId, { role: 'admin' });
  t.equal(ownSelf.statusCode, 403, 'the owner cannot step down except by transferring');
  t.equal(json(ownSelf).code, 'owner_role_locked');
  t.equal(await roleOf(ownerMembershipId), 'owner');

  t.equal(json(await patch(owner, target.membershipId, { role: 'admin' })).role, 'admin', 'the owner grants admin');
  t.equal(json(await patch(owner, target.membershipId, { role: 'viewer' })).role, 'viewer', 'and takes it back');
  t.equal(json(await patch(owner, ownerMembershipId, { role: 'owner' })).role, 'owner', 'owner → owner changes nothing');
  t.equal(await ownersOf(), 1);
});

t.test('members are addressed within the organization only: unknown, malformed and foreign ids are 404', async (t) => {
  for (const [label, id] of [
    ["another organization's membership", otherMembershipId],
    ['unknown id', '00000000-0000-4000-8000-000000000000'],
    ['malformed id', 'not-a-uuid'],
  ] as const) {
    const changed = await patch(owner, id, { role: 'viewer' });
    t.equal(changed.statusCode, 404, `PATCH ${label}`);
    t.equal(json(changed).code, 'member_not_found');
    t.equal((await remove(owner, id)).statusCode, 404, `DELETE ${label}`);
  }
  t.equal(await roleOf(otherMembershipId), 'owner');
  t.equal((await patch(outsider, member.membershipId, { role: 'viewer' })).statusCode, 404, 'a non-member');
  t.equal((await remove(outsider, member.membershipId)).statusCode, 404);
  t.equal((await patch(owner, member.membershipId, { role: 'viewer' }, '123')).statusCode, 404, 'malformed organization id');
});

t.test('PATCH rejects bad input with 400 and changes nothing', async (t) => {
  await rejectsBadBodies(
    t,
    app,
    { method: 'PATCH', url: `${membersUrl()}${member.membershipId}/`, headers: owner.headers },
    { role: 'viewer' },
    ['role'],
  );
  for (const payload of [{}, { role: 'superuser' }, { role: null }, { role: 'OWNER' }]) {
    const res = await patch(owner, member.membershipId, payload);
    t.equal(res.statusCode, 400, JSON.stringify(payload));
    t.equal(json(res).code, 'validation_failed');
  }
  t.equal(await roleOf(member.membershipId), 'member');
});

t.test('removal: admins remove members and viewers, the owner anyone else, nobody the owner', async (t) => {
  const victim = await joined('viewer');
  const byMember = await remove(member, victim.membershipId);
  t.equal(byMember.statusCode, 403, 'a member may not remove others');
  t.equal(json(byMember).code, 'permission_denied');
  const removed = await remove(admin, victim.membershipId);
  t.equal(removed.statusCode, 204);
  t.equal(removed.body, '');
  t.equal(await roleOf(victim.membershipId), undefined);
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/organizations/${acmeId}/`, headers: victim.headers })).statusCode, 404, 'gone');

  const secondAdmin = await joined('admin');
  const refused = await remove(admin, secondAdmin.membershipId);
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'owner_required');
  t.equal((await remove(owner, secondAdmin.membershipId)).statusCode, 204, 'the owner removes an admin');

  for (const actor of [admin, owner]) {
    const res = await remove(actor, ownerMembershipId);
    t.equal(res.statusCode, 403, `${actor.username} removing the owner`);
    t.equal(json(res).code, 'owner_cannot_be_removed');
  }
  t.equal(await roleOf(ownerMembershipId), 'owner');
  t.equal((await remove(owner, victim.membershipId)).statusCode, 404, 'already removed');
});

t.test('any member may leave; the owner may not', async (t) => {
  for (const role of ['viewer', 'member', 'admin'] as const) {
    const leaver = await joined(role);
    const res = await remove(leaver, leaver.membershipId);
    t.equal(res.statusCode, 204, `a ${role} leaves`);
    t.equal(await roleOf(leaver.membershipId), undefined);
  }
  t.equal((await remove(owner, ownerMembershipId)).statusCode, 403);
});

t.test('ownership transfer: the target becomes owner, the previous owner admin; exactly one owner, even when raced', async (t) => {
  const organization = await app.db.organization.create({ data: { name: 'Transfer', slug: 'transfer' } });
  const id = organization.id;
  const ownerRow = await app.db.membership.create({ data: { organizationId: id, userId: owner.id, role: 'owner' } });
  const [a, b] = [admin, member];
  const aRow = await app.db.membership.create({ data: { organizationId: id, userId: a.id, role: 'member' } });
  const bRow = await app.db.membership.create({ data: { organizationId: id, userId: b.id, role: 'viewer' } });

  const raced = await Promise.all([patch(owner, aRow.id, { role: 'owner' }, id), patch(owner, bRow.id, { role: 'owner' }, id)]);
  t.same(raced.map((r) => r.statusCode).sort(), [200, 403], 'one transfer wins; the loser is no longer the owner');
  t.equal(await ownersOf(id), 1);
  t.equal(await roleOf(ownerRow.id), 'admin', 'the previous owner became admin');
  const winner = raced.findIndex((r) => r.statusCode === 200) === 0 ? { user: a, row: aRow } : { user: b, row: bRow };
  t.equal(json(raced.find((r) => r.statusCode === 200)!).role, 'owner');

  const seen = json(await app.inject({ method: 'GET', url: `/api/v1/organizations/${id}/`, headers: owner.headers }));
  t.equal(seen.current_user_role, 'admin');
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/api/v1/organizations/${id}/`, headers: owner.headers })).statusCode,
    403,
    'no longer may delete',
  );
  t.equal((await remove(winner.user, ownerRow.id, id)).statusCode, 204, 'the new owner may remove the old one');

  const back = await patch(winner.user, winner.row.id, { role: 'admin' }, id);
  t.equal(back.statusCode, 403, 'the new owner cannot step down without a transfer');
  t.equal(await ownersOf(id), 1);
});

t.test('a personal workspace has no members to manage', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/api/v1/organizations/personal/', headers: viewer.headers });
  const personalId = json(res).id as string;
  const membership = await app.db.membership.findFirstOrThrow({ where: { organizationId: personalId } });
  const changed = await patch(viewer, membership.id, { role: 'owner' }, personalId);
  t.equal(changed.statusCode, 403);
  t.equal(json(changed).code, 'personal_workspace');
  const left = await remove(viewer, membership.id, personalId);
  t.equal(left.statusCode, 403);
  t.equal(json(left).code, 'owner_cannot_be_removed');
  t.equal((await list(viewer, '', personalId)).statusCode, 200);
});
