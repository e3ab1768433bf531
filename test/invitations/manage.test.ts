// Managing workspace invitations: sending (roles, SMTP, conflicts), the history with derived statuses, revoke and
// resend, each only within the addressed organization.
import t from 'tap';
import { encryptSecret, sha256Hex } from '../../src/lib/crypto.js';
import { issueInvitation } from '../../src/modules/invitations/issue.js';
import { buildTestApp, json, TEST_EMAIL_KEY } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { emailedLink } from './links.js';

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_INVITATIONS_PER_DAY: '1000' });
const mailbox = await startMailbox(t);
const { admin: owner, organizationId: orgA } = await setupInstallation(app, mailbox);
const admin = await createUser(app, { username: 'ada', membership: { organizationId: orgA, role: 'admin' } });
const member = await createUser(app, { username: 'mel', membership: { organizationId: orgA, role: 'member' } });
const viewer = await createUser(app, { username: 'vic', membership: { organizationId: orgA, role: 'viewer' } });
const outsider = await createUser(app, { username: 'otto' });
// A second workspace of the same owner: its invitation ids must still do nothing under orgA's path.
const orgB = (
  await app.db.organization.create({
    data: { name: 'Beta', slug: 'beta', memberships: { create: { userId: owner.id, role: 'owner' } } },
  })
).id;
const tokens: string[] = [];

const base = (org: string) => `/api/v1/organizations/${org}/invitations/`;
const invite = (who: SignedIn, payload: Record<string, unknown>, org = orgA) =>
  app.inject({ method: 'POST', url: base(org), headers: who.headers, payload });
const list = (who: SignedIn, query = '', org = orgA) => app.inject({ method: 'GET', url: base(org) + query, headers: who.headers });
const revoke = (who: SignedIn, id: string, org = orgA) => app.inject({ method: 'DELETE', url: `${base(org)}${id}/`, headers: who.headers });
const resend = (who: SignedIn, id: string, org = orgA) =>
  app.inject({ method: 'POST', url: `${base(org)}${id}/resend/`, headers: who.headers });
const preview = (token: string) => app.inject({ method: 'GET', url: `/api/v1/invitations/${token}/` });
const rowsFor = (email: string) => app.db.invitation.findMany({ where: { email }, orderBy: { createdAt: 'asc' } });
const statusOf = async (id: string) => {
  const res = await list(owner, '?limit=200', (await app.db.invitation.findUniqueOrThrow({ where: { id } })).organizationId);
  return json<Array<{ id: string; status: string }>>(res).find((row) => row.id === id)?.status;
};

/** Sends an invitation that must succeed; returns its body and the emailed token. */
async function sent(who: SignedIn, email: string, role = 'member', org = orgA) {
  const { result, token } = await emailedLink(mailbox, email, '/invite/', () => invite(who, { email, role }, org));
  if (result.statusCode !== 201) throw new Error(`invitation failed: ${result.statusCode} ${result.body}`);
  tokens.push(token);
  return { invitation: json(result), token };
}

t.test('an owner invites: 201, the link arrives through the installation fallback, only its hash is stored', async (t) => {
  const { result, mail, link, token } = await emailedLink(mailbox, 'new.person@example.test', '/invite/', () =>
    invite(owner, { email: 'New.Person@Example.test', role: 'member' }),
  );
  tokens.push(token);
  t.equal(result.statusCode, 201);
  const body = json(result);
  t.same(Object.keys(body).sort(), [
    'accepted_at',
    'created_at',
    'email',
    'expires_at',
    'id',
    'invited_by',
    'revoked_at',
    'role',
    'status',
  ]);
  t.match(body, {
    email: 'new.person@example.test',
    role: 'member',
    status: 'pending',
    invited_by: owner.id,
    accepted_at: null,
    revoked_at: null,
  });
  const ttl = Date.parse(body.expires_at) - Date.parse(body.created_at);
  t.ok(Math.abs(ttl - 7 * 24 * 3600 * 1000) < 5000, 'expires seven days after sending');
  t.equal(link, `http://app.example.test/invite/${token}`);
  t.ok(token.length >= 43, 'at least 32 random bytes');
  t.equal(mail.authUser, mailbox.username, 'sent through the installation fallback account');
  t.match(mail.subject, /Acme/);
  t.ok(mail.text.includes(link) && mail.html.includes(`href="${link}"`), 'text and HTML parts carry the link');
  const row = await app.db.invitation.findUniqueOrThrow({ where: { id: body.id } });
  t.equal(row.tokenHash, sha256Hex(token));
  t.notOk(JSON.stringify(row).includes(token), 'the token itself is not stored');
});

t.test('roles: owner is not invitable, only an owner invites admins', async (t) => {
  const owned = await invite(owner, { email: 'would-be-owner@example.test', role: 'owner' });
  t.equal(owned.statusCode, 400);
  t.equal(json(owned).code, 'validation_failed');
  t.ok(json(owned).errors.role);
  const escalation = await invite(admin, { email: 'would-be-admin@example.test', role: 'admin' });
  t.equal(escalation.statusCode, 403);
  t.equal(json(escalation).code, 'admin_invite_requires_owner');
  t.equal(
    (await rowsFor('would-be-owner@example.test')).length + (await rowsFor('would-be-admin@example.test')).length,
    0,
    'nothing created',
  );

  const byAdmin = await sent(admin, 'viewer-by-admin@example.test', 'viewer');
  t.match(byAdmin.invitation, { role: 'viewer', invited_by: admin.id });
  const adminInvite = await sent(owner, 'new-admin@example.test', 'admin');
  t.match(adminInvite.invitation, { role: 'admin', status: 'pending' });
});

t.test('members and viewers get 403, non-members 404, anonymous callers 401', async (t) => {
  const { invitation } = await sent(owner, 'guarded@example.test');
  for (const who of [member, viewer]) {
    for (const res of [
      await list(who),
      await invite(who, { email: 'sneaky@example.test', role: 'member' }),
      await revoke(who, invitation.id),
      await resend(who, invitation.id),
    ]) {
      t.equal(res.statusCode, 403, `${who.username}: 403`);
      t.equal(json(res).code, 'permission_denied');
    }
  }
  for (const res of [
    await list(outsider),
    await invite(outsider, { email: 'sneaky@example.test', role: 'member' }),
    await revoke(outsider, invitation.id),
    await resend(outsider, invitation.id),
    await list(owner, '', '6f1c1d9e-3f57-4f0c-9a59-8d7f6c1b2a30'),
    await list(owner, '', 'not-a-uuid'),
  ]) {
    t.equal(res.statusCode, 404);
    t.equal(json(res).code, 'organization_not_found');
  }
  t.equal((await app.inject({ method: 'GET', url: base(orgA) })).statusCode, 401);
  t.equal((await rowsFor('sneaky@example.test')).length, 0);
  t.equal(await statusOf(invitation.id), 'pending', 'untouched');
});

t.test('conflicts: members, a pending invitation to the same address, personal workspaces', async (t) => {
  const already = await invite(owner, { email: member.email.toUpperCase(), role: 'viewer' });
  t.equal(already.statusCode, 409);
  t.equal(json(already).code, 'already_member');

  await sent(owner, 'twice@example.test');
  const again = await invite(owner, { email: 'twice@example.test', role: 'viewer' });
  t.equal(again.statusCode, 409);
  t.equal(json(again).code, 'invitation_pending');
  t.equal((await rowsFor('twice@example.test')).length, 1);

  const personal = await app.inject({ method: 'POST', url: '/api/v1/organizations/personal/', headers: owner.headers });
  t.equal(personal.statusCode, 201);
  const refused = await invite(owner, { email: 'friend@example.test', role: 'member' }, json(personal).id);
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'personal_workspace');
  t.equal((await rowsFor('friend@example.test')).length, 0);
});

t.test('sending needs the workspace default account or the installation fallback', async (t) => {
  const { invitation: earlier } = await sent(owner, 'resend-without-smtp@example.test');
  await app.db.installationEmailAccount.updateMany({ data: { isActive: false } });
  t.teardown(() => app.db.installationEmailAccount.updateMany({ data: { isActive: true } }));
  const outbox = await app.db.emailOutbox.count();

  const res = await invite(owner, { email: 'no-smtp@example.test', role: 'member' });
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'email_not_configured');
  t.match(json(res).detail, /email account/);
  t.equal((await rowsFor('no-smtp@example.test')).length, 0, 'no invitation row');

  const again = await resend(owner, earlier.id);
  t.equal(again.statusCode, 400);
  t.equal(json(again).code, 'email_not_configured');
  t.equal(await statusOf(earlier.id), 'pending', 'a failed resend revokes nothing');
  t.equal((await rowsFor('resend-without-smtp@example.test')).length, 1);
  t.equal(await app.db.emailOutbox.count(), outbox, 'nothing queued');

  const own = await startMailbox(t, { username: 'acme-smtp', password: 'acme-smtp-password' });
  await app.db.emailAccount.create({
    data: {
      organizationId: orgA,
      name: 'Acme SMTP',
      host: own.host,
      port: own.port,
      username: own.username,
      passwordEncrypted: encryptSecret(own.password, Buffer.from(TEST_EMAIL_KEY, 'base64')),
      fromEmail: 'acme@example.test',
      useTls: false,
      isDefault: true,
    },
  });
  t.teardown(() => app.db.emailAccount.deleteMany({ where: { organizationId: orgA } }));
  const { result, mail } = await emailedLink(own, 'via-acme@example.test', '/invite/', () =>
    invite(owner, { email: 'via-acme@example.test', role: 'member' }),
  );
  t.equal(result.statusCode, 201);
  t.equal(mail.authUser, 'acme-smtp', "sent through the workspace's own default account");
});

t.test('the history lists every status, newest first, paginated, without owner handoffs', async (t) => {
  const pending = await sent(owner, 'h-pending@example.test', 'member', orgB);
  const accepted = await sent(owner, outsider.email, 'viewer', orgB);
  const expired = await sent(owner, 'h-expired@example.test', 'member', orgB);
  const revoked = await sent(owner, 'h-revoked@example.test', 'admin', orgB);
  const join = await app.inject({ method: 'POST', url: `/api/v1/invitations/${accepted.token}/accept/`, headers: outsider.headers });
  t.equal(join.statusCode, 201);
  await app.db.$executeRaw`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = ${expired.invitation.id}::uuid`;
  t.equal((await revoke(owner, revoked.invitation.id, orgB)).statusCode, 204);
  await app.db.$transaction((tx) =>
    issueInvitation(tx, {
      organization: { id: orgB, name: 'Beta' },
      email: 'handoff@example.test',
      role: 'owner',
      invitedBy: owner,
      appUrl: 'http://x',
    }),
  );

  const res = await list(owner, '', orgB);
  t.equal(res.statusCode, 200);
  const rows = json<Array<Record<string, string | null>>>(res);
  t.same(
    Object.fromEntries(rows.map((row) => [row.email, row.status])),
    {
      'h-pending@example.test': 'pending',
      [outsider.email]: 'accepted',
      'h-expired@example.test': 'expired',
      'h-revoked@example.test': 'revoked',
    },
    'statuses derived on read; the owner handoff is not listed',
  );
  t.ok(rows.find((row) => row.status === 'accepted')?.accepted_at);
  t.ok(rows.find((row) => row.status === 'revoked')?.revoked_at);
  const created = rows.map((row) => Date.parse(row.created_at!));
  t.same(
    created,
    [...created].sort((a, b) => b - a),
    'newest first',
  );
  t.equal(res.headers.link, undefined);

  const first = await list(owner, '?limit=3', orgB);
  t.equal(json(first).length, 3);
  const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1];
  t.ok(next, 'Link rel="next"');
  const second = await app.inject({ method: 'GET', url: next!, headers: owner.headers });
  t.same(
    json(second).map((row: { id: string }) => row.id),
    [rows[3]!.id],
  );
  t.equal(second.headers.link, undefined);
  t.same(
    [...json(first), ...json(second)].map((row: { id: string }) => row.id),
    rows.map((row) => row.id),
  );
  t.equal(pending.invitation.status, 'pending');

  for (const query of ['?limit=0', '?limit=201', '?limit=abc', '?cursor=not-a-cursor']) {
    const bad = await list(owner, query, orgB);
    t.equal(bad.statusCode, 400, query);
    t.equal(json(bad).code, 'validation_failed');
  }
});

t.test('revoke: pending only, inside the addressed organization, admin invitations by the owner', async (t) => {
  const { invitation, token } = await sent(owner, 'to-revoke@example.test');
  const res = await revoke(owner, invitation.id);
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal((await preview(token)).statusCode, 404, 'the link stops working');
  t.equal(await statusOf(invitation.id), 'revoked');
  const twice = await revoke(owner, invitation.id);
  t.equal(twice.statusCode, 409);
  t.equal(json(twice).code, 'invitation_not_pending');

  const adminInvite = await sent(owner, 'admin-to-revoke@example.test', 'admin');
  const refused = await revoke(admin, adminInvite.invitation.id);
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'admin_invite_requires_owner');
  t.equal(await statusOf(adminInvite.invitation.id), 'pending');
  t.equal((await revoke(owner, adminInvite.invitation.id)).statusCode, 204);

  const other = await sent(owner, 'beta-only@example.test', 'member', orgB);
  for (const res of [await revoke(owner, other.invitation.id), await resend(owner, other.invitation.id)]) {
    t.equal(res.statusCode, 404, "an invitation of org B through org A's path");
    t.equal(json(res).code, 'invitation_not_found');
  }
  t.equal(await statusOf(other.invitation.id), 'pending', 'untouched');
  t.equal((await preview(other.token)).statusCode, 200);
  t.equal((await rowsFor('beta-only@example.test')).length, 1, 'no resent copy');

  for (const id of ['not-a-uuid', '6f1c1d9e-3f57-4f0c-9a59-8d7f6c1b2a30']) {
    t.equal((await revoke(owner, id)).statusCode, 404);
    t.equal((await resend(owner, id)).statusCode, 404);
  }
});

t.test('resend: earlier links revoked, a fresh seven-day link works', async (t) => {
  const first = await sent(owner, 'resend-me@example.test', 'viewer');
  const { result, token } = await emailedLink(mailbox, 'resend-me@example.test', '/invite/', () => resend(owner, first.invitation.id));
  tokens.push(token);
  t.equal(result.statusCode, 201);
  const fresh = json(result);
  t.not(fresh.id, first.invitation.id);
  t.match(fresh, { email: 'resend-me@example.test', role: 'viewer', status: 'pending', invited_by: owner.id });
  t.ok(Date.parse(fresh.expires_at) > Date.parse(first.invitation.expires_at), 'a new seven days');
  t.equal((await preview(first.token)).statusCode, 404, 'old link revoked');
  t.equal((await preview(token)).statusCode, 200, 'new link works');
  t.equal(await statusOf(first.invitation.id), 'revoked');

  // Resend revives expired and revoked invitations too.
  await app.db.$executeRaw`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = ${fresh.id}::uuid`;
  const revived = await resend(owner, fresh.id);
  t.equal(revived.statusCode, 201);
  t.equal((await revoke(owner, json(revived).id)).statusCode, 204);
  t.equal((await resend(owner, json(revived).id)).statusCode, 201);
  t.equal(
    await app.db.invitation.count({ where: { email: 'resend-me@example.test', revokedAt: null, acceptedAt: null } }),
    2,
    'one pending, one expired',
  );

  const adminInvite = await sent(owner, 'admin-resend@example.test', 'admin');
  const refused = await resend(admin, adminInvite.invitation.id);
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'admin_invite_requires_owner');
  t.equal((await rowsFor('admin-resend@example.test')).length, 1);
  const memberInvite = await sent(owner, 'member-resend@example.test');
  t.equal((await resend(admin, memberInvite.invitation.id)).statusCode, 201, 'admins resend non-admin invitations');

  const acceptedRow = await app.db.invitation.findFirstOrThrow({ where: { email: outsider.email, acceptedAt: { not: null } } });
  const accepted = await resend(owner, acceptedRow.id, orgB);
  t.equal(accepted.statusCode, 409);
  t.equal(json(accepted).code, 'invitation_accepted');

  // An address that became a member another way is not invited again.
  const stale = await app.db.$transaction((tx) =>
    issueInvitation(tx, {
      organization: { id: orgA, name: 'Acme' },
      email: viewer.email,
      role: 'member',
      invitedBy: owner,
      appUrl: 'http://x',
    }),
  );
  const member409 = await resend(owner, stale.id);
  t.equal(member409.statusCode, 409);
  t.equal(json(member409).code, 'already_member');

  const malformed = await app.inject({
    method: 'POST',
    url: `${base(orgA)}${memberInvite.invitation.id}/resend/`,
    headers: { ...owner.headers, 'content-type': 'application/json' },
    payload: '{"oops": ',
  });
  t.equal(malformed.statusCode, 400);
});

t.test('bad bodies are 400 problem+json and create nothing', async (t) => {
  const valid = { email: 'bad-body@example.test', role: 'member' };
  await rejectsBadBodies(t, app, { method: 'POST', url: base(orgA), headers: owner.headers }, valid, ['email', 'role']);
  for (const payload of [
    { email: 'not-an-email', role: 'member' },
    { email: valid.email },
    { role: 'member' },
    { ...valid, role: 'superuser' },
  ]) {
    const res = await invite(owner, payload);
    t.equal(res.statusCode, 400, JSON.stringify(payload));
    t.equal(json(res).code, 'validation_failed');
  }
  t.equal((await rowsFor(valid.email)).length, 0);
});

t.test('sending is rate-limited per user', async (t) => {
  const limited = await buildTestApp(t, { RATE_LIMIT_INVITATIONS_PER_DAY: '2' });
  const box = await startMailbox(t);
  const { admin: boss, organizationId } = await setupInstallation(limited.app, box);
  const send = (email: string) =>
    limited.app.inject({ method: 'POST', url: base(organizationId), headers: boss.headers, payload: { email, role: 'member' } });
  t.equal((await send('r1@example.test')).statusCode, 201);
  t.equal((await send('r2@example.test')).statusCode, 201);
  const third = await send('r3@example.test');
  t.equal(third.statusCode, 429);
  t.ok(third.headers['retry-after']);
  t.equal(await limited.app.db.invitation.count({ where: { email: 'r3@example.test' } }), 0);
});

t.test('no link token reaches the log', async (t) => {
  t.ok(tokens.length > 10);
  const all = logs.join('\n');
  for (const token of tokens) t.notOk(all.includes(token), 'token absent from the log');
});
