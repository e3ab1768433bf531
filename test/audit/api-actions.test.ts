// The audit log of API actions: each audited action driven through HTTP writes exactly one row (actor, action,
// target, workspace, client IP) in its own transaction, a refused action writes none, no row holds a secret, and the
// table refuses UPDATE and DELETE.
import t, { type Test } from 'tap';
import pg from 'pg';
import { buildTestApp, json, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { linkIn, startMailbox, tokenOf } from '../helpers/mailbox.js';
import { ADMIN, createUser, setupInstallation, signIn, type SignedIn } from '../helpers/fixtures.js';
import { emailedLink } from '../invitations/links.js';

const { app, databaseUrl } = await buildTestApp(t, { RATE_LIMIT_INVITATIONS_PER_DAY: '1000' });
const mailbox = await startMailbox(t);
/** Every token and password this test uses: no audit row may contain any of them. */
const secrets: string[] = [TEST_SETUP_TOKEN, ADMIN.password, mailbox.password];

interface Row {
  actorType: string;
  actorUserId: string | null;
  actorUsername: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  organizationId: string | null;
  clientIp: string | null;
}

let ipCounter = 0;
const nextIp = () => `10.9.0.${++ipCounter}`;
const auditRows = () => app.db.auditLog.findMany({ orderBy: { createdAt: 'asc' } });

/**
 * Runs `action` from a fresh client address and returns the audit rows it added (expected: exactly one, from that
 * address unless `ip` is false).
 */
async function audited<R extends { statusCode: number; body: string }>(
  t: Test,
  expected: Partial<Row>,
  action: (ip: string) => Promise<R>,
  status: number,
): Promise<R> {
  const before = (await auditRows()).length;
  const ip = nextIp();
  const res = await action(ip);
  t.equal(res.statusCode, status, `${expected.action}: ${res.body}`);
  const added = (await auditRows()).slice(before);
  t.equal(added.length, 1, `exactly one row for ${expected.action}`);
  t.match(added[0], { ...expected, clientIp: ip });
  return res;
}

/** Runs a refused `action` and checks that it wrote no row. */
async function notAudited(t: Test, action: () => Promise<{ statusCode: number }>, status: number, what: string) {
  const before = (await auditRows()).length;
  t.equal((await action()).statusCode, status, what);
  t.equal((await auditRows()).length, before, `${what}: no audit row`);
}

const asUser = (user: { id: string; username: string }) => ({ actorType: 'user', actorUserId: user.id, actorUsername: user.username });
const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who: SignedIn | null, ip: string, payload?: unknown) =>
  app.inject({
    method,
    url: `/api/v1${url}`,
    remoteAddress: ip,
    ...(who ? { headers: who.headers } : {}),
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

let admin: SignedIn;
let orgA: string;

t.test('setup.completed: actor setup, the first workspace, the client address', async (t) => {
  const ip = nextIp();
  const original = app.inject.bind(app);
  // setupInstallation posts without an address; route it through this test's address for the row to name.
  (app as { inject: unknown }).inject = (opts: object) => original({ ...opts, remoteAddress: ip } as never);
  try {
    ({ admin, organizationId: orgA } = await setupInstallation(app, mailbox));
  } finally {
    (app as { inject: unknown }).inject = original;
  }
  secrets.push(admin.access, admin.refresh);
  const rows = await auditRows();
  t.equal(rows.length, 1);
  t.match(rows[0], {
    actorType: 'setup',
    actorUserId: null,
    actorUsername: null,
    action: 'setup.completed',
    targetType: 'user',
    targetId: admin.id,
    organizationId: orgA,
    clientIp: ip,
  });
});

t.test('workspaces: created, owner invitation resent, cancelled, deleted', async (t) => {
  const created = await audited(
    t,
    { ...asUser(admin), action: 'workspace.created', targetType: 'organization' },
    (ip) =>
      emailedLink(mailbox, 'future.owner@example.test', '/invite/', () =>
        api('POST', '/organizations/', admin, ip, { name: 'Handoff', owner_email: 'future.owner@example.test' }),
      ).then((r) => {
        secrets.push(r.token);
        return r.result;
      }),
    201,
  );
  const pendingId = json(created).id as string;
  t.match((await auditRows()).at(-1), { targetId: pendingId, organizationId: pendingId });

  await audited(
    t,
    {
      ...asUser(admin),
      action: 'workspace.owner_invitation_resent',
      targetType: 'organization',
      targetId: pendingId,
      organizationId: pendingId,
    },
    (ip) =>
      emailedLink(mailbox, 'future.owner@example.test', '/invite/', () =>
        api('POST', `/organizations/provisioning/${pendingId}/`, admin, ip, {}),
      ).then((r) => {
        secrets.push(r.token);
        return r.result;
      }),
    200,
  );
  await audited(
    t,
    { ...asUser(admin), action: 'workspace.cancelled', targetType: 'organization', targetId: pendingId, organizationId: pendingId },
    (ip) => api('DELETE', `/organizations/provisioning/${pendingId}/`, admin, ip),
    204,
  );
  await notAudited(t, () => api('DELETE', `/organizations/provisioning/${pendingId}/`, admin, nextIp()), 404, 'cancelling twice');

  const own = await audited(
    t,
    { ...asUser(admin), action: 'workspace.created', targetType: 'organization' },
    (ip) => api('POST', '/organizations/', admin, ip, { name: 'Doomed', owner_email: ADMIN.email }),
    201,
  );
  const doomed = json(own).id as string;
  const member = await createUser(app, { membership: { organizationId: doomed, role: 'admin' } });
  await notAudited(t, () => api('DELETE', `/organizations/${doomed}/`, member, nextIp()), 403, 'an admin deleting the workspace');
  await audited(
    t,
    { ...asUser(admin), action: 'workspace.deleted', targetType: 'organization', targetId: doomed, organizationId: doomed },
    (ip) => api('DELETE', `/organizations/${doomed}/`, admin, ip),
    204,
  );
});

t.test('invitations: sent, resent, revoked, accepted; refused ones write nothing', async (t) => {
  const member = await createUser(app, { username: 'mia', membership: { organizationId: orgA, role: 'member' } });
  await notAudited(
    t,
    () => api('POST', `/organizations/${orgA}/invitations/`, member, nextIp(), { email: 'x@example.test', role: 'member' }),
    403,
    'a member inviting',
  );

  let token = '';
  const sent = await audited(
    t,
    { ...asUser(admin), action: 'invitation.sent', targetType: 'invitation', organizationId: orgA },
    (ip) =>
      emailedLink(mailbox, 'guest@example.test', '/invite/', () =>
        api('POST', `/organizations/${orgA}/invitations/`, admin, ip, { email: 'guest@example.test', role: 'member' }),
      ).then((r) => {
        token = r.token;
        secrets.push(r.token);
        return r.result;
      }),
    201,
  );
  const firstId = json(sent).id as string;
  t.equal((await auditRows()).at(-1)?.targetId, firstId);
  await notAudited(
    t,
    () => api('POST', `/organizations/${orgA}/invitations/`, admin, nextIp(), { email: 'guest@example.test', role: 'member' }),
    409,
    'a second pending invitation',
  );

  const resent = await audited(
    t,
    { ...asUser(admin), action: 'invitation.resent', targetType: 'invitation', organizationId: orgA },
    (ip) =>
      emailedLink(mailbox, 'guest@example.test', '/invite/', () =>
        api('POST', `/organizations/${orgA}/invitations/${firstId}/resend/`, admin, ip),
      ).then((r) => {
        token = r.token;
        secrets.push(r.token);
        return r.result;
      }),
    201,
  );
  const secondId = json(resent).id as string;
  t.equal((await auditRows()).at(-1)?.targetId, secondId);
  await notAudited(
    t,
    () => api('DELETE', `/organizations/${orgA}/invitations/${firstId}/`, admin, nextIp()),
    409,
    'revoking a revoked invitation',
  );

  const guestPassword = 'guest-secret-password-1';
  secrets.push(guestPassword);
  const accepted = await audited(
    t,
    {
      action: 'invitation.accepted',
      targetType: 'invitation',
      targetId: secondId,
      organizationId: orgA,
      actorType: 'user',
      actorUsername: 'guest',
    },
    (ip) => api('POST', `/invitations/${token}/accept/`, null, ip, { username: 'guest', password: guestPassword, display_name: 'Guest' }),
    201,
  );
  const guestTokens = json(accepted).tokens as { access: string; refresh: string };
  secrets.push(guestTokens.access, guestTokens.refresh);
  const guest = await app.db.user.findUniqueOrThrow({ where: { username: 'guest' } });
  t.equal((await auditRows()).at(-1)?.actorUserId, guest.id);
  await notAudited(
    t,
    () => api('POST', `/invitations/${token}/accept/`, null, nextIp(), { username: 'guest2', password: guestPassword, display_name: 'G' }),
    404,
    'a replayed link',
  );

  const third = await emailedLink(mailbox, 'later@example.test', '/invite/', () =>
    api('POST', `/organizations/${orgA}/invitations/`, admin, nextIp(), { email: 'later@example.test', role: 'viewer' }),
  );
  secrets.push(third.token);
  const thirdId = json(third.result).id as string;
  await audited(
    t,
    { ...asUser(admin), action: 'invitation.revoked', targetType: 'invitation', targetId: thirdId, organizationId: orgA },
    (ip) => api('DELETE', `/organizations/${orgA}/invitations/${thirdId}/`, admin, ip),
    204,
  );
});

t.test('members: role changed, ownership transferred, removed', async (t) => {
  const bob = await createUser(app, { username: 'bob', membership: { organizationId: orgA, role: 'member' } });
  const viewer = await createUser(app, { username: 'val', membership: { organizationId: orgA, role: 'viewer' } });
  const membershipOf = async (userId: string) => (await app.db.membership.findFirstOrThrow({ where: { userId, organizationId: orgA } })).id;
  const bobM = await membershipOf(bob.id);
  await notAudited(
    t,
    () => api('PATCH', `/organizations/${orgA}/members/${bobM}/`, viewer, nextIp(), { role: 'admin' }),
    403,
    'a viewer changing a role',
  );
  await audited(
    t,
    { ...asUser(admin), action: 'member.role_changed', targetType: 'membership', targetId: bobM, organizationId: orgA },
    (ip) => api('PATCH', `/organizations/${orgA}/members/${bobM}/`, admin, ip, { role: 'admin' }),
    200,
  );
  const valM = await membershipOf(viewer.id);
  await audited(
    t,
    { ...asUser(admin), action: 'member.removed', targetType: 'membership', targetId: valM, organizationId: orgA },
    (ip) => api('DELETE', `/organizations/${orgA}/members/${valM}/`, admin, ip),
    204,
  );

  const beta = json(await api('POST', '/organizations/', admin, nextIp(), { name: 'Beta', owner_email: ADMIN.email })).id as string;
  const heir = await createUser(app, { username: 'heir', membership: { organizationId: beta, role: 'member' } });
  const heirM = (await app.db.membership.findFirstOrThrow({ where: { userId: heir.id, organizationId: beta } })).id;
  await audited(
    t,
    { ...asUser(admin), action: 'ownership.transferred', targetType: 'membership', targetId: heirM, organizationId: beta },
    (ip) => api('PATCH', `/organizations/${beta}/members/${heirM}/`, admin, ip, { role: 'owner' }),
    200,
  );
});

t.test('installation admins: invited, accepted', async (t) => {
  const plain = await createUser(app, { username: 'plain' });
  await notAudited(
    t,
    () => api('POST', '/organizations/installation-admin-invitations/', plain, nextIp(), { email: 'adm2@example.test' }),
    403,
    'a non-admin inviting',
  );
  let token = '';
  const invited = await audited(
    t,
    { ...asUser(admin), action: 'installation_admin.invited', targetType: 'installation_admin_invitation', organizationId: null },
    (ip) =>
      emailedLink(mailbox, 'adm2@example.test', '/installation-admin-invite/', () =>
        api('POST', '/organizations/installation-admin-invitations/', admin, ip, { email: 'adm2@example.test' }),
      ).then((r) => {
        token = r.token;
        secrets.push(r.token);
        return r.result;
      }),
    201,
  );
  const invitationId = json(invited).id as string;
  const adm2 = await createUser(app, { username: 'adm2', email: 'adm2@example.test' });
  secrets.push(adm2.access, adm2.refresh, adm2.password);
  await audited(
    t,
    { ...asUser(adm2), action: 'installation_admin.accepted', targetType: 'installation_admin_invitation', targetId: invitationId },
    (ip) => api('POST', `/installation-admin-invitations/${token}/accept/`, adm2, ip, {}),
    201,
  );
});

t.test('account: password changed, password reset, email changed, deleted', async (t) => {
  const carl = await createUser(app, { username: 'carl', password: 'carl-first-password' });
  secrets.push(carl.password, carl.access, carl.refresh);
  await notAudited(
    t,
    () =>
      api('POST', '/auth/me/password/', carl, nextIp(), { current_password: 'wrong-password-here', new_password: 'carl-second-password' }),
    400,
    'a wrong current password',
  );
  secrets.push('carl-second-password');
  await audited(
    t,
    { ...asUser(carl), action: 'account.password_changed', targetType: 'user', targetId: carl.id, organizationId: null },
    (ip) => api('POST', '/auth/me/password/', carl, ip, { current_password: carl.password, new_password: 'carl-second-password' }),
    200,
  );

  const skip = mailbox.messages.length;
  t.equal((await api('POST', '/auth/password-reset/', null, nextIp(), { email: carl.email })).statusCode, 200);
  const mail = await mailbox.waitFor((m) => m.to.includes(carl.email) && mailbox.messages.indexOf(m) >= skip);
  const link = linkIn(mail, '/reset-password/');
  secrets.push(tokenOf(link), 'carl-third-password');
  const path = link.split('/reset-password/')[1]!.replace(/\/+$/, '');
  await audited(
    t,
    { ...asUser(carl), action: 'account.password_reset', targetType: 'user', targetId: carl.id },
    (ip) => api('POST', `/auth/password-reset/${path}/`, null, ip, { new_password: 'carl-third-password' }),
    200,
  );
  await notAudited(
    t,
    () => api('POST', `/auth/password-reset/${path}/`, null, nextIp(), { new_password: 'carl-fourth-password' }),
    404,
    'a used reset link',
  );

  const carl3 = await signIn(app, 'carl', 'carl-third-password');
  secrets.push(carl3.access, carl3.refresh);
  const change = await emailedLink(mailbox, 'carl.new@example.test', '/confirm-email/', () =>
    api('PATCH', '/auth/me/settings/', carl3, nextIp(), { email: 'carl.new@example.test', current_password: 'carl-third-password' }),
  );
  secrets.push(change.token);
  t.equal(change.result.statusCode, 200);
  await audited(
    t,
    { ...asUser(carl), action: 'account.email_changed', targetType: 'user', targetId: carl.id },
    (ip) => api('POST', `/auth/email-change/${change.token}/`, null, ip),
    200,
  );

  await notAudited(
    t,
    () => api('POST', '/auth/me/delete/', carl3, nextIp(), { password: 'wrong-password-here', confirmation: 'DELETE' }),
    400,
    'a wrong password at deletion',
  );
  await audited(
    t,
    { ...asUser(carl), action: 'account.deleted', targetType: 'user', targetId: carl.id },
    (ip) => api('POST', '/auth/me/delete/', carl3, ip, { password: 'carl-third-password', confirmation: 'DELETE' }),
    204,
  );
});

t.test('console sessions end with a password change, a reset and a deletion', async (t) => {
  const dan = await createUser(app, { username: 'dan', password: 'dan-first-password' });
  const addSession = (userId: string) =>
    app.db.adminSession.create({
      data: { idHash: `${userId.replace(/-/g, '')}${'0'.repeat(32)}`.slice(0, 64), userId, expiresAt: new Date(Date.now() + 3600_000) },
    });
  const sessions = (userId: string) => app.db.adminSession.count({ where: { userId } });
  await addSession(dan.id);
  t.equal(
    (
      await api('POST', '/auth/me/password/', dan, nextIp(), {
        current_password: 'dan-first-password',
        new_password: 'dan-second-password',
      })
    ).statusCode,
    200,
  );
  t.equal(await sessions(dan.id), 0, 'password change');
  await addSession(dan.id);
  const skip = mailbox.messages.length;
  await api('POST', '/auth/password-reset/', null, nextIp(), { email: dan.email });
  const mail = await mailbox.waitFor((m) => m.to.includes(dan.email) && mailbox.messages.indexOf(m) >= skip);
  const path = linkIn(mail, '/reset-password/').split('/reset-password/')[1]!.replace(/\/+$/, '');
  t.equal((await api('POST', `/auth/password-reset/${path}/`, null, nextIp(), { new_password: 'dan-third-password' })).statusCode, 200);
  t.equal(await sessions(dan.id), 0, 'password reset');
  await addSession(dan.id);
  const dan3 = await signIn(app, 'dan', 'dan-third-password');
  t.equal(
    (await api('POST', '/auth/me/delete/', dan3, nextIp(), { password: 'dan-third-password', confirmation: 'DELETE' })).statusCode,
    204,
  );
  t.equal(await sessions(dan.id), 0, 'deletion');
});

t.test('no audit row holds a secret, in any column', async (t) => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const { rows } = await client.query<Record<string, unknown>>('SELECT * FROM audit_log');
  t.ok(rows.length >= 18, `${rows.length} rows scanned`);
  const leaks = rows.flatMap((row) =>
    Object.entries(row).flatMap(([column, value]) =>
      secrets.filter((secret) => secret.length >= 8 && String(value ?? '').includes(secret)).map(() => column),
    ),
  );
  t.same(leaks, [], 'no token or password in any column');
});

t.test('the table refuses UPDATE and DELETE, even from the database owner', async (t) => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const before = (await client.query('SELECT count(*)::int AS n FROM audit_log')).rows[0].n as number;
  await t.rejects(client.query(`UPDATE audit_log SET action = 'account.deleted'`), /append-only/);
  await t.rejects(client.query('DELETE FROM audit_log'), /append-only/);
  t.equal((await client.query('SELECT count(*)::int AS n FROM audit_log')).rows[0].n, before, 'every row still there');
  t.equal((await client.query(`SELECT count(*)::int AS n FROM audit_log WHERE action = 'setup.completed'`)).rows[0].n, 1, 'unchanged');
});
