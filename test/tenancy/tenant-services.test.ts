// Every tenant service, called with workspace A's tenant and workspace B's ids, answers 404 and leaves B untouched.
import t from 'tap';
import { bindTenant } from '../../src/db/tenant.js';
import { buildTestApp } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { deleteView, getView, listViews, updateView } from '../../src/modules/views/service.js';

const { app } = await buildTestApp(t);
const { db, services } = app;
const [orgA, orgB] = await Promise.all(['svc-a', 'svc-b'].map((slug) => db.organization.create({ data: { name: slug, slug } })));
const owner = await createUser(app, { membership: { organizationId: orgA!.id, role: 'owner' } });
await db.membership.create({ data: { organizationId: orgB!.id, userId: owner.id, role: 'owner' } });
// One non-owner member in each workspace: the membership the member service is tried on.
await createUser(app, { membership: { organizationId: orgA!.id, role: 'viewer' } });
await createUser(app, { membership: { organizationId: orgB!.id, role: 'member' } });
const audit = { actor: { type: 'user' as const, userId: owner.id, username: owner.username }, ip: '127.0.0.1' };
const actor = { id: owner.id, username: owner.username, email: owner.email, isSuperuser: false, tokenVersion: 0 };

/** One row of every tenant table in `organizationId`. */
async function seed(organizationId: string, prefix: string) {
  const invitation = await db.invitation.create({
    data: {
      organizationId,
      email: `${prefix}-invitee@example.test`,
      role: 'member',
      tokenHash: `${prefix}-hash`.padEnd(64, '0'),
      invitedById: owner.id,
      expiresAt: new Date(Date.now() + 86_400_000),
    },
  });
  const account = await db.emailAccount.create({
    data: { organizationId, name: `${prefix} SMTP`, host: 'smtp.example.test', port: 587, username: 'u', fromEmail: 'crm@example.test' },
  });
  const automation = await db.automation.create({
    data: {
      organizationId,
      name: `${prefix} rule`,
      trigger: 'company_created',
      actionType: 'webhook',
      actionConfig: { url: 'https://hooks.example.test/x' },
    },
  });
  const membership = await db.membership.findFirstOrThrow({ where: { organizationId, role: { not: 'owner' } } });
  const view = await db.savedView.create({
    data: { organizationId, name: `${prefix} view`, object: 'companies', visibility: 'workspace', createdBy: owner.id },
  });
  return { invitation, account, automation, membership, view };
}
const a = await seed(orgA!.id, 'a');
const b = await seed(orgB!.id, 'b');

const snapshotOfB = async () => ({
  memberships: await db.membership.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  invitations: await db.invitation.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  accounts: await db.emailAccount.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  automations: await db.automation.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  runs: await db.automationRun.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  views: await db.savedView.findMany({ where: { organizationId: orgB!.id }, orderBy: { id: 'asc' } }),
  organization: await db.organization.findUnique({ where: { id: orgB!.id } }),
});
const untouchedB = await snapshotOfB();
// A's owner: the widest reach a tenant has.
const ownerOfA = await db.membership.findFirstOrThrow({ where: { organizationId: orgA!.id, userId: owner.id } });
const tenantA = bindTenant(db, app.pg, { membershipId: ownerOfA.id, role: 'owner', organization: orgA! });
const page = { limit: 100 };

t.test('members: B’s memberships are neither listed nor changed through A', async (t) => {
  const listed = await services.members.list(tenantA, page);
  t.notOk(
    listed.items.some((m) => m.id === b.membership.id),
    'not listed',
  );
  t.ok(listed.items.some((m) => m.id === a.membership.id));
  await t.rejects(services.members.updateRole(tenantA, b.membership.id, 'viewer', audit), { status: 404, code: 'member_not_found' });
  await t.rejects(services.members.remove(tenantA, b.membership.id, audit), { status: 404, code: 'member_not_found' });
});

t.test('invitations: B’s are neither listed, revoked nor resent through A', async (t) => {
  const listed = await services.invitations.list(tenantA, page);
  t.same(
    listed.items.map((i) => i.id),
    [a.invitation.id],
  );
  await t.rejects(services.invitations.revoke(tenantA, actor, b.invitation.id, audit), { status: 404, code: 'invitation_not_found' });
  await t.rejects(services.invitations.resend(tenantA, actor, b.invitation.id, audit), { status: 404, code: 'invitation_not_found' });
});

t.test('email accounts: B’s are neither listed, read, changed, deleted nor used through A', async (t) => {
  const listed = await services.emailAccounts.list(tenantA, page);
  t.same(
    listed.items.map((account) => account.id),
    [a.account.id],
  );
  const notFound = { status: 404, code: 'email_account_not_found' };
  await t.rejects(services.emailAccounts.get(tenantA, b.account.id), notFound);
  await t.rejects(services.emailAccounts.update(tenantA, b.account.id, { name: 'hijacked' }), notFound);
  await t.rejects(services.emailAccounts.delete(tenantA, b.account.id), notFound);
  await t.rejects(services.emailAccounts.test(tenantA, b.account.id, 'qa@example.test', app.log), notFound);
});

t.test('automations: B’s rules are neither listed, read, run nor their runs listed through A', async (t) => {
  const listed = await services.automations.list(tenantA, page);
  t.same(
    listed.items.map((rule) => rule.id),
    [a.automation.id],
  );
  const notFound = { status: 404, code: 'automation_not_found' };
  await t.rejects(services.automations.get(tenantA, b.automation.id), notFound);
  await t.rejects(services.automations.listRuns(tenantA, page, b.automation.id), notFound);
  await t.rejects(services.automations.test(tenantA, b.automation.id, {}, app.log), notFound);
  t.same((await services.automations.listRuns(tenantA, page)).items, []);
});

t.test('saved views: B’s are neither listed, read, changed nor deleted through A', async (t) => {
  const viewer = { userId: owner.id, audit };
  const listed = await listViews(tenantA, viewer, page);
  t.same(
    listed.items.map((view) => view.id),
    [a.view.id],
  );
  const notFound = { status: 404, code: 'view_not_found' };
  await t.rejects(getView(tenantA, viewer, b.view.id), notFound);
  await t.rejects(updateView(tenantA, viewer, b.view.id, { name: 'hijacked' }, undefined), notFound);
  await t.rejects(deleteView(tenantA, viewer, b.view.id, undefined), notFound);
});

t.test('organizations: deleting through A deletes A only; B is untouched by everything above', async (t) => {
  await services.organizations.delete(tenantA, audit);
  t.equal(await db.organization.count({ where: { id: orgA!.id } }), 0);
  t.same(await snapshotOfB(), untouchedB);
});
