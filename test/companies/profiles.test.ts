// Company and contact profiles (issue 27, points 1–3): profile fields, country codes, assignees, customer codes
// (sequential, never repeated under concurrent creates or while the counter is locked), duplicate tax ids and
// emails refused, archive and restore with the `archived` list filter, and the activity timeline.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { holdLocks, track } from '../helpers/locks.js';
import { created, crmWorkspaces, workspace } from '../tenancy/crm-workspaces.js';

const { app, databaseUrl } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const problem = (res: Parameters<typeof json>[0]) => ({ status: res.statusCode, ...json(res) });

t.test('profile fields are stored and answered; country is stored upper case; anything else is 400 on the field', async (t) => {
  const body = await created(
    a.call(memberA, 'POST', 'companies/', {
      name: 'Hellas Foods',
      tax_id: 'EL-1001',
      industry: 'Food',
      address_line_1: '1 Odos',
      address_line_2: 'Floor 2',
      city: 'Athens',
      postal_code: '10558',
      country: 'gr',
      notes: 'Met at the fair.',
      assigned_to: memberA.id,
    }),
  );
  t.match(body, {
    tax_id: 'EL-1001',
    industry: 'Food',
    address_line_1: '1 Odos',
    address_line_2: 'Floor 2',
    city: 'Athens',
    postal_code: '10558',
    country: 'GR',
    notes: 'Met at the fair.',
    assigned_to: memberA.id,
    assigned_to_name: memberA.username,
    archived_at: null,
  });
  t.match(body.customer_code, /^CUS-\d{5,}$/);
  const read = json(await a.call(viewerA, 'GET', `companies/${body.id}/`));
  t.same(read, body, 'GET answers the same fields');

  for (const country of ['Greece', 'XX', 'G1']) {
    const res = await a.call(memberA, 'POST', 'companies/', { name: 'Bad', country });
    t.equal(res.statusCode, 400, country);
    t.ok(json(res).errors?.country, `${country}: the error names country`);
  }
  const patched = json(await a.call(memberA, 'PATCH', `companies/${body.id}/`, { country: 'de' }));
  t.equal(patched.country, 'DE');
});

t.test('assigned_to must be a member of this workspace (400 on the field)', async (t) => {
  for (const assignee of [memberB.id, '00000000-0000-4000-8000-000000000000']) {
    const res = await a.call(memberA, 'POST', 'companies/', { name: 'Unowned', assigned_to: assignee });
    t.equal(res.statusCode, 400);
    t.ok(json(res).errors?.assigned_to);
  }
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Owned' }));
  const res = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { assigned_to: memberB.id });
  t.equal(res.statusCode, 400);
  t.ok(json(res).errors?.assigned_to);
  const contact = await a.call(memberA, 'POST', 'contacts/', {
    company_id: company.id,
    first_name: 'A',
    last_name: 'B',
    assigned_to: viewerA.id,
    notes: 'VIP',
  });
  t.equal(contact.statusCode, 201);
  t.match(json(contact), { assigned_to: viewerA.id, assigned_to_name: viewerA.username, notes: 'VIP', archived_at: null });
  const other = await a.call(memberA, 'POST', 'contacts/', {
    company_id: company.id,
    first_name: 'A',
    last_name: 'B',
    assigned_to: memberB.id,
  });
  t.equal(other.statusCode, 400);
  t.ok(json(other).errors?.assigned_to);
});

t.test('customer codes are sequential per workspace', async (t) => {
  const first = await created(b.call(memberB, 'POST', 'companies/', { name: 'B one' }));
  const second = await created(b.call(memberB, 'POST', 'companies/', { name: 'B two' }));
  const number = (code: string) => Number(code.slice(4));
  t.equal(number(second.customer_code), number(first.customer_code) + 1);
  t.match(first.customer_code, /^CUS-\d{5}$/);
});

t.test('concurrent creates never share a customer code', async (t) => {
  const bodies = await Promise.all(
    Array.from({ length: 20 }, (_, i) => created(a.call(memberA, 'POST', 'companies/', { name: `Concurrent ${i}` }))),
  );
  const codes = bodies.map((body) => body.customer_code as string);
  t.equal(new Set(codes).size, codes.length, 'all distinct');
  const numbers = codes.map((code) => Number(code.slice(4))).sort((x, y) => x - y);
  t.equal(numbers[numbers.length - 1]! - numbers[0]!, codes.length - 1, 'consecutive: no gap, no repeat');
});

t.test("a workspace's first creates, racing, make its number sequence once and never share a number", async (t) => {
  // A fresh workspace has no sequence yet. The holder's transaction makes it (uncommitted, so the API's create cannot
  // see it) and takes number 1; the create waits for it on the workspace's advisory lock, then numbers after it.
  const org = await app.db.organization.create({ data: { name: 'first creates', slug: 'first-creates' } });
  await app.db.membership.create({ data: { organizationId: org.id, userId: memberA.id, role: 'member' } });
  const holder = await holdLocks(t, databaseUrl);
  const { rows } = await holder.query('SELECT next_customer_number($1) AS n', [org.id]);
  t.equal(Number(rows[0].n), 1, "the holder's number");
  const fresh = workspace(app, org.id);
  const create = track(fresh.call(memberA, 'POST', 'companies/', { name: 'Second' }));
  await holder.waitForLockWaiters(1, create.settled);
  t.notOk(create.settled(), 'the create waits for the sequence the holder is making');
  await holder.release();
  const body = await created(create.promise);
  t.equal(body.customer_code, 'CUS-00002', "the number after the holder's, from the one sequence");
  const third = await created(fresh.call(memberA, 'POST', 'companies/', { name: 'Third' }));
  t.equal(third.customer_code, 'CUS-00003');
});

t.test('a transaction holding a number (uncommitted, then rolled back) neither blocks a create nor shares its number', async (t) => {
  const holder = await holdLocks(t, databaseUrl);
  const { rows } = await holder.query('SELECT next_customer_number($1) AS n', [a.id]);
  const held = Number(rows[0].n);
  const body = json(await a.call(memberA, 'POST', 'companies/', { name: 'Does not wait' }));
  t.equal(body.customer_code, `CUS-${String(held + 1).padStart(5, '0')}`, 'the number after the held one, at once');
  await holder.query('ROLLBACK');
  await holder.query('BEGIN');
  await holder.release();
  const next = json(await a.call(memberA, 'POST', 'companies/', { name: 'After the rollback' }));
  t.equal(next.customer_code, `CUS-${String(held + 2).padStart(5, '0')}`, 'the rolled-back number stays a gap');
});

t.test('a duplicate tax_id or email in one workspace is refused case-insensitively (400 on the field)', async (t) => {
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Dup one', tax_id: 'VAT-77', email: 'Sales@Dup.example' }));
  const taxId = await a.call(memberA, 'POST', 'companies/', { name: 'Dup two', tax_id: 'vat-77' });
  t.equal(taxId.statusCode, 400);
  t.match(problem(taxId), { code: 'validation_failed', errors: { tax_id: [String] } });
  const email = await a.call(memberA, 'POST', 'companies/', { name: 'Dup three', email: 'sales@dup.EXAMPLE' });
  t.equal(email.statusCode, 400);
  t.match(problem(email), { errors: { email: [String] } });
  const other = await created(a.call(memberA, 'POST', 'companies/', { name: 'Dup four' }));
  const patched = await a.call(memberA, 'PATCH', `companies/${other.id}/`, { tax_id: 'VAT-77' });
  t.equal(patched.statusCode, 400);
  t.ok(json(patched).errors?.tax_id);
  t.equal(
    (await b.call(memberB, 'POST', 'companies/', { name: 'Other workspace', tax_id: 'VAT-77' })).statusCode,
    201,
    'another workspace may',
  );
  const concurrent = await Promise.all([1, 2, 3].map(() => a.call(memberA, 'POST', 'companies/', { name: 'Race', tax_id: 'RACE-1' })));
  t.same(concurrent.map((res) => res.statusCode).sort(), [201, 400, 400], 'exactly one of concurrent duplicates wins');
});

t.test('archive and restore: lists default to active, archived=archived|all, timeline entries', async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Archivable Ltd' }));
  const contact = await created(a.call(memberA, 'POST', 'contacts/', { company_id: company.id, first_name: 'Arch', last_name: 'Ive' }));
  const ids = async (path: string) => json<Array<{ id: string }>>(await a.call(viewerA, 'GET', path)).map((r) => r.id);

  t.equal((await a.call(viewerA, 'POST', `companies/${company.id}/archive/`)).statusCode, 403, 'a viewer cannot archive');
  const archived = await a.call(memberA, 'POST', `companies/${company.id}/archive/`);
  t.equal(archived.statusCode, 200);
  t.match(json(archived).archived_at, /^\d{4}-/);
  t.notOk((await ids('companies/?limit=200')).includes(company.id), 'gone from the default list');
  t.ok((await ids('companies/?archived=archived&limit=200')).includes(company.id));
  t.ok((await ids('companies/?archived=all&limit=200')).includes(company.id));
  t.notOk((await ids('companies/?archived=active&search=archivable')).includes(company.id), 'search honours it too');
  t.ok((await ids('companies/?archived=archived&search=archivable')).includes(company.id));
  t.equal((await a.call(viewerA, 'GET', 'companies/?archived=gone')).statusCode, 400);
  const again = await a.call(memberA, 'POST', `companies/${company.id}/archive/`);
  t.equal(json(again).archived_at, json(archived).archived_at, 'archiving again changes nothing');

  const restored = await a.call(memberA, 'POST', `companies/${company.id}/restore/`);
  t.equal(json(restored).archived_at, null);
  t.ok((await ids('companies/?limit=200')).includes(company.id));

  t.equal((await a.call(memberA, 'POST', `contacts/${contact.id}/archive/`)).statusCode, 200);
  t.notOk((await ids(`contacts/?company_id=${company.id}`)).includes(contact.id));
  t.ok((await ids(`contacts/?company_id=${company.id}&archived=archived`)).includes(contact.id));
  t.equal((await a.call(memberA, 'POST', `contacts/${contact.id}/restore/`)).statusCode, 200);
  t.ok((await ids(`contacts/?company_id=${company.id}`)).includes(contact.id));

  t.equal((await b.call(memberB, 'POST', `companies/${company.id}/archive/`)).statusCode, 404, 'another workspace: 404');
  t.equal((await a.call(memberA, 'POST', 'companies/not-a-uuid/archive/')).statusCode, 404);

  const kinds = json<Array<{ kind: string }>>(await a.call(viewerA, 'GET', `contacts/${contact.id}/activity/`)).map((e) => e.kind);
  t.same(kinds, ['restored', 'archived', 'created']);
});

t.test('the activity timeline: newest first, changed field names only, assigned, actor, keyset pages', async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Timeline Co', notes: 'secret note' }));
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { notes: 'another secret', city: 'Paris', name: 'Timeline Co' });
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { assigned_to: viewerA.id });
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { city: 'Paris' });
  await a.call(memberA, 'POST', `companies/${company.id}/archive/`);
  await a.call(memberA, 'POST', `companies/${company.id}/restore/`);

  const res = await a.call(viewerA, 'GET', `companies/${company.id}/activity/`);
  t.equal(res.statusCode, 200);
  const entries = json<Array<Record<string, any>>>(res);
  t.same(
    entries.map((e) => e.kind),
    ['restored', 'archived', 'assigned', 'updated', 'created'],
    'an update that changes nothing adds no entry',
  );
  const updated = entries.find((e) => e.kind === 'updated')!;
  t.same([...updated.fields].sort(), ['city', 'notes'], 'only the fields whose value changed');
  t.notOk(res.body.includes('secret'), 'never the values');
  const assigned = entries.find((e) => e.kind === 'assigned')!;
  t.equal(assigned.subject_id, viewerA.id);
  for (const entry of entries) t.match(entry, { actor_type: 'user', actor_id: memberA.id, actor_name: memberA.username });

  const first = await a.call(viewerA, 'GET', `companies/${company.id}/activity/?limit=2`);
  t.equal(json(first).length, 2);
  const link = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1];
  t.ok(link, 'Link: rel="next"');
  const rest = await app.inject({ method: 'GET', url: link!, headers: viewerA.headers });
  t.same([...json(first), ...json(rest)].map((e: { id: string }) => e.id).slice(0, 4), entries.map((e) => e.id).slice(0, 4));

  t.equal((await b.call(memberB, 'GET', `companies/${company.id}/activity/`)).statusCode, 404, 'another workspace: 404');
  t.equal((await a.call(viewerA, 'GET', 'companies/00000000-0000-4000-8000-000000000000/activity/')).statusCode, 404);
});

t.test('a failed write leaves no timeline entry (same transaction)', async (t) => {
  await created(a.call(memberA, 'POST', 'companies/', { name: 'First', email: 'tx@same.example' }));
  const before = await app.db.crmActivity.count({ where: { organizationId: a.id } });
  const res = await a.call(memberA, 'POST', 'companies/', { name: 'Second', email: 'TX@same.example' });
  t.equal(res.statusCode, 400);
  t.equal(await app.db.crmActivity.count({ where: { organizationId: a.id } }), before);
});
