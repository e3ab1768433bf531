// The console's other pages: workspaces (counts, never contents), invitations, automation runs, password reset.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { ADMIN, createUser, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import { consoleSession, FORM } from '../helpers/console.js';

const { app } = await buildTestApp(t);
const { organizationId } = await setupInstallation(app, await startMailbox(t));
const { cookie, get, csrf } = await consoleSession(app);

t.test('navigation links carry the names of the pages', async (t) => {
  const res = await get('/admin/');
  for (const name of ['Dashboard', 'Users', 'Workspaces', 'Invitations', 'Email outbox', 'Automation runs', 'Audit log'])
    t.match(res.body, `>${name}</a>`);
});

t.test('workspaces: escaped names, search, status filter and counts without contents', async (t) => {
  await app.db.organization.update({ where: { id: organizationId }, data: { name: '<script>alert("ws")</script>' } });
  const company = await app.db.company.create({ data: { organizationId, name: 'Secret Customer Ltd' } });
  const deal = await app.db.deal.create({ data: { organizationId, companyId: company.id, title: 'Secret Deal Title', position: 0 } });
  for (const title of ['Secret Task One', 'Secret Task Two']) {
    await app.db.task.create({ data: { organizationId, companyId: company.id, dealId: deal.id, title } });
  }
  await app.db.organization.create({
    data: { name: 'Handoff Co', slug: 'handoff-co', status: 'pending_owner', ownerEmail: 'boss@example.test' },
  });
  const list = await get('/admin/organizations/?search=acme');
  t.ok(list.body.includes('&lt;script&gt;alert(&quot;ws&quot;)&lt;/script&gt;'));
  t.notOk(list.body.includes('<script>alert'));
  t.notOk(list.body.includes('Handoff Co'), 'search filters');
  const pending = await get('/admin/organizations/?status=pending_owner');
  t.match(pending.body, /Handoff Co/);
  t.match(pending.body, /pending handoff/);
  const detail = await get(`/admin/organizations/${organizationId}/`);
  t.match(detail.body, /<th scope="row">Companies<\/th><td>1<\/td>/);
  t.match(detail.body, /<th scope="row">Deals<\/th><td>1<\/td>/);
  t.match(detail.body, /<th scope="row">Tasks<\/th><td>2<\/td>/);
  for (const secret of ['Secret Customer Ltd', 'Secret Deal Title', 'Secret Task'])
    t.notOk(detail.body.includes(secret), 'never the contents');
  t.ok(company.id);
  const stored = await app.db.import.create({
    data: {
      organizationId,
      kind: 'contacts',
      mode: 'create',
      status: 'running',
      fields: ['first_name'],
      delimiter: ',',
      totalRows: 7,
      processedRows: 3,
      created: 2,
      failedRows: 1,
    },
  });
  await app.db.importChunk.create({ data: { importId: stored.id, organizationId, seq: 0, text: 'first_name\nSecret Import Cell\n' } });
  const withImport = await get(`/admin/organizations/${organizationId}/`);
  t.match(
    withImport.body,
    /<td>contacts<\/td><td>running<\/td><td>7<\/td><td>3<\/td><td>2<\/td><td>0<\/td><td>1<\/td>/,
    'import counts and status',
  );
  t.notOk(withImport.body.includes('Secret Import Cell'), 'never the file');
  t.equal((await get('/admin/organizations/00000000-0000-0000-0000-000000000000/')).statusCode, 404);
});

t.test('invitations: derived status and filter', async (t) => {
  const future = new Date(Date.now() + 86_400_000);
  await app.db.invitation.create({
    data: { organizationId, email: 'pending@example.test', role: 'member', tokenHash: 'a'.repeat(64), expiresAt: future },
  });
  await app.db.invitation.create({
    data: { organizationId, email: 'old@example.test', role: 'member', tokenHash: 'b'.repeat(64), expiresAt: new Date(Date.now() - 1000) },
  });
  const pending = await get('/admin/invitations/?status=pending');
  t.match(pending.body, /pending@example\.test/);
  t.notMatch(pending.body, /old@example\.test/);
  t.match((await get('/admin/invitations/?status=expired')).body, /old@example\.test<\/td><td>member<\/td><td>expired/);
});

t.test('automation runs: failed first, error messages escaped', async (t) => {
  const automation = await app.db.automation.create({
    data: { organizationId, name: 'Notify', trigger: 'company_created', actionType: 'webhook', actionConfig: {} },
  });
  await app.db.automationRun.create({
    data: {
      organizationId,
      automationId: automation.id,
      trigger: 'company_created',
      status: 'failed',
      payload: {},
      errorMessage: '<b onmouseover=x>boom</b>',
      createdAt: new Date(Date.now() - 3_600_000),
    },
  });
  await app.db.automationRun.create({
    data: { organizationId, automationId: automation.id, trigger: 'company_created', status: 'success', payload: {} },
  });
  const res = await get('/admin/automation-runs/');
  t.ok(res.body.includes('&lt;b onmouseover=x&gt;boom&lt;/b&gt;'));
  t.ok(res.body.indexOf('<td>failed</td>') < res.body.indexOf('<td>success</td>'), 'failed first');
  t.notMatch((await get('/admin/automation-runs/?status=success')).body, /<td>failed<\/td>/);
});

t.test('send password reset queues the ordinary reset request with an audit row', async (t) => {
  const user = await createUser(app);
  const res = await app.inject({
    method: 'POST',
    url: `/admin/users/${user.id}/send-password-reset/`,
    headers: { ...FORM, cookie },
    payload: `_csrf=${csrf}`,
  });
  t.equal(res.statusCode, 303);
  t.equal(await app.db.auditLog.count({ where: { action: 'user.password_reset_sent', targetId: user.id } }), 1);
  const queued =
    (await app.db.passwordResetRequest.count({ where: { email: user.email } })) +
    (await app.db.passwordResetToken.count({ where: { userId: user.id } }));
  t.ok(queued >= 1, 'a reset request or link exists');
});

t.test('the OpenAPI document says the console exists but does not describe its routes', async (t) => {
  const doc = app.swagger() as { info: { description: string }; paths: Record<string, unknown> };
  t.match(doc.info.description, /console for operators \(staff users\) is served at `\/admin\/`/);
  t.notOk(Object.keys(doc.paths).some((path) => path.startsWith('/admin')));
});

t.test('Revoke on a pending invitation uses the API service: its link stops working, one audit row; twice is a 409 page', async (t) => {
  const invitation = await app.db.invitation.create({
    data: {
      organizationId,
      email: 'revoke-me@example.test',
      role: 'member',
      tokenHash: 'c'.repeat(64),
      expiresAt: new Date(Date.now() + 86_400_000),
    },
  });
  const list = await get('/admin/invitations/?status=pending');
  t.ok(list.body.includes(`/admin/invitations/${invitation.id}/revoke/`));
  const revoke = () =>
    app.inject({
      method: 'POST',
      url: `/admin/invitations/${invitation.id}/revoke/`,
      headers: { ...FORM, cookie },
      payload: `_csrf=${csrf}`,
    });
  t.equal((await revoke()).statusCode, 303);
  t.ok((await app.db.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).revokedAt);
  t.equal(await app.db.auditLog.count({ where: { action: 'invitation.revoked', targetId: invitation.id } }), 1);
  const again = await revoke();
  t.equal(again.statusCode, 409);
  t.match(again.body, /only a pending invitation can be revoked/);
  t.equal(await app.db.auditLog.count({ where: { action: 'invitation.revoked', targetId: invitation.id } }), 1);
});

t.test('a pending handoff: Resend owner invitation and Cancel workspace through the provisioning services, audited', async (t) => {
  const pending = await app.db.organization.create({
    data: { name: 'Handoff Two', slug: 'handoff-two', status: 'pending_owner', ownerEmail: 'owner2@example.test' },
  });
  const detail = await get(`/admin/organizations/${pending.id}/`);
  t.match(detail.body, />Resend owner invitation</);
  t.match(detail.body, />Cancel workspace</);
  const action = (path: string) =>
    app.inject({
      method: 'POST',
      url: `/admin/organizations/${pending.id}/${path}/`,
      headers: { ...FORM, cookie },
      payload: `_csrf=${csrf}`,
    });
  const resent = await action('resend-owner-invitation');
  t.equal(resent.statusCode, 303, resent.body);
  t.equal(await app.db.invitation.count({ where: { organizationId: pending.id, role: 'owner', revokedAt: null } }), 1);
  t.equal(await app.db.auditLog.count({ where: { action: 'workspace.owner_invitation_resent', organizationId: pending.id } }), 1);
  t.equal((await action('cancel')).statusCode, 303);
  t.equal((await app.db.organization.findUniqueOrThrow({ where: { id: pending.id } })).status, 'cancelled');
  t.equal(await app.db.auditLog.count({ where: { action: 'workspace.cancelled', organizationId: pending.id } }), 1);
  t.equal((await action('cancel')).statusCode, 404, 'no longer a pending handoff');
});

t.test('installation admins: administrators, pending invitations, and Invite through the API service', async (t) => {
  const before = await get('/admin/installation-admins/');
  t.equal(before.statusCode, 200);
  t.match(before.body, />Installation admins<\/a>/, 'in the navigation');
  t.match(before.body, /<label for="email">Email<\/label>/);
  t.match(before.body, /<button type="submit">Invite<\/button>/);
  t.match(before.body, new RegExp(`<td>${ADMIN.username}</td>`));
  const invite = (email: string, token = csrf) =>
    app.inject({
      method: 'POST',
      url: '/admin/installation-admins/invite/',
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ _csrf: token, email }).toString(),
    });
  const sent = await invite('new-admin@example.test');
  t.equal(sent.statusCode, 303);
  const after = await get('/admin/installation-admins/');
  t.match(after.body, /<td>new-admin@example.test<\/td>/, 'listed as pending');
  const row = await app.db.installationAdminInvitation.findFirstOrThrow({ where: { email: 'new-admin@example.test' } });
  t.equal(await app.db.emailOutbox.count({ where: { toAddress: 'new-admin@example.test' } }), 1, 'mailed through the outbox');
  t.equal(await app.db.auditLog.count({ where: { action: 'installation_admin.invited', targetId: row.id } }), 1, 'audited once');
  t.equal((await invite('not an email')).statusCode, 400, 'bad address: a clear page');
  t.equal((await invite('<b>x</b>@example.test"')).statusCode, 400);
  t.equal((await invite('third@example.test', 'wrong')).statusCode, 403, 'CSRF checked');
  t.equal(await app.db.installationAdminInvitation.count(), 1, 'nothing else created');

  const staff = await createUser(app);
  await app.db.user.update({ where: { id: staff.id }, data: { isStaff: true } });
  const staffLogin = await app.inject({
    method: 'POST',
    url: '/admin/login/',
    headers: FORM,
    payload: new URLSearchParams({ username: staff.username, password: staff.password }).toString(),
  });
  const staffCookie = `crm_admin_session=${staffLogin.cookies.find((c) => c.name === 'crm_admin_session')!.value}`;
  const staffCsrf = /name="_csrf" value="([^"]+)"/.exec(
    (await app.inject({ method: 'GET', url: '/admin/', headers: { cookie: staffCookie } })).body,
  )![1]!;
  const refused = await app.inject({
    method: 'POST',
    url: '/admin/installation-admins/invite/',
    headers: { ...FORM, cookie: staffCookie },
    payload: new URLSearchParams({ _csrf: staffCsrf, email: 'x@example.test' }).toString(),
  });
  t.equal(refused.statusCode, 403, 'staff who is not an installation administrator may look, not invite');
  t.match(refused.headers['content-type'], /^text\/html/);
  t.equal(await app.db.installationAdminInvitation.count(), 1);
});
