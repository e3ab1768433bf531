// The tenant-scoped client and page reader: queries with no organization filter at all (a forgotten `where`) still
// read, update, delete and create only the bound organization's rows; nested queries that could cross tenants are refused.
import t from 'tap';
import { scopeToOrganization, TenantScopeError } from '../../src/db/tenant-scope.js';
import { positionIn } from '../../src/db/page-query.js';
import { SEARCH_SCAN_ROWS } from '../../src/db/search-statistics.js';
import { scopePages } from '../../src/db/tenant-pages.js';
import type { ListPosition } from '../../src/lib/pagination.js';
import { scopeWrites } from '../../src/db/tenant-writes.js';
import { companyPage } from '../../src/modules/companies/record.js';
import { companyService } from '../../src/modules/companies/service.js';
import { contactService } from '../../src/modules/contacts/service.js';
import { buildTestApp } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const db = app.db;
const [orgA, orgB] = await Promise.all(['scope-a', 'scope-b'].map((slug) => db.organization.create({ data: { name: slug, slug } })));
const A = orgA!.id;
const B = orgB!.id;
const user = await createUser(app, { membership: { organizationId: A, role: 'member' } });
await db.membership.create({ data: { organizationId: B, userId: user.id, role: 'owner' } });

async function seed(organizationId: string, prefix: string) {
  const companies = await Promise.all(
    [1, 2, 3].map((n) => db.company.create({ data: { organizationId, name: `${prefix} company ${n}` } })),
  );
  const contact = await db.contact.create({
    data: { organizationId, companyId: companies[0]!.id, firstName: prefix, lastName: 'Contact' },
  });
  return { companies, contact };
}
const a = await seed(A, 'A');
const b = await seed(B, 'B');
const scoped = scopeToOrganization(db, A);
const bSnapshot = async () => ({
  companies: await db.company.findMany({ where: { organizationId: B }, orderBy: { id: 'asc' } }),
  contacts: await db.contact.findMany({ where: { organizationId: B }, orderBy: { id: 'asc' } }),
});
const untouchedB = await bSnapshot();

/** Prisma's "record to update/delete does not exist". */
const notFoundError = { code: 'P2025' };
const actor = { type: 'user' as const, id: user.id, name: 'scope-test' };

t.test('reads without any filter see only the bound organization', async (t) => {
  const companies = await scoped.company.findMany();
  t.same(
    companies.map((c) => c.organizationId),
    [A, A, A],
  );
  t.equal(await scoped.company.count(), 3);
  t.equal(await scoped.contact.count(), 1);
  t.same(
    (await scoped.membership.findMany()).map((m) => m.organizationId),
    [A],
  );
  t.equal(await scoped.company.findUnique({ where: { id: b.companies[0]!.id } }), null, "findUnique by another tenant's id");
  t.equal(await scoped.contact.findFirst({ where: { id: b.contact.id } }), null);
  t.same(await scoped.company.findMany({ where: { organizationId: B } }), [], 'an explicit foreign filter narrows, never widens');
  const grouped = await scoped.company.groupBy({ by: ['organizationId'], _count: true });
  t.same(grouped, [{ organizationId: A, _count: 3 }]);
  t.same(
    (await scoped.organization.findMany()).map((o) => o.id),
    [A],
    'the organization itself: only its own row',
  );
  t.equal(await scoped.organization.findUnique({ where: { id: B } }), null);
  const withContacts = await scoped.company.findMany({ include: { contacts: true } });
  t.same(
    withContacts.flatMap((c) => c.contacts.map((contact) => contact.id)),
    [a.contact.id],
    'included relations stay inside',
  );
});

const NEWEST = { sort: 'created_at', descending: true };

t.test('the raw-SQL page reader of a list, called with no filter, reads only its organization', async (t) => {
  const pages = scopePages(app.pg, A);
  const companies = await companyService.list(pages, {}, { order: NEWEST, limit: 100 });
  t.same(companies.map((row) => row.id).sort(), a.companies.map((c) => c.id).sort());
  const contacts = await contactService.list(pages, {}, { order: NEWEST, limit: 100 });
  t.same(
    contacts.map((row) => row.id),
    [a.contact.id],
  );
  t.same(await companyService.list(pages, { search: 'B company' }, { order: NEWEST, limit: 100 }), [], 'a term only the other tenant has');
  t.same(
    await contactService.list(pages, { equals: { company_id: b.companies[0]!.id } }, { order: NEWEST, limit: 100 }),
    [],
    "the other tenant's company",
  );
  for (const order of [NEWEST, { sort: 'name', descending: false }, { sort: 'updated_at', descending: false }]) {
    const [newestOfB] = await companyService.list(scopePages(app.pg, B), {}, { order, limit: 1 });
    const after = positionIn(companyPage, order, newestOfB!);
    const afterForeignCursor = await companyService.list(pages, {}, { order, after, limit: 100 });
    t.ok(
      afterForeignCursor.every((row) => a.companies.some((c) => c.id === row.id)),
      `a cursor from the other tenant (${order.sort})`,
    );
  }
});

t.test('a search reads in order, then from the index, and both only inside its organization', async (t) => {
  // A: its three companies, then rows without the term beyond the ordered part's reach; B: look-alikes that match
  // A's term, newer and older than A's rows, which a search of A must never see whichever part finds the matches.
  const fill = (organizationId: string, prefix: string, shift: number) =>
    app.pg.query(
      `INSERT INTO companies (id, organization_id, name, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2 || n, now() - make_interval(secs => n - $4), now() FROM generate_series(1, $3) AS n`,
      [organizationId, prefix, SEARCH_SCAN_ROWS * 2, shift],
    );
  await fill(A, 'A filler ', 0);
  await fill(B, 'A company look-alike ', SEARCH_SCAN_ROWS);
  const pages = scopePages(app.pg, A);
  // Older than every filler: the ordered part never reaches them, the GIN indexes do (trigrams, then pairs).
  const old = (organizationId: string, name: string) =>
    db.company.create({ data: { organizationId, name, createdAt: new Date(Date.now() - 86_400_000) } });
  const needles = [await old(A, 'Oldneedle of A'), await old(A, 'Qz of A')];
  await old(B, 'Oldneedle of B, a look-alike');
  await old(B, 'Qz of B, a look-alike');
  for (const [term, expected] of [
    ['a company', a.companies.map((c) => c.id)],
    ['oldneedle', [needles[0]!.id]],
    ['qz', [needles[1]!.id]],
  ] as const) {
    const seen: string[] = [];
    let after: ListPosition | undefined;
    for (let read = 0; read < 10; read++) {
      const rows = await companyService.list(pages, { search: term }, { order: NEWEST, limit: 2, after });
      seen.push(...rows.slice(0, 2).map((row) => row.id));
      after = rows.length > 2 ? positionIn(companyPage, NEWEST, rows[1]!) : undefined;
      if (!after) break;
    }
    t.same(seen.sort(), [...expected].sort(), `"${term}": A's matches, none of B's look-alikes`);
  }
  await db.company.deleteMany({ where: { name: { contains: 'of B, a look-alike' } } });
  await db.company.deleteMany({ where: { id: { in: needles.map((n) => n.id) } } });

  const lookAlike = await db.company.findFirstOrThrow({ where: { organizationId: B, name: 'A company look-alike 1' } });
  const foreign = { values: [lookAlike.createdAt.toISOString()], id: lookAlike.id };
  t.same(
    await companyService.list(pages, { search: 'look-alike' }, { order: NEWEST, after: foreign, limit: 100 }),
    [],
    'a cursor from B only positions',
  );
  t.same(
    await contactService.list(pages, { equals: { company_id: b.companies[0]!.id }, search: 'b' }, { order: NEWEST, limit: 100 }),
    [],
    "B's company as the sought filter",
  );
  await db.company.deleteMany({
    where: {
      OR: [
        { organizationId: A, name: { startsWith: 'A filler ' } },
        { organizationId: B, name: { startsWith: 'A company look-alike ' } },
      ],
    },
  });
  t.same(await bSnapshot(), untouchedB);
});

t.test('updates and deletes without a filter touch only the bound organization', async (t) => {
  const updated = await scoped.company.updateMany({ data: { lifecycleStage: 'customer' } });
  t.equal(updated.count, 3);
  await t.rejects(scoped.company.update({ where: { id: b.companies[1]!.id }, data: { name: 'hijacked' } }), notFoundError);
  await t.rejects(scoped.contact.delete({ where: { id: b.contact.id } }), notFoundError);
  await t.rejects(
    companyService.update({ db: scoped, organizationId: A, writes: scopeWrites(app.pg, A), actor }, b.companies[1]!.id, {
      name: 'hijacked',
    }),
    { status: 404, code: 'company_not_found' },
  );
  await t.rejects(companyService.remove({ db: scoped, organizationId: A, writes: scopeWrites(app.pg, A), actor }, b.companies[2]!.id), {
    status: 404,
    code: 'company_not_found',
  });
  await scoped.company.update({ where: { id: a.companies[1]!.id }, data: { organizationId: B, name: 'moved?' } });
  t.equal(
    (await db.company.findUniqueOrThrow({ where: { id: a.companies[1]!.id } })).organizationId,
    A,
    'organizationId cannot be changed',
  );
  t.same(await bSnapshot(), untouchedB, 'the other organization is untouched');
});

t.test("the raw-SQL writer creates and changes only rows of its organization, and queues only its rules' runs", async (t) => {
  const writes = scopeWrites(app.pg, A);
  const scope = { db: scoped, organizationId: A, writes, actor };
  // Both organizations have an active rule for each event: only A's may get runs from A's writes.
  const rule = (organizationId: string, trigger: 'company_created' | 'company_updated' | 'contact_created') =>
    db.automation.create({
      data: {
        organizationId,
        name: `${trigger} rule`,
        trigger,
        actionType: 'webhook',
        actionConfig: { url: 'https://hooks.example.com/x' },
      },
    });
  const rules = await Promise.all(
    [A, B].flatMap((org) => [rule(org, 'company_created'), rule(org, 'company_updated'), rule(org, 'contact_created')]),
  );
  const runsBefore = await db.automationRun.count();

  const created = await companyService.create(scope, { name: 'via writer', organization_id: B } as never);
  t.equal(
    (await db.company.findUniqueOrThrow({ where: { id: created.id } })).organizationId,
    A,
    'an organization_id in the body is no column of the write',
  );
  await t.rejects(companyService.update(scope, b.companies[1]!.id, { name: 'hijacked' }), { status: 404, code: 'company_not_found' });
  t.equal(
    await writes.update(companyPage, b.companies[1]!.id, { name: 'hijacked' }, 'company.updated'),
    undefined,
    "another tenant's id: no row",
  );
  await t.rejects(
    contactService.create(scope, { company_id: b.companies[0]!.id, first_name: 'X', last_name: 'Y' }),
    { status: 400, code: 'validation_failed' },
    "a contact of A cannot point at B's company",
  );
  await t.rejects(contactService.update(scope, a.contact.id, { company_id: b.companies[0]!.id }), {
    status: 400,
    code: 'validation_failed',
  });
  const runs = await db.automationRun.findMany({ where: { automationId: { in: rules.map((r) => r.id) } } });
  t.equal(runs.length, 1, 'one run: the company created in A');
  t.same(
    runs.map((run) => [run.organizationId, run.automationId]),
    [[A, rules[0]!.id]],
  );
  t.equal(await db.automationRun.count(), runsBefore + 1, 'failed and foreign writes queued nothing');
  await db.automationRun.deleteMany({ where: { automationId: { in: rules.map((r) => r.id) } } });
  await db.automation.deleteMany({ where: { id: { in: rules.map((r) => r.id) } } });
  await db.company.delete({ where: { id: created.id } });
  t.same(await bSnapshot(), untouchedB, 'the other organization is untouched');
});

t.test('creates always land in the bound organization', async (t) => {
  const company = await scoped.company.create({ data: { organizationId: B, name: 'created with B' } });
  t.equal(company.organizationId, A);
  const many = await scoped.company.createManyAndReturn({
    data: [
      { organizationId: B, name: 'many 1' },
      { organizationId: B, name: 'many 2' },
    ],
  });
  t.same(
    many.map((c) => c.organizationId),
    [A, A],
  );
  const upserted = await scoped.company.upsert({
    where: { id: b.companies[0]!.id },
    create: { organizationId: B, name: 'upsert created' },
    update: { name: 'upsert hijacked' },
  });
  t.equal(upserted.organizationId, A, "upsert on another tenant's id creates in the own organization");
  t.not(upserted.id, b.companies[0]!.id);
  await t.rejects(
    scoped.contact.create({ data: { organizationId: B, companyId: b.companies[0]!.id, firstName: 'X', lastName: 'Y' } }),
    "a contact cannot point at another tenant's company (composite foreign key)",
  );
  t.same(await bSnapshot(), untouchedB);
});

t.test('interactive transactions keep the scope', async (t) => {
  const seen = await scoped.$transaction(async (tx) => {
    await tx.company.updateMany({ data: { website: 'https://in-tx.example' } });
    return tx.company.findMany({ select: { organizationId: true } });
  });
  t.ok(seen.length > 0 && seen.every((row) => row.organizationId === A));
  t.same(await bSnapshot(), untouchedB);
});

t.test('nested reads through a user and nested writes to tenant tables are refused', async (t) => {
  const refused = TenantScopeError;
  await t.rejects(scoped.user.findMany({ include: { memberships: true } }), refused, 'user → memberships');
  await t.rejects(
    scoped.membership.findMany({ include: { user: { include: { memberships: true } } } }),
    refused,
    'membership → user → memberships',
  );
  await t.rejects(
    scoped.membership.findMany({ where: { user: { memberships: { some: { organizationId: B } } } } }),
    refused,
    'relation filter through a user',
  );
  await t.rejects(scoped.user.findMany({ select: { _count: true } }), refused, '_count of a user');
  await t.rejects(
    scoped.contact.update({ where: { id: a.contact.id }, data: { company: { connect: { id: b.companies[0]!.id } } } }),
    refused,
    "connect to another tenant's company",
  );
  await t.rejects(
    scoped.company.update({ where: { id: a.companies[0]!.id }, data: { contacts: { deleteMany: {} } } }),
    refused,
    'nested write to contacts',
  );
  await t.rejects(scoped.organization.create({ data: { name: 'x', slug: 'x' } }), refused, 'creating an organization');
  t.same(await bSnapshot(), untouchedB);
  t.equal(await db.contact.count({ where: { organizationId: A } }), 1, 'own contacts untouched too');
});

t.test("finally, an unfiltered deleteMany removes only the bound organization's rows", async (t) => {
  await scoped.contact.deleteMany();
  await scoped.company.deleteMany();
  t.equal(await db.company.count({ where: { organizationId: A } }), 0);
  t.same(await bSnapshot(), untouchedB);
});
