// Provisioning handoffs: listing pending workspaces, resending the Owner invitation, cancelling, and who may do so.
import t from 'tap';
import { sha256Hex } from '../../src/lib/crypto.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { emailedLink } from '../invitations/links.js';

const mailbox = await startMailbox(t);
const { app } = await buildTestApp(t);
const { admin, organizationId: acmeId } = await setupInstallation(app, mailbox);
// A second installation admin, later demoted: a creator keeps access to their own handoffs.
const creator = await createUser(app, { username: 'creator' });
await app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: true } });
const member = await createUser(app, { membership: { organizationId: acmeId, role: 'admin' } });

const list = (user: SignedIn, query = '') =>
  app.inject({ method: 'GET', url: `/api/v1/organizations/provisioning/${query}`, headers: user.headers });
const resend = (headers: Record<string, string>, id: string, payload?: unknown) =>
  app.inject({
    method: 'POST',
    url: `/api/v1/organizations/provisioning/${id}/`,
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
const cancel = (headers: Record<string, string>, id: string) =>
  app.inject({ method: 'DELETE', url: `/api/v1/organizations/provisioning/${id}/`, headers });

async function handoff(by: SignedIn, name: string, ownerEmail: string) {
  const { result, token } = await emailedLink(mailbox, ownerEmail, '/invite/', () =>
    app.inject({ method: 'POST', url: '/api/v1/organizations/', headers: by.headers, payload: { name, owner_email: ownerEmail } }),
  );
  if (result.statusCode !== 201) throw new Error(`handoff failed: ${result.body}`);
  return { id: json(result).id as string, token };
}

const first = await handoff(admin, 'Initech', 'first-owner@example.test');
const second = await handoff(creator, 'Hooli', 'second-owner@example.test');

t.test('GET /organizations/provisioning/: installation admins see every pending handoff, newest first', async (t) => {
  const res = await list(admin);
  t.equal(res.statusCode, 200);
  const items = json<Array<Record<string, string>>>(res);
  t.same(
    items.map((item) => item.organization_id),
    [second.id, first.id],
  );
  t.same(Object.keys(items[0]!).sort(), ['created_at', 'name', 'organization_id', 'owner_email', 'slug']);
  t.match(items[0], { name: 'Hooli', slug: 'hooli', owner_email: 'second-owner@example.test' });
  t.notOk(
    items.some((item) => item.organization_id === acmeId),
    'active workspaces are not handoffs',
  );

  const page = await list(admin, '?limit=1');
  t.equal(json(page).length, 1);
  const next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link))?.[1];
  t.ok(next, 'Link header to the next page');
  const rest = await app.inject({ method: 'GET', url: next!, headers: admin.headers });
  t.same(
    json(rest).map((item: { organization_id: string }) => item.organization_id),
    [first.id],
  );
  t.notOk(rest.headers.link, 'last page');

  for (const query of ['?limit=0', '?limit=201', '?limit=abc', '?cursor=garbage']) {
    const bad = await list(admin, query);
    t.equal(bad.statusCode, 400, query);
    t.equal(json(bad).code, 'validation_failed', query);
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/organizations/provisioning/' })).statusCode, 401);
});

t.test('a creator who is no longer an installation admin sees only their own handoffs; others see none', async (t) => {
  await app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: false } });
  t.teardown(() => app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: true } }));
  t.same(
    json(await list(creator)).map((item: { organization_id: string }) => item.organization_id),
    [second.id],
  );
  t.same(json(await list(member)), []);
});

t.test('the pending workspace stays hidden from its creator', async (t) => {
  for (const url of [`/api/v1/organizations/${first.id}/`, `/api/v1/organizations/${first.id}/members/`]) {
    const res = await app.inject({ method: 'GET', url, headers: admin.headers });
    t.equal(res.statusCode, 404, url);
    t.equal(json(res).code, 'organization_not_found');
  }
  const me = json(await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: admin.headers }));
  t.notOk(
    me.organizations.some((o: { id: string }) => o.id === first.id),
    'not among my organizations',
  );
});

t.test('resend: a fresh Owner link is emailed and the previous one stops working', async (t) => {
  const before = await app.db.invitation.findFirstOrThrow({ where: { organizationId: second.id, revokedAt: null } });
  // An installation admin who did not create it may resend; so may an empty JSON body.
  const { result, token } = await emailedLink(mailbox, 'second-owner@example.test', '/invite/', () => resend(admin.headers, second.id, {}));
  t.equal(result.statusCode, 200);
  t.match(json(result), { organization_id: second.id, name: 'Hooli', slug: 'hooli', owner_email: 'second-owner@example.test' });
  t.not(token, second.token);

  const invitations = await app.db.invitation.findMany({ where: { organizationId: second.id }, orderBy: { createdAt: 'asc' } });
  t.equal(invitations.length, 2);
  t.equal(invitations[0]!.id, before.id);
  t.ok(invitations[0]!.revokedAt, 'previous link revoked');
  t.match(invitations[1], { role: 'owner', email: 'second-owner@example.test', revokedAt: null, acceptedAt: null, invitedById: admin.id });
  t.equal(invitations[1]!.tokenHash, sha256Hex(token));
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/invitations/${second.token}/` })).statusCode, 404, 'old link dead');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/invitations/${token}/` })).statusCode, 200, 'new link live');
  second.token = token;

  await app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: false } });
  t.teardown(() => app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: true } }));
  const byCreator = await emailedLink(mailbox, 'second-owner@example.test', '/invite/', () => resend(creator.headers, second.id));
  t.equal(byCreator.result.statusCode, 200, 'its creator may resend, without a body');
  second.token = byCreator.token;
});

t.test('resend without a usable SMTP account is refused and keeps the current link', async (t) => {
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  t.teardown(() => app.db.installationEmailAccount.updateMany({ data: { isActive: true } }));
  const pendingBefore = await app.db.invitation.count({ where: { organizationId: first.id, revokedAt: null } });
  const res = await resend(admin.headers, first.id);
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'email_not_configured');
  t.equal(await app.db.invitation.count({ where: { organizationId: first.id, revokedAt: null } }), pendingBefore);
  t.equal(await app.db.invitation.count({ where: { organizationId: first.id } }), 1);
});

t.test('resend and cancel: 404 for other users, active workspaces, unknown and malformed ids; 400 for a body', async (t) => {
  for (const [label, headers, id] of [
    ['an unrelated member', member.headers, first.id],
    ['an active workspace', admin.headers, acmeId],
    ['an unknown id', admin.headers, '00000000-0000-4000-8000-000000000000'],
    ['a malformed id', admin.headers, 'abc'],
  ] as const) {
    const resent = await resend(headers, id);
    t.equal(resent.statusCode, 404, `resend: ${label}`);
    t.equal(json(resent).code, 'provisioning_not_found');
    t.equal((await cancel(headers, id)).statusCode, 404, `cancel: ${label}`);
  }
  const withField = await resend(admin.headers, first.id, { owner_email: 'other@example.test' });
  t.equal(withField.statusCode, 400);
  t.ok(json(withField).errors?.owner_email);
  const malformed = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/provisioning/${first.id}/`,
    headers: { ...admin.headers, 'content-type': 'application/json' },
    payload: '{',
  });
  t.equal(malformed.statusCode, 400);
  t.equal((await resend({}, first.id)).statusCode, 401);
  t.equal((await cancel({}, first.id)).statusCode, 401);
  const organization = await app.db.organization.findUniqueOrThrow({ where: { id: first.id } });
  t.equal(organization.status, 'pending_owner', 'untouched');
});

t.test('cancel: the workspace is cancelled for good, its link dies and the temporary membership goes', async (t) => {
  const res = await cancel(admin.headers, first.id);
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  const organization = await app.db.organization.findUniqueOrThrow({
    where: { id: first.id },
    include: { memberships: true, invitations: true },
  });
  t.equal(organization.status, 'cancelled');
  t.same(organization.memberships, []);
  t.ok(
    organization.invitations.every((invitation) => invitation.revokedAt !== null),
    'every link revoked',
  );
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/invitations/${first.token}/` })).statusCode, 404);

  t.notOk(json(await list(admin)).some((item: { organization_id: string }) => item.organization_id === first.id));
  t.equal((await resend(admin.headers, first.id)).statusCode, 404, 'no resend after cancelling');
  t.equal((await cancel(admin.headers, first.id)).statusCode, 404, 'no second cancel');
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/organizations/${first.id}/`, headers: admin.headers })).statusCode, 404);
});

t.test('the creator (no longer an installation admin) may cancel their own handoff; after acceptance there is none', async (t) => {
  // The Owner accepts the current link: the workspace becomes active and leaves the provisioning list.
  const accepted = await app.inject({
    method: 'POST',
    url: `/api/v1/invitations/${second.token}/accept/`,
    payload: { username: 'second-owner', password: 'a-long-enough-password', display_name: 'Second Owner' },
  });
  t.equal(accepted.statusCode, 201, accepted.body);
  t.equal((await app.db.organization.findUniqueOrThrow({ where: { id: second.id } })).status, 'active');
  t.equal(await app.db.membership.count({ where: { organizationId: second.id, isTemporary: true } }), 0, 'temporary membership gone');
  t.same(json(await list(admin)), []);
  t.equal((await cancel(creator.headers, second.id)).statusCode, 404, 'an active workspace cannot be cancelled');

  const third = await handoff(creator, 'Pied Piper', 'third-owner@example.test');
  await app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: false } });
  t.teardown(() => app.db.user.update({ where: { id: creator.id }, data: { isSuperuser: true } }));
  t.equal((await cancel(creator.headers, third.id)).statusCode, 204);
  t.equal((await app.db.organization.findUniqueOrThrow({ where: { id: third.id } })).status, 'cancelled');
});
