// Shared workspaces: creation by installation admins (self-owned or pending handoff), slugs, reading and deleting,
// and personal workspaces.
import t from 'tap';
import { sha256Hex } from '../../src/lib/crypto.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { linkIn, startMailbox, tokenOf } from '../helpers/mailbox.js';
import { rejectsBadBodies } from '../auth/bad-input.js';

const mailbox = await startMailbox(t);
const { app } = await buildTestApp(t, { RATE_LIMIT_PROVISIONING_PER_DAY: '12' });
const { admin, organizationId: acmeId } = await setupInstallation(app, mailbox);
const acmeAdmin = await createUser(app, { membership: { organizationId: acmeId, role: 'admin' } });
const viewer = await createUser(app, { membership: { organizationId: acmeId, role: 'viewer' } });
const outsider = await createUser(app);

const create = (headers: Record<string, string>, payload: unknown) =>
  app.inject({ method: 'POST', url: '/api/v1/organizations/', headers, payload: payload as object });
const getOrganization = (headers: Record<string, string>, id: string) =>
  app.inject({ method: 'GET', url: `/api/v1/organizations/${id}/`, headers });
const deleteOrganization = (headers: Record<string, string>, id: string) =>
  app.inject({ method: 'DELETE', url: `/api/v1/organizations/${id}/`, headers });
const counts = async () => ({
  organizations: await app.db.organization.count(),
  memberships: await app.db.membership.count(),
  invitations: await app.db.invitation.count(),
  outbox: await app.db.emailOutbox.count(),
});

t.test('an installation admin creating a workspace for themselves becomes its owner at once', async (t) => {
  const before = await counts();
  const res = await create(admin.headers, { name: 'Globex', owner_email: admin.email.toUpperCase() });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.match(body, { name: 'Globex', slug: 'globex', is_personal: false, current_user_role: 'owner', owner_invitation_pending: false });
  t.same(Object.keys(body).sort(), [
    'created_at',
    'current_user_role',
    'id',
    'is_personal',
    'name',
    'owner_invitation_pending',
    'require_two_factor',
    'slug',
    'updated_at',
  ]);

  const row = await app.db.organization.findUniqueOrThrow({ where: { id: body.id }, include: { memberships: true } });
  t.equal(row.status, 'active');
  t.equal(row.createdById, admin.id);
  t.same(
    row.memberships.map((m) => [m.userId, m.role, m.isTemporary]),
    [[admin.id, 'owner', false]],
  );
  t.same(
    await counts(),
    { ...before, organizations: before.organizations + 1, memberships: before.memberships + 1 },
    'no invitation, no email',
  );

  const read = await getOrganization(admin.headers, body.id);
  t.equal(read.statusCode, 200);
  const { owner_invitation_pending: _pending, ...organization } = body;
  t.same(json(read), organization, 'the same Organization body');
});

t.test('slugs: generated from the name and made unique, or chosen and then unique (409)', async (t) => {
  const again = await create(admin.headers, { name: 'Globex', owner_email: admin.email });
  t.equal(json(again).slug, 'globex-2');
  const accented = await create(admin.headers, { name: '  Café Crème & Co. ', owner_email: admin.email });
  t.equal(json(accented).slug, 'cafe-creme-co');
  const symbols = await create(admin.headers, { name: '!!!', owner_email: admin.email });
  t.equal(json(symbols).slug, 'workspace');
  const chosen = await create(admin.headers, { name: 'Whatever', slug: 'my-team', owner_email: admin.email });
  t.equal(chosen.statusCode, 201);
  t.equal(json(chosen).slug, 'my-team');

  const before = await counts();
  const taken = await create(admin.headers, { name: 'Another Acme', slug: 'acme', owner_email: admin.email });
  t.equal(taken.statusCode, 409);
  t.match(taken.headers['content-type'], /^application\/problem\+json/);
  t.match(json(taken), { code: 'slug_taken', errors: { slug: [String] } });
  t.same(await counts(), before, 'nothing created');
});

t.test('a workspace for someone else waits hidden for its Owner, who is emailed an invitation', async (t) => {
  const res = await create(admin.headers, { name: 'Initech', owner_email: 'Boss@Example.test' });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.match(body, { name: 'Initech', slug: 'initech', is_personal: false, current_user_role: 'admin', owner_invitation_pending: true });

  const row = await app.db.organization.findUniqueOrThrow({ where: { id: body.id }, include: { memberships: true, invitations: true } });
  t.equal(row.status, 'pending_owner');
  t.equal(row.ownerEmail, 'boss@example.test');
  t.same(
    row.memberships.map((m) => [m.userId, m.role, m.isTemporary]),
    [[admin.id, 'admin', true]],
    'temporary membership',
  );
  t.equal(row.invitations.length, 1);
  const [invitation] = row.invitations;
  t.match(invitation, { email: 'boss@example.test', role: 'owner', invitedById: admin.id, acceptedAt: null, revokedAt: null });

  const mail = await mailbox.waitForTo('boss@example.test');
  const link = linkIn(mail, '/invite/');
  t.match(link, /^http:\/\/app\.example\.test\/invite\/[A-Za-z0-9_-]{43}$/);
  t.equal(sha256Hex(tokenOf(link)), invitation!.tokenHash, 'the emailed link is the stored invitation');
  t.match(mail.subject, /owner of Initech/);

  const hidden = await getOrganization(admin.headers, body.id);
  t.equal(hidden.statusCode, 404, 'hidden from its creator too');
  t.equal(json(hidden).code, 'organization_not_found');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/organizations/${body.id}/members/`, headers: admin.headers })).statusCode, 404);
  t.equal((await deleteOrganization(admin.headers, body.id)).statusCode, 404);
});

t.test('without any SMTP account that can send, a handoff is refused and nothing is created', async (t) => {
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  t.teardown(() => app.db.installationEmailAccount.updateMany({ data: { isActive: true } }));
  const before = await counts();
  const res = await create(admin.headers, { name: 'Umbrella', owner_email: 'someone@example.test' });
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'email_not_configured');
  t.same(await counts(), before);
  t.equal(await app.db.organization.count({ where: { name: 'Umbrella' } }), 0);
});

t.test('only installation admins create workspaces', async (t) => {
  const before = await counts();
  for (const user of [acmeAdmin, viewer, outsider]) {
    const res = await create(user.headers, { name: 'Mine', owner_email: user.email });
    t.equal(res.statusCode, 403, user.username);
    t.equal(json(res).code, 'installation_admin_required');
  }
  const anonymous = await create({}, { name: 'Mine', owner_email: 'x@example.test' });
  t.equal(anonymous.statusCode, 401);
  t.same(await counts(), before);
});

t.test('POST /organizations/ rejects bad input with 400 and creates nothing', async (t) => {
  const before = await counts();
  const endpoint = { method: 'POST' as const, url: '/api/v1/organizations/', headers: admin.headers };
  await rejectsBadBodies(t, app, endpoint, { name: 'Valid', owner_email: admin.email }, ['name', 'slug', 'owner_email']);
  const cases: Array<[string, unknown, string]> = [
    ['empty name', { name: '', owner_email: admin.email }, 'name'],
    ['name of 201 characters', { name: 'n'.repeat(201), owner_email: admin.email }, 'name'],
    ['missing owner_email', { name: 'Valid' }, 'owner_email'],
    ['invalid owner_email', { name: 'Valid', owner_email: 'not-an-email' }, 'owner_email'],
    ['slug with capitals', { name: 'Valid', slug: 'My-Team', owner_email: admin.email }, 'slug'],
    ['slug with a trailing dash', { name: 'Valid', slug: 'team-', owner_email: admin.email }, 'slug'],
    ['slug of 101 characters', { name: 'Valid', slug: 'a'.repeat(101), owner_email: admin.email }, 'slug'],
  ];
  for (const [label, payload, field] of cases) {
    const res = await create(admin.headers, payload);
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: errors.${field}`);
  }
  const text = await app.inject({
    method: 'POST',
    url: '/api/v1/organizations/',
    headers: { ...admin.headers, 'content-type': 'text/plain' },
    payload: 'hi',
  });
  t.equal(text.statusCode, 415);
  t.same(await counts(), before);
});

t.test('workspace creation is rate-limited per user (provisioning preset)', async (t) => {
  const limited = await createUser(app);
  const statuses: number[] = [];
  for (let i = 0; i < 13; i += 1) statuses.push((await create(limited.headers, { name: 'Spam', owner_email: limited.email })).statusCode);
  t.same(statuses, [...Array(12).fill(403), 429]);
  const res = await create(limited.headers, { name: 'Spam', owner_email: limited.email });
  t.ok(res.headers['retry-after'], 'Retry-After set');
  t.equal(json(res).code, 'rate_limited');
});

t.test('GET /organizations/<id>/: members of any role; 404 for everyone else and for malformed ids', async (t) => {
  const asViewer = await getOrganization(viewer.headers, acmeId);
  t.equal(asViewer.statusCode, 200);
  t.match(json(asViewer), { id: acmeId, name: 'Acme', slug: 'acme', is_personal: false, current_user_role: 'viewer' });
  t.equal(json(await getOrganization(acmeAdmin.headers, acmeId)).current_user_role, 'admin');
  const withoutSlash = await app.inject({ method: 'GET', url: `/api/v1/organizations/${acmeId}`, headers: viewer.headers });
  t.equal(withoutSlash.statusCode, 200);

  for (const [label, headers, id] of [
    ['non-member', outsider.headers, acmeId],
    ['unknown id', admin.headers, '00000000-0000-4000-8000-000000000000'],
    ['malformed id', admin.headers, 'not-a-uuid'],
  ] as const) {
    const res = await getOrganization(headers, id);
    t.equal(res.statusCode, 404, label);
    t.equal(json(res).code, 'organization_not_found', label);
  }
  t.equal((await getOrganization({}, acmeId)).statusCode, 401);
});

t.test('DELETE /organizations/<id>/: owner only, cascades to everything in the workspace', async (t) => {
  const res = await create(admin.headers, { name: 'Doomed', owner_email: admin.email });
  const id = json(res).id as string;
  const member = await createUser(app, { membership: { organizationId: id, role: 'admin' } });
  const company = await app.db.company.create({ data: { organizationId: id, name: 'Client' } });
  await app.db.emailAccount.create({
    data: {
      organizationId: id,
      name: 'Own',
      host: 'smtp.example.test',
      port: 25,
      username: '',
      fromEmail: 'a@example.test',
      isDefault: true,
    },
  });

  t.equal((await deleteOrganization(member.headers, id)).statusCode, 403, 'an admin may not');
  t.equal(json(await deleteOrganization(member.headers, id)).code, 'permission_denied');
  t.equal((await deleteOrganization(outsider.headers, id)).statusCode, 404, 'a non-member learns nothing');
  t.equal((await deleteOrganization(admin.headers, 'nope')).statusCode, 404);
  t.equal(await app.db.organization.count({ where: { id } }), 1, 'still there');

  const deleted = await deleteOrganization(admin.headers, id);
  t.equal(deleted.statusCode, 204);
  t.equal(deleted.body, '');
  t.equal(await app.db.organization.count({ where: { id } }), 0);
  t.equal(await app.db.membership.count({ where: { organizationId: id } }), 0);
  t.equal(await app.db.company.count({ where: { id: company.id } }), 0);
  t.equal(await app.db.emailAccount.count({ where: { organizationId: id } }), 0);
  t.equal((await getOrganization(member.headers, id)).statusCode, 404);
  t.equal((await deleteOrganization(admin.headers, id)).statusCode, 404);
});

t.test('personal workspaces: one per user, after setup, private, never deleted', async (t) => {
  const personal = (headers: Record<string, string>, payload?: unknown) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/organizations/personal/',
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });

  await app.db.installationState.update({ where: { id: 1 }, data: { setupCompletedAt: null } });
  const early = await personal(outsider.headers);
  await app.db.installationState.update({ where: { id: 1 }, data: { setupCompletedAt: new Date() } });
  t.equal(early.statusCode, 409);
  t.equal(json(early).code, 'installation_not_initialized');

  const res = await personal(outsider.headers);
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.match(body, { name: 'Personal workspace', slug: `personal-${outsider.username}`, is_personal: true, current_user_role: 'owner' });
  const row = await app.db.organization.findUniqueOrThrow({ where: { id: body.id }, include: { memberships: true } });
  t.match(row, { isPersonal: true, personalUserId: outsider.id, status: 'active' });
  t.same(
    row.memberships.map((m) => [m.userId, m.role]),
    [[outsider.id, 'owner']],
  );
  t.equal((await getOrganization(outsider.headers, body.id)).statusCode, 200);
  t.equal((await getOrganization(admin.headers, body.id)).statusCode, 404, 'private: not even an installation admin sees it');

  const before = await counts();
  const second = await personal(outsider.headers, {});
  t.equal(second.statusCode, 409);
  t.equal(json(second).code, 'personal_workspace_exists');
  t.same(await counts(), before);

  const named = await personal(viewer.headers, { name: 'My lab' });
  t.equal(named.statusCode, 201);
  t.match(json(named), { name: 'My lab', is_personal: true });

  const refused = await deleteOrganization(outsider.headers, body.id);
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'personal_workspace');
  t.equal(await app.db.organization.count({ where: { id: body.id } }), 1);

  t.equal((await personal({})).statusCode, 401);
  const after = await counts();
  await rejectsBadBodies(t, app, { method: 'POST', url: '/api/v1/organizations/personal/', headers: acmeAdmin.headers }, {}, ['name']);
  t.equal((await personal(acmeAdmin.headers, { name: '' })).statusCode, 400);
  t.same(await counts(), after, 'bad input created nothing');
});
