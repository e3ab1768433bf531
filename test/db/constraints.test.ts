// The database itself refuses rows that break the model's rules, whatever code writes them.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';

t.test('database constraints', async (t) => {
  const { app } = await buildTestApp(t);
  const { organizationId } = await setupInstallation(app);
  const other = await createUser(app, { membership: { organizationId, role: 'admin' } });

  await t.rejects(
    app.db.membership.update({ where: { organizationId_userId: { organizationId, userId: other.id } }, data: { role: 'owner' } }),
    'a second owner in one organization',
  );
  await t.rejects(app.db.installationState.create({ data: { id: 2 } }), 'a second installation state row');
  await t.rejects(
    app.db.user.create({ data: { username: 'mixed', email: 'Mixed@Example.test', passwordHash: 'x' } }),
    'an email address that is not lower-cased',
  );
  await t.rejects(
    app.db.organization.create({ data: { name: 'Odd', slug: 'odd', isPersonal: true } }),
    'a personal workspace without its user',
  );
  const account = { name: 'SMTP', host: 'smtp.example.test', username: 'u', fromEmail: 'crm@example.test', organizationId };
  await t.rejects(app.db.emailAccount.create({ data: { ...account, port: 70000 } }), 'a port out of range');
  await t.rejects(
    app.db.emailAccount.create({ data: { ...account, port: 465, useTls: true, useSsl: true } }),
    'STARTTLS and implicit TLS together',
  );
  const elsewhere = await app.db.organization.create({ data: { name: 'Elsewhere', slug: 'elsewhere' } });
  const foreignCompany = await app.db.company.create({ data: { organizationId: elsewhere.id, name: 'Foreign' } });
  await t.rejects(
    app.db.contact.create({ data: { organizationId, companyId: foreignCompany.id, firstName: 'A', lastName: 'B' } }),
    'a contact whose company belongs to another organization (composite foreign key)',
  );

  const owners = await app.db.membership.count({ where: { organizationId, role: 'owner' } });
  t.equal(owners, 1, 'still exactly one owner');
});
