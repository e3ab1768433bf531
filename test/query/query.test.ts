// POST …/{object}/query/: each operator on each field type, the company relation, search, sort in natural text order,
// complete keyset pages, every 400 with its path, roles, API keys and tenancy.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

type Row = { id: string; [key: string]: unknown };
const query = (object: string, body: unknown, user = memberA, ws = a) => ws.call(user, 'POST', `${object}/query/`, body);
const names = async (object: string, body: unknown, field = 'name') => {
  const res = await query(object, body);
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
  return json<{ results: Row[] }>(res).results.map((row) => row[field]);
};

const acme = await created(
  a.call(memberA, 'POST', 'companies/', { name: 'acme', industry: 'Software', lifecycle_stage: 'customer', country: 'DE' }),
);
const beta = await created(
  a.call(memberA, 'POST', 'companies/', { name: 'Beta', industry: '', lifecycle_stage: 'lead', email: 'x@beta.test' }),
);
const emile = await created(a.call(memberA, 'POST', 'companies/', { name: 'Émile', lifecycle_stage: 'prospect', country: 'FR' }));
await created(a.call(memberA, 'POST', 'companies/', { name: 'zeta', lifecycle_stage: 'customer', industry: 'Retail' }));
await created(b.call(memberB, 'POST', 'companies/', { name: 'acme of B', industry: 'Software', lifecycle_stage: 'customer' }));

await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Ada', last_name: 'Lovelace' }));
await created(a.call(memberA, 'POST', 'contacts/', { company_id: beta.id, first_name: 'Bob', last_name: 'baker' }));
await created(a.call(memberA, 'POST', 'contacts/', { company_id: emile.id, first_name: 'Cy', last_name: 'Écrin' }));

const deal = (title: string, body: object) => created(a.call(memberA, 'POST', 'deals/', { title, company_id: acme.id, ...body }));
await deal('small', { value: '100.00', probability: 10, expected_close_date: '2026-12-01', amount_includes_tax: true });
await deal('big', { value: '25000.50', probability: 80, expected_close_date: '2027-03-15', stage: 'proposal' });
await created(a.call(memberA, 'POST', 'deals/', { title: 'orphan', company_id: emile.id, value: '5000.00', probability: 50 }));

await created(a.call(memberA, 'POST', 'tasks/', { title: 'call', company_id: beta.id, due_at: '2026-12-24T10:00:00Z', priority: 'high' }));
await created(a.call(memberA, 'POST', 'tasks/', { title: 'mail', company_id: acme.id, kind: 'email', priority: 'low' }));

const sorted = (values: unknown[]) => [...(values as string[])].sort();

t.test('text operators: eq exact, neq, in, not_in, contains, starts_with (case-insensitive, literal), is_empty', async (t) => {
  const q = (op: string, value?: unknown, field = 'name') =>
    names('companies', { filter: { field, op, ...(value === undefined ? {} : { value }) } });
  t.same(await q('eq', 'acme'), ['acme']);
  t.same(await q('eq', 'ACME'), []);
  t.same(sorted(await q('neq', 'acme')), ['Beta', 'zeta', 'Émile']);
  t.same(sorted(await q('in', ['acme', 'zeta'])), ['acme', 'zeta']);
  t.same(sorted(await q('not_in', ['acme', 'zeta'])), ['Beta', 'Émile']);
  t.same(sorted(await q('contains', 'ET')), ['Beta', 'zeta']);
  t.same(await q('starts_with', 'ém'), ['Émile']);
  t.same(await q('contains', '%'), []);
  t.same(sorted(await q('is_empty', undefined, 'industry')), ['Beta', 'Émile']);
  t.same(sorted(await q('is_not_empty', undefined, 'industry')), ['acme', 'zeta']);
  // neq and not_in also match empty values.
  t.same(sorted(await q('neq', 'Software', 'industry')), ['Beta', 'zeta', 'Émile']);
});

t.test("a contains on a field search_text holds reads the GIN index's candidates: same rows, own workspace only", async (t) => {
  const q = (filter: object, user = memberA, ws = a) =>
    ws
      .call(user, 'POST', 'companies/query/', { filter })
      .then((res) => sorted(json<{ results: Row[] }>(res).results.map((row) => row.name as string)));
  const contains = (value: string, field = 'name') => ({ field, op: 'contains', value });
  t.same(await q(contains('CME')), ['acme'], "a trigram term: A's acme, never B's");
  t.same(await q(contains('cme'), memberB, b), ['acme of B'], "B's query, B's rows");
  t.same(await q(contains('e')), ['Beta', 'acme', 'zeta', 'Émile'], 'one character');
  t.same(await q(contains('BETA.T', 'email')), ['Beta'], 'another field of search_text');
  t.same(await q(contains('_')), [], 'a literal underscore');
  t.same(await q({ and: [contains('e'), { field: 'lifecycle_stage', op: 'eq', value: 'customer' }] }), ['acme', 'zeta'], 'under and');
  t.same(await q({ not: contains('e') }), [], 'under not: no index, the same meaning');
});

t.test('enum, uuid and datetime operators', async (t) => {
  t.same(sorted(await names('companies', { filter: { field: 'lifecycle_stage', op: 'eq', value: 'customer' } })), ['acme', 'zeta']);
  t.same(sorted(await names('companies', { filter: { field: 'lifecycle_stage', op: 'not_in', value: ['customer', 'lead'] } })), ['Émile']);
  t.same(await names('companies', { filter: { field: 'id', op: 'eq', value: beta.id } }), ['Beta']);
  t.same(await names('companies', { filter: { field: 'assigned_to', op: 'is_not_empty' } }), []);
  t.equal((await names('companies', { filter: { field: 'created_at', op: 'lte', value: new Date().toISOString() } })).length, 4);
  t.same(await names('companies', { filter: { field: 'created_at', op: 'gt', value: '2999-01-01T00:00:00Z' } }), []);
  // country is a char(2) column compared as one (its index): any text is still a value, a longer one matches nothing.
  const country = (op: string, value: unknown) => names('companies', { filter: { field: 'country', op, value } }).then(sorted);
  t.same(await country('eq', 'DE'), ['acme']);
  t.same(await country('eq', 'DEU'), [], 'never cut to two characters');
  t.same(await country('in', ['FR', 'DE', 'a much longer text']), ['acme', 'Émile']);
  t.same(await country('neq', 'DE'), ['Beta', 'zeta', 'Émile'], 'neq also matches no country');
  t.same(await country('not_in', ['DE', 'FR']), ['Beta', 'zeta']);
});

t.test('decimal, number, date and boolean operators on deals', async (t) => {
  const q = (field: string, op: string, value?: unknown) =>
    names('deals', { filter: { field, op, ...(value === undefined ? {} : { value }) } }, 'title');
  t.same(sorted(await q('value', 'gt', '1000')), ['big', 'orphan']);
  t.same(await q('value', 'gte', 25000.5), ['big']);
  t.same(await q('value', 'lt', 100.01), ['small']);
  t.same(sorted(await q('probability', 'lte', 50)), ['orphan', 'small']);
  t.same(await q('probability', 'in', [80, 81]), ['big']);
  t.same(await q('expected_close_date', 'gte', '2027-01-01'), ['big']);
  t.same(await q('expected_close_date', 'is_empty'), ['orphan']);
  t.same(await q('amount_includes_tax', 'eq', true), ['small']);
  t.same(sorted(await q('amount_includes_tax', 'neq', true)), ['big', 'orphan']);
  t.same(await q('stage', 'eq', 'proposal'), ['big']);
});

t.test('company.<field> on contacts, deals and tasks; and/or/not combined', async (t) => {
  t.same(await names('contacts', { filter: { field: 'company.lifecycle_stage', op: 'eq', value: 'customer' } }, 'last_name'), ['Lovelace']);
  t.same(sorted(await names('deals', { filter: { field: 'company.name', op: 'eq', value: 'acme' } }, 'title')), ['big', 'small']);
  t.same(await names('tasks', { filter: { field: 'company.industry', op: 'is_empty' } }, 'title'), ['call']);
  t.same(await names('tasks', { filter: { field: 'company.email', op: 'contains', value: 'BETA' } }, 'title'), ['call']);
  const tree = {
    or: [
      { and: [{ field: 'lifecycle_stage', op: 'eq', value: 'customer' }, { not: { field: 'name', op: 'eq', value: 'zeta' } }] },
      { field: 'country', op: 'eq', value: 'FR' },
    ],
  };
  t.same(sorted(await names('companies', { filter: tree })), ['acme', 'Émile']);
  t.same(sorted(await names('companies', { filter: { not: tree } })), ['Beta', 'zeta']);
});

t.test('search combines with the filter; deals and tasks have none (400)', async (t) => {
  t.same(await names('companies', { search: 'beta.test', filter: { field: 'lifecycle_stage', op: 'eq', value: 'lead' } }), ['Beta']);
  t.same(await names('contacts', { search: 'LOVE' }, 'last_name'), ['Lovelace']);
  const res = await query('deals', { search: 'x' });
  t.equal(res.statusCode, 400);
  t.ok(json<{ errors: Record<string, string[]> }>(res).errors.search);
});

t.test('text sorts case- and accent-insensitively, empty values last, enums in their order', async (t) => {
  t.same(await names('companies', { sort: [{ field: 'name' }] }), ['acme', 'Beta', 'Émile', 'zeta']);
  // The lists' `sort=name` reads in the same order.
  const list = async (path: string, field: string) => json<Row[]>(await a.call(memberA, 'GET', path)).map((row) => row[field]);
  t.same(await list('companies/?sort=name', 'name'), ['acme', 'Beta', 'Émile', 'zeta']);
  t.same(await list('companies/?sort=-name&limit=2', 'name'), ['zeta', 'Émile']);
  t.same(await list('contacts/?sort=name', 'last_name'), ['baker', 'Écrin', 'Lovelace']);
  t.same(await names('companies', { sort: [{ field: 'name', direction: 'desc' }] }), ['zeta', 'Émile', 'Beta', 'acme']);
  t.same(await names('companies', { sort: [{ field: 'industry' }, { field: 'name', direction: 'desc' }] }), [
    'zeta',
    'acme',
    'Émile',
    'Beta',
  ]);
  t.same(await names('companies', { sort: [{ field: 'lifecycle_stage' }, { field: 'name' }] }), ['Beta', 'Émile', 'acme', 'zeta']);
  t.same(await names('contacts', { sort: [{ field: 'name' }] }, 'last_name'), ['baker', 'Écrin', 'Lovelace']);
  t.same(await names('deals', { sort: [{ field: 'company.name', direction: 'desc' }, { field: 'value' }] }, 'title'), [
    'orphan',
    'small',
    'big',
  ]);
});

t.test('keyset pages are complete and exact across every sort', async (t) => {
  for (let i = 0; i < 23; i += 1) {
    await created(a.call(memberA, 'POST', 'companies/', { name: i % 2 ? `Page ${i % 5}` : `page ${i % 5}`, industry: i % 3 ? 'X' : null }));
  }
  const all = await names('companies', { limit: 200 }, 'id');
  for (const sort of [
    undefined,
    [{ field: 'name' }],
    [{ field: 'industry', direction: 'desc' }, { field: 'name' }],
    [{ field: 'created_at' }],
  ]) {
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await query('companies', { sort, limit: 4, ...(cursor ? { cursor } : {}) });
      t.equal(res.statusCode, 200, res.body);
      const page = json<{ results: Row[]; next_cursor: string | null }>(res);
      if (page.next_cursor) t.equal(page.results.length, 4);
      seen.push(...page.results.map((row) => row.id));
      cursor = page.next_cursor ?? undefined;
      pages += 1;
    } while (cursor && pages < 50);
    t.equal(seen.length, all.length, `every company once under ${JSON.stringify(sort)}`);
    t.same(new Set(seen).size, all.length);
  }
  const first = json<{ next_cursor: string }>(await query('companies', { sort: [{ field: 'name' }], limit: 1 }));
  const other = await query('companies', { sort: [{ field: 'city' }], cursor: first.next_cursor });
  t.equal(other.statusCode, 400);
  t.ok(json<{ errors: Record<string, string[]> }>(other).errors.cursor);
  for (const cursor of ['nope', Buffer.from(JSON.stringify({ sort: 'name', keys: [false, "x'", 'not-a-uuid'] })).toString('base64url')]) {
    t.equal((await query('companies', { sort: [{ field: 'name' }], cursor })).statusCode, 400);
  }
});

t.test('every malformed part answers 400 with the path of its node', async (t) => {
  const cases: Array<[unknown, string]> = [
    [
      {
        filter: {
          and: [
            { field: 'name', op: 'eq', value: 'x' },
            { field: 'nope', op: 'eq', value: 'x' },
          ],
        },
      },
      'filter.and.1.field',
    ],
    [{ filter: { or: [{ not: { field: 'name', op: 'gt', value: 'x' } }] } }, 'filter.or.0.not.op'],
    [{ filter: { field: 'name', op: 'like', value: 'x' } }, 'filter.op'],
    [{ filter: { field: 'name', op: 'eq', value: 3 } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'eq' } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'is_empty', value: 'x' } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'in', value: 'x' } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'in', value: ['a', 2] } }, 'filter.value.1'],
    [{ filter: { field: 'name', op: 'in', value: Array.from({ length: 101 }, (_, i) => `v${i}`) } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'eq', value: 'a\u0000' } }, 'filter.value'],
    [{ filter: { field: 'lifecycle_stage', op: 'eq', value: 'unknown' } }, 'filter.value'],
    [{ filter: { field: 'created_at', op: 'gt', value: '2026-13-01' } }, 'filter.value'],
    [{ filter: { field: 'id', op: 'eq', value: 'not-a-uuid' } }, 'filter.value'],
    [{ filter: { field: 'name', op: 'eq', value: 'x', extra: 1 } }, 'filter.extra'],
    [{ filter: { and: [] } }, 'filter.and'],
    [{ filter: { and: [{ field: 'name', op: 'eq', value: 'x' }], or: [] } }, 'filter'],
    [{ filter: 'name = x' }, 'filter'],
    [{ filter: { not: { not: { not: { not: { not: { field: 'name', op: 'is_empty' } } } } } } }, 'filter.not.not.not.not.not'],
    [{ filter: { and: Array.from({ length: 51 }, () => ({ field: 'name', op: 'is_empty' })) } }, 'filter'],
    [{ filter: { field: 'company.name', op: 'eq', value: 'x' } }, 'filter.field'],
    [{ sort: [{ field: 'nope' }] }, 'sort.0.field'],
    [{ sort: [{ field: 'name', direction: 'up' }] }, 'sort.0.direction'],
    [{ sort: [{ field: 'name' }, { field: 'city' }, { field: 'email' }, { field: 'id' }] }, 'sort'],
    [{ limit: 0 }, 'limit'],
    [{ archived: 'gone' }, 'archived'],
    [{ unknown: true }, 'unknown'],
  ];
  for (const [body, path] of cases) {
    const res = await query('companies', body);
    t.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 120));
    const problem = json<{ code: string; errors: Record<string, string[]> }>(res);
    t.equal(problem.code, 'validation_failed');
    t.ok(problem.errors[path], `${path} in ${JSON.stringify(problem.errors).slice(0, 200)}`);
  }
  const nested = await query('deals', { filter: { and: [{ field: 'company.nope', op: 'eq', value: 'x' }] } });
  t.ok(json<{ errors: Record<string, string[]> }>(nested).errors['filter.and.0.field']);
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: `/api/v1/organizations/${a.id}/companies/query/`,
        headers: { ...memberA.headers, 'content-type': 'application/json' },
        payload: '[1]',
      })
    ).statusCode,
    400,
  );
});

t.test('archived, limits, roles, API keys and tenancy', async (t) => {
  await a.call(memberA, 'POST', `companies/${beta.id}/archive/`);
  t.notOk((await names('companies', { limit: 200 })).includes('Beta'));
  t.same(await names('companies', { archived: 'archived' }), ['Beta']);
  t.ok((await names('companies', { archived: 'all', limit: 200 })).includes('Beta'));
  t.equal((await query('companies', {}, viewerA)).statusCode, 200);
  // A workspace API key queries with VIEW_CRM; without it, 403.
  const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
  const keyOf = async (capabilities: string[]) =>
    json<{ key: string }>(await a.call(admin, 'POST', 'api-keys/', { name: capabilities.join('+') || 'none', capabilities })).key;
  const byKey = (key: string) =>
    app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${a.id}/deals/query/`,
      headers: { authorization: `Bearer ${key}` },
      payload: { filter: { field: 'stage', op: 'eq', value: 'proposal' } },
    });
  const reader = await byKey(await keyOf(['VIEW_CRM']));
  t.equal(reader.statusCode, 200);
  t.same(
    json<{ results: Row[] }>(reader).results.map((row) => row.title),
    ['big'],
  );
  t.equal((await byKey(await keyOf(['MANAGE_AUTOMATIONS']))).statusCode, 403);
  // Workspace B's records never appear, whatever the filter; A's query from B's member is a 404.
  const everything = json<{ results: Row[] }>(await query('companies', { archived: 'all', limit: 200 })).results;
  t.notOk(everything.some((row) => row.name === 'acme of B'));
  t.equal((await query('companies', {}, memberB)).statusCode, 404);
  const own = json<{ results: Row[] }>(await query('companies', {}, memberB, b)).results;
  t.same(
    own.map((row) => row.name),
    ['acme of B'],
  );
  const foreign = await query('contacts', { filter: { field: 'company_id', op: 'eq', value: acme.id } }, memberB, b);
  t.same(json<{ results: Row[] }>(foreign).results, []);
});
