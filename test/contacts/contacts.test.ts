// Contacts: the company rule (same organization, else 400), create/read/update/delete, bad input, capabilities,
// search over each field, the company filter, pages and isolation between workspaces.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { created, crmWorkspaces, walkPages } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const CONTACT_KEYS = [
  'archived_at',
  'assigned_to',
  'assigned_to_name',
  'company_id',
  'created_at',
  'custom_fields',
  'department',
  'email',
  'first_name',
  'id',
  'job_title',
  'last_name',
  'notes',
  'phone_number',
  'updated_at',
];
const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const globex = await created(a.call(memberA, 'POST', 'companies/', { name: 'Globex' }));
const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
const contactCount = () => app.db.contact.count();
const names = async (path: string, user = viewerA, ws = a) => {
  const res = await ws.call(user, 'GET', path);
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`);
  return json<Array<{ first_name: string }>>(res)
    .map((contact) => contact.first_name)
    .sort();
};

t.test('create answers 201 with the Contact body in the path organization; organization fields are ignored', async (t) => {
  const res = await a.call(memberA, 'POST', 'contacts/', {
    company_id: acme.id,
    first_name: 'Ada',
    last_name: 'Lovelace',
    organization: b.id,
    organization_id: b.id,
  });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.same(Object.keys(body).sort(), CONTACT_KEYS);
  t.match(body, {
    company_id: acme.id,
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: null,
    phone_number: null,
    department: null,
    job_title: null,
  });
  t.equal((await app.db.contact.findUniqueOrThrow({ where: { id: body.id } })).organizationId, a.id);
  const read = await a.call(viewerA, 'GET', `contacts/${body.id}/`);
  t.same(json(read), body);
  t.equal((await b.call(memberB, 'GET', `contacts/${body.id}/`)).statusCode, 404, 'invisible from the other workspace');
});

t.test('company_id must name a company of the same organization (400), and nothing is written otherwise', async (t) => {
  const before = await contactCount();
  for (const [label, companyId] of [
    ['a company of another workspace', foreign.id],
    ['an unknown company', '5b0c2b9e-7d43-4d8a-9a4f-000000000000'],
  ]) {
    const res = await a.call(memberA, 'POST', 'contacts/', { company_id: companyId, first_name: 'X', last_name: 'Y' });
    t.equal(res.statusCode, 400, label);
    t.same(json(res).errors, { company_id: ['No such company in this organization.'] }, label);
  }
  for (const [label, payload] of [
    ['missing company_id', { first_name: 'X', last_name: 'Y' }],
    ['malformed company_id', { company_id: 'acme', first_name: 'X', last_name: 'Y' }],
  ] as const) {
    const res = await a.call(memberA, 'POST', 'contacts/', payload);
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.company_id, label);
  }
  t.equal(await contactCount(), before);
});

t.test('bad create bodies answer 400 and write nothing', async (t) => {
  const before = await contactCount();
  const valid = { company_id: acme.id, first_name: 'Val', last_name: 'Id' };
  const url = `/api/v1/organizations/${a.id}/contacts/`;
  await rejectsBadBodies(t, app, { method: 'POST', url, headers: memberA.headers }, valid, [
    'company_id',
    'first_name',
    'last_name',
    'email',
    'phone_number',
    'department',
    'job_title',
  ]);
  for (const [label, payload, field] of [
    ['missing first_name', { company_id: acme.id, last_name: 'Y' }, 'first_name'],
    ['missing last_name', { company_id: acme.id, first_name: 'X' }, 'last_name'],
    ['empty first_name', { ...valid, first_name: '' }, 'first_name'],
    ['first_name of 151 characters', { ...valid, first_name: 'f'.repeat(151) }, 'first_name'],
    ['invalid email', { ...valid, email: 'nope' }, 'email'],
    ['job_title of 151 characters', { ...valid, job_title: 'j'.repeat(151) }, 'job_title'],
  ] as const) {
    const res = await a.call(memberA, 'POST', 'contacts/', payload);
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: errors.${field}`);
  }
  t.equal(await contactCount(), before);
});

t.test('PATCH: partial, company changes stay inside the organization', async (t) => {
  const contact = await created(
    a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Grace', last_name: 'Hopper', job_title: 'Admiral' }),
  );
  const res = await a.call(memberA, 'PATCH', `contacts/${contact.id}/`, { company_id: globex.id, department: 'Navy' });
  t.equal(res.statusCode, 200);
  const moved = json(res);
  t.same({ ...moved, updated_at: contact.updated_at }, { ...contact, company_id: globex.id, department: 'Navy' });

  const foreignMove = await a.call(memberA, 'PATCH', `contacts/${contact.id}/`, { company_id: foreign.id, first_name: 'Changed' });
  t.equal(foreignMove.statusCode, 400);
  t.same(json(foreignMove).errors, { company_id: ['No such company in this organization.'] });
  const url = `/api/v1/organizations/${a.id}/contacts/${contact.id}/`;
  await rejectsBadBodies(t, app, { method: 'PATCH', url, headers: memberA.headers }, {}, ['company_id', 'first_name', 'email']);
  const orgField = await a.call(memberA, 'PATCH', `contacts/${contact.id}/`, { organization_id: b.id });
  t.equal(orgField.statusCode, 400, 'organization_id is not accepted on PATCH');
  t.same(json(await a.call(memberA, 'GET', `contacts/${contact.id}/`)), moved, 'failed PATCHes changed nothing');
  t.equal((await a.call(memberA, 'PATCH', 'contacts/not-a-uuid/', { first_name: 'X' })).statusCode, 404);
});

t.test('DELETE answers 204; unknown and malformed ids 404 on every record endpoint', async (t) => {
  const contact = await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Tmp', last_name: 'Tmp' }));
  t.equal((await a.call(memberA, 'DELETE', `contacts/${contact.id}/`)).statusCode, 204);
  t.equal(await app.db.contact.count({ where: { id: contact.id } }), 0);
  t.equal(await app.db.company.count({ where: { id: acme.id } }), 1, 'the company stays');
  for (const id of [contact.id, 'nope']) {
    for (const [method, payload] of [['GET'], ['PATCH', { first_name: 'X' }], ['DELETE']] as const) {
      const res = await a.call(memberA, method, `contacts/${id}/`, payload);
      t.equal(res.statusCode, 404, `${method} ${id}`);
      t.equal(json(res).code, 'contact_not_found');
    }
  }
});

t.test("a viewer reads but cannot write; another workspace's member gets 404 for every id", async (t) => {
  const contact = await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Kept', last_name: 'Safe' }));
  t.equal((await a.call(viewerA, 'GET', 'contacts/')).statusCode, 200);
  for (const [method, path, payload] of [
    ['POST', 'contacts/', { company_id: acme.id, first_name: 'X', last_name: 'Y' }],
    ['PATCH', `contacts/${contact.id}/`, { first_name: 'X' }],
    ['DELETE', `contacts/${contact.id}/`, undefined],
  ] as const) {
    t.equal((await a.call(viewerA, method, path, payload)).statusCode, 403, `viewer ${method}`);
  }
  for (const [method, payload] of [['GET'], ['PATCH', { first_name: 'Stolen' }], ['DELETE']] as const) {
    t.equal((await b.call(memberB, method, `contacts/${contact.id}/`, payload)).statusCode, 404, `B ${method} of A's contact`);
  }
  t.same(json(await a.call(memberA, 'GET', `contacts/${contact.id}/`)), contact, 'untouched');
  const bCreate = await b.call(memberB, 'POST', 'contacts/', { company_id: acme.id, first_name: 'X', last_name: 'Y' });
  t.equal(bCreate.statusCode, 400, "B cannot attach a contact to A's company");
  await a.call(memberA, 'DELETE', `contacts/${contact.id}/`);
});

t.test('search over first_name, last_name, email and phone_number; company_id filter; pages', async (t) => {
  await app.db.contact.deleteMany({ where: { organizationId: a.id } });
  const people = [
    { company_id: acme.id, first_name: 'Marguerite', last_name: 'Perey', email: null, phone_number: null },
    { company_id: acme.id, first_name: 'Lise', last_name: 'Meitner', email: null, phone_number: null },
    { company_id: globex.id, first_name: 'Chien', last_name: 'Wu', email: 'CSWu@Columbia.example', phone_number: null },
    { company_id: globex.id, first_name: 'Rosalind', last_name: 'Franklin', email: null, phone_number: '+44 1223 33_7' },
    {
      company_id: globex.id,
      first_name: 'Emmy',
      last_name: 'Noether',
      email: null,
      phone_number: null,
      department: 'Margins',
      job_title: 'Meitner fan',
    },
  ];
  for (const person of people) await created(a.call(memberA, 'POST', 'contacts/', person));
  await created(b.call(memberB, 'POST', 'contacts/', { company_id: foreign.id, first_name: 'Lise', last_name: 'Meitner-B' }));
  const search = (term: string, extra = '') => names(`contacts/?search=${encodeURIComponent(term)}${extra}`);

  t.same(await search('MARGUER'), ['Marguerite'], 'first_name');
  t.same(await search('meitner'), ['Lise'], 'last_name (not department or job_title)');
  t.same(await search('columbia'), ['Chien'], 'email');
  t.same(await search('1223'), ['Rosalind'], 'phone_number');
  t.same(await search('3_7'), ['Rosalind'], 'underscore literal');
  t.same(await search('%'), [], 'percent literal');
  t.same(await search('Margins'), [], 'department is not searched');
  t.same(await names(`contacts/?company_id=${acme.id}`), ['Lise', 'Marguerite']);
  t.same(await search('e', `&company_id=${globex.id}`), ['Chien', 'Emmy'], 'short term (in an email, a name) with the company filter');
  t.same(await names(`contacts/?company_id=${foreign.id}`), [], "another workspace's company: nothing");
  t.same(await names('contacts/?search=meitner', memberB, b), ['Lise'], 'B sees only its own');

  const { ids, pages } = await walkPages(a, viewerA, 'contacts/?limit=2', async () => {
    await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Late', last_name: 'Comer' }));
  });
  t.equal(pages, 3);
  t.equal(ids.length, people.length, 'each contact once, none of those inserted meanwhile');
  t.equal(new Set(ids).size, people.length);

  for (const query of ['company_id=acme', 'limit=0', 'limit=201', 'cursor=abc']) {
    t.equal((await a.call(viewerA, 'GET', `contacts/?${query}`)).statusCode, 400, query);
  }
});
