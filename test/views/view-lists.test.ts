// GET …/{object}/?view=: a list through a saved view answers what the same POST query answers, in complete keyset
// pages under `Link`; the list's `search` and `sort` replace the view's, its own filters narrow it; a view the caller
// cannot see, of another object or of another workspace is a 404; a view naming a field that is gone is a 400.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { created, crmWorkspaces, walkPages, type Workspace } from '../tenancy/crm-workspaces.js';
import { createUser, type SignedIn } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

type Row = { id: string; name?: string; title?: string; [key: string]: unknown };

const STAGES = ['lead', 'prospect', 'customer', 'inactive'];
const CITIES = ['Berlin', 'berlin', 'Zürich', 'Ávila', null];
const companies: Row[] = [];
for (let i = 0; i < 23; i += 1) {
  companies.push(
    await created(
      a.call(memberA, 'POST', 'companies/', {
        name: `${['acme', 'Beta', 'Émile', 'zeta'][i % 4]} ${String(i).padStart(2, '0')}`,
        lifecycle_stage: STAGES[i % 4],
        city: CITIES[i % 5],
        industry: i % 3 === 0 ? 'Software' : 'Retail',
      }),
    ),
  );
}
const acme = companies[0] as Row;
for (let i = 0; i < 9; i += 1) {
  await created(
    a.call(memberA, 'POST', 'deals/', {
      title: `deal ${i}`,
      company_id: (companies[i % 3] as Row).id,
      value: `${(i * 1000.5).toFixed(2)}`,
      stage: i % 2 === 0 ? 'proposal' : 'lead',
      probability: (i * 10) % 100,
    }),
  );
}
await created(b.call(memberB, 'POST', 'companies/', { name: 'acme of B', lifecycle_stage: 'customer', city: 'Berlin' }));

const createView = (body: object, user: SignedIn = memberA, ws: Workspace = a) =>
  created<{ id: string }>(ws.call(user, 'POST', 'views/', { visibility: 'workspace', ...body }));

/** Every record of a POST query, through all its pages. */
async function queried(object: string, body: object, user: SignedIn = memberA): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await a.call(user, 'POST', `${object}/query/`, { ...body, limit: 4, ...(cursor ? { cursor } : {}) });
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
    const page = json<{ results: Row[]; next_cursor: string | null }>(res);
    ids.push(...page.results.map((row) => row.id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

const cityFilter = {
  or: [
    { field: 'city', op: 'starts_with', value: 'ber' },
    { and: [{ field: 'lifecycle_stage', op: 'in', value: ['customer', 'lead'] }, { not: { field: 'city', op: 'is_empty' } }] },
  ],
};
const citySort = [
  { field: 'city', direction: 'desc' },
  { field: 'name', direction: 'asc' },
];

t.test('a companies view lists what the same query answers, in complete pages with Link', async (t) => {
  const view = await createView({ name: 'Cities', object: 'companies', filter: cityFilter, sort: citySort, columns: ['name', 'city'] });
  const expected = await queried('companies', { filter: cityFilter, sort: citySort });
  t.ok(expected.length > 8, `${expected.length} matches`);
  const walked = await walkPages(a, viewerA, `companies/?view=${view.id}&limit=4`);
  t.same(walked.ids, expected, 'the same records in the same order');
  t.equal(walked.pages, Math.ceil(expected.length / 4), 'every page full but the last');
  const first = await a.call(memberA, 'GET', `companies/?view=${view.id}&limit=4`);
  t.match(String(first.headers.link), new RegExp(`view=${view.id}`), 'the Link keeps the view');
  t.ok(Array.isArray(json(first)), 'a list answers an array');
  // A record created meanwhile never shifts a page (keyset), and an unknown cursor is a 400.
  const bad = await a.call(memberA, 'GET', `companies/?view=${view.id}&cursor=garbage`);
  t.equal(bad.statusCode, 400);
  t.equal(json(bad).code, 'validation_failed');
});

t.test("the list's search and sort replace the view's; its own filters narrow it", async (t) => {
  const view = await createView({
    name: 'Software',
    object: 'companies',
    filter: { field: 'industry', op: 'eq', value: 'Software' },
    search: 'acme',
    sort: [{ field: 'name', direction: 'desc' }],
  });
  const software = { field: 'industry', op: 'eq', value: 'Software' };
  const list = async (query: string) => {
    const res = await a.call(memberA, 'GET', `companies/?view=${view.id}&limit=200${query}`);
    t.equal(res.statusCode, 200, res.body);
    return json<Row[]>(res).map((row) => row.id);
  };
  t.same(
    await list(''),
    await queried('companies', { filter: software, search: 'acme', sort: [{ field: 'name', direction: 'desc' }] }),
    "the view's own",
  );
  t.same(
    await list('&search=zeta'),
    await queried('companies', { filter: software, search: 'zeta', sort: [{ field: 'name', direction: 'desc' }] }),
    'search replaced',
  );
  t.same(
    await list('&search='),
    await queried('companies', { filter: software, sort: [{ field: 'name', direction: 'desc' }] }),
    'an empty search: none',
  );
  t.same(
    await list('&sort=-created_at'),
    await queried('companies', { filter: software, search: 'acme', sort: [{ field: 'created_at', direction: 'desc' }] }),
    'sort replaced',
  );
  t.same(
    await list('&search=e&sort=name&lifecycle_stage=customer'),
    await queried('companies', {
      filter: { and: [software, { field: 'lifecycle_stage', op: 'eq', value: 'customer' }] },
      search: 'e',
      sort: [{ field: 'name', direction: 'asc' }],
    }),
    "the list's own filter ANDed",
  );
  // A cursor belongs to the sort in force: handed to another, 400.
  const paged = await a.call(memberA, 'GET', `companies/?view=${view.id}&search=e&limit=1`);
  const cursor = /cursor=([^&>]+)/.exec(String(paged.headers.link))?.[1];
  t.ok(cursor);
  t.equal((await a.call(memberA, 'GET', `companies/?view=${view.id}&search=e&limit=1&sort=name&cursor=${cursor}`)).statusCode, 400);
  // Archived records: as the list says (`archived`), not the view.
  await a.call(memberA, 'POST', `companies/${(companies[3] as Row).id}/archive/`);
  const archived = await a.call(memberA, 'GET', `companies/?view=${view.id}&search=&archived=archived`);
  t.same(
    json<Row[]>(archived).map((row) => row.id),
    await queried('companies', { filter: software, archived: 'archived', sort: [{ field: 'name', direction: 'desc' }] }),
  );
  t.equal(
    (await a.call(memberA, 'GET', `companies/?view=${view.id}&updated_since=2026-01-01T00:00:00Z`)).statusCode,
    400,
    'no sync through a view',
  );
});

t.test('a deals view lists what the same query answers, cursor pages included', async (t) => {
  const filter = {
    and: [
      { field: 'value', op: 'gte', value: '1000' },
      { field: 'company.name', op: 'starts_with', value: 'acme' },
    ],
  };
  const sort = [{ field: 'stage' }, { field: 'value', direction: 'desc' }];
  const view = await createView({ name: 'Big acme deals', object: 'deals', filter, sort });
  const expected = await queried('deals', { filter, sort });
  t.ok(expected.length >= 2, `${expected.length} matches`);
  const walked = await walkPages(a, memberA, `deals/?view=${view.id}&limit=1`);
  t.same(walked.ids, expected);
  t.equal(walked.pages, expected.length);
  // The deals list's own filter narrows it.
  const narrowed = json<Row[]>(await a.call(memberA, 'GET', `deals/?view=${view.id}&stage=proposal`));
  t.same(
    narrowed.map((row) => row.id),
    await queried('deals', { filter: { and: [filter, { field: 'stage', op: 'eq', value: 'proposal' }] }, sort }),
  );
  t.ok(narrowed.every((row) => row.stage === 'proposal'));
});

t.test('a contacts view sorts by name (last, then first) as the query does', async (t) => {
  for (const [first, last] of [
    ['Ada', 'Lovelace'],
    ['Bob', 'baker'],
    ['Cy', 'Écrin'],
    ['Al', 'baker'],
  ]) {
    await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: first, last_name: last }));
  }
  const view = await createView({ name: 'By name', object: 'contacts', sort: [{ field: 'name' }] });
  const listed = json<Row[]>(await a.call(memberA, 'GET', `contacts/?view=${view.id}`));
  t.same(
    listed.map((row) => row.last_name),
    ['baker', 'baker', 'Écrin', 'Lovelace'],
  );
  t.same(
    listed.map((row) => row.id),
    await queried('contacts', { sort: [{ field: 'name' }] }),
  );
});

t.test('a view the caller cannot see, of another object or of another workspace is a 404', async (t) => {
  const personal = await createView({ name: 'mine', object: 'companies', visibility: 'personal' });
  t.equal((await a.call(memberA, 'GET', `companies/?view=${personal.id}`)).statusCode, 200, 'its creator lists through it');
  const hidden = await a.call(viewerA, 'GET', `companies/?view=${personal.id}`);
  t.equal(hidden.statusCode, 404);
  t.equal(json(hidden).code, 'view_not_found');
  const dealsView = await createView({ name: 'deals', object: 'deals' });
  const wrongObject = await a.call(memberA, 'GET', `companies/?view=${dealsView.id}`);
  t.equal(wrongObject.statusCode, 404);
  t.equal(json(wrongObject).code, 'view_not_found');
  t.equal((await a.call(memberA, 'GET', 'companies/?view=not-a-uuid')).statusCode, 404);
  // Another workspace's view: a 404 in B, never A's rows; B's own view lists only B's rows.
  const aView = await createView({ name: 'everything', object: 'companies' });
  const foreign = await b.call(memberB, 'GET', `companies/?view=${aView.id}`);
  t.equal(foreign.statusCode, 404);
  t.notMatch(foreign.body, /acme 00/);
  const bView = await createView({ name: 'B everything', object: 'companies' }, memberB, b);
  t.same(
    json<Row[]>(await b.call(memberB, 'GET', `companies/?view=${bView.id}`)).map((row) => row.name),
    ['acme of B'],
  );
  t.equal((await a.call(memberA, 'GET', `companies/?view=${bView.id}`)).statusCode, 404, "A's member with B's view");
  // A deleted view lists 404 from then on.
  await a.call(memberA, 'DELETE', `views/${aView.id}/`);
  t.equal((await a.call(memberA, 'GET', `companies/?view=${aView.id}`)).statusCode, 404);
});

t.test('a view naming a field that no longer resolves answers 400 view_field_archived', async (t) => {
  const view = await createView({
    name: 'soon stale',
    object: 'companies',
    filter: { and: [{ field: 'industry', op: 'eq', value: 'Software' }] },
    sort: [{ field: 'name' }],
    columns: ['name', 'industry'],
  });
  t.equal((await a.call(memberA, 'GET', `companies/?view=${view.id}`)).statusCode, 200);
  // As an archived custom field leaves the record type's fields: the stored names point at fields that are gone.
  await app.db.savedView.update({
    where: { id: view.id },
    data: {
      filter: { and: [{ field: 'custom.tier', op: 'eq', value: 'gold' }] },
      sort: [{ field: 'custom.rank' }],
      columns: ['name', 'custom.tier'],
    },
  });
  const res = await a.call(memberA, 'GET', `companies/?view=${view.id}&sort=name`);
  t.equal(res.statusCode, 400);
  const body = json<{ code: string; errors: Record<string, string[]> }>(res);
  t.equal(body.code, 'view_field_archived');
  t.same(Object.keys(body.errors).sort(), ['columns.1', 'filter.and.0.field', 'sort.0.field'], 'each at its path, a replaced sort too');
  t.match(body.errors['filter.and.0.field'], [/custom\.tier/]);
  // The view itself still reads, and a PATCH that drops the gone fields makes it list again.
  t.equal((await a.call(memberA, 'GET', `views/${view.id}/`)).statusCode, 200);
  const fixed = await a.call(memberA, 'PATCH', `views/${view.id}/`, { filter: null, sort: [], columns: ['name'] });
  t.equal(fixed.statusCode, 200, fixed.body);
  t.equal((await a.call(memberA, 'GET', `companies/?view=${view.id}`)).statusCode, 200);
});

t.test(
  'a view of a custom field: saved and listed through it; the field archived, 400 view_field_archived; restored, it lists again',
  async (t) => {
    const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
    const field = await created<{ id: string }>(
      a.call(admin, 'POST', 'custom-fields/', {
        object: 'company',
        key: 'tier',
        label: 'Tier',
        type: 'select',
        options: [
          { value: 'gold', label: 'Gold' },
          { value: 'silver', label: 'Silver' },
        ],
      }),
    );
    const gold = await created<Row>(a.call(memberA, 'POST', 'companies/', { name: 'Gold tier Co', custom_fields: { tier: 'gold' } }));
    await created(a.call(memberA, 'POST', 'companies/', { name: 'Silver tier Co', custom_fields: { tier: 'silver' } }));
    const view = await createView({
      name: 'gold customers',
      object: 'companies',
      filter: { field: 'custom.tier', op: 'eq', value: 'gold' },
      sort: [{ field: 'custom.tier', direction: 'asc' }],
      columns: ['name', 'custom.tier'],
    });
    const listed = await a.call(memberA, 'GET', `companies/?view=${view.id}`);
    t.equal(listed.statusCode, 200, listed.body);
    t.same(
      json<Row[]>(listed).map((row) => row.id),
      [gold.id],
    );
    const invalid = await a.call(memberA, 'POST', 'views/', {
      name: 'wrong value type',
      object: 'companies',
      visibility: 'personal',
      filter: { field: 'custom.tier', op: 'gt', value: 1 },
    });
    t.equal(invalid.statusCode, 400, 'the custom field is checked as in a query');

    t.equal((await a.call(admin, 'DELETE', `custom-fields/${field.id}/`)).statusCode, 204);
    const archived = await a.call(memberA, 'GET', `companies/?view=${view.id}`);
    t.equal(archived.statusCode, 400);
    const body = json<{ code: string; errors: Record<string, string[]> }>(archived);
    t.equal(body.code, 'view_field_archived');
    t.match(body.errors.field ?? body.errors['filter.field'], [/custom\.tier is an archived field/]);

    t.equal((await a.call(admin, 'POST', `custom-fields/${field.id}/restore/`)).statusCode, 200);
    const restored = await a.call(memberA, 'GET', `companies/?view=${view.id}`);
    t.equal(restored.statusCode, 200, 'the values were kept');
    t.same(
      json<Row[]>(restored).map((row) => row.id),
      [gold.id],
    );
  },
);
