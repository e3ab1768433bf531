// The company list: search over each field (wildcards literal, any case, short terms), the lifecycle_stage filter,
// keyset pages walked while records are inserted, bad query parameters, and isolation between workspaces.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { created, crmWorkspaces, walkPages, type Workspace } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const names = async (path: string, user = viewerA, ws = a) => {
  const res = await ws.call(user, 'GET', path);
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`);
  return json<Array<{ name: string }>>(res)
    .map((company) => company.name)
    .sort();
};
const search = (term: string, extra = '') => names(`companies/?search=${encodeURIComponent(term)}${extra}`);

const fixtures = [
  {
    name: 'Northwind Traders',
    email: 'sales@northwind.example',
    phone_number: '+44 20 7946 0000',
    website: 'https://northwind.example',
    lifecycle_stage: 'customer',
  },
  { name: 'Contoso', email: 'Hello@Zephyrmail.example', phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'Fabrikam', email: null, phone_number: '+1 (555) 867-5309', website: null, lifecycle_stage: 'prospect' },
  { name: 'Tailspin', email: null, phone_number: null, website: 'https://www.QuasarToys.example/shop', lifecycle_stage: 'inactive' },
  { name: '100% Pure', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: '100 Pure', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'snake_case inc', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'snakeXcase inc', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'Back\\slash', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'Backslash', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
  { name: 'ÄRGER ΟΔΟΣ İstanbul', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' },
];
for (const fixture of fixtures) await created(a.call(memberA, 'POST', 'companies/', fixture));
// Workspace B has look-alikes that A's searches must never return.
await created(b.call(memberB, 'POST', 'companies/', { name: 'Northwind Beta', email: 'sales@zephyrmail.example' }));

t.test('search matches a case-insensitive substring of name, email, phone_number or website', async (t) => {
  t.same(await search('northWIND'), ['Northwind Traders'], 'name (and email, website) of one company');
  t.same(await search('zephyrMAIL'), ['Contoso'], 'email only');
  t.same(await search('867-5309'), ['Fabrikam'], 'phone_number only');
  t.same(await search('quasartoys'), ['Tailspin'], 'website only');
  t.same(await search('nothing like it'), [], 'no match');
  t.same(await search(''), fixtures.map((f) => f.name).sort(), 'an empty term does not filter');
});

t.test('case folding beyond ASCII: umlauts, Greek capital sigma, dotted capital I', async (t) => {
  for (const term of ['ärger', 'ÄRGER', 'οδοσ', 'ΟΔΟΣ', 'istanbul', 'İSTANBUL']) {
    t.same(await search(term), ['ÄRGER ΟΔΟΣ İstanbul'], term);
  }
});

t.test('the search follows updates of the searched fields', async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Mutable', email: 'old@oldmail.example' }));
  t.same(await search('oldmail'), ['Mutable']);
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { email: 'new@newmail.example' });
  t.same(await search('oldmail'), []);
  t.same(await search('newmail'), ['Mutable']);
  await a.call(memberA, 'DELETE', `companies/${company.id}/`);
});

t.test('%, _ and \\ in a term are literal characters', async (t) => {
  t.same(await search('%'), ['100% Pure']);
  t.same(await search('100%'), ['100% Pure']);
  t.same(await search('_'), ['snake_case inc']);
  t.same(await search('e_c'), ['snake_case inc']);
  t.same(await search('\\'), ['Back\\slash']);
  t.same(await search('k\\s'), ['Back\\slash']);
});

t.test('terms of one and two characters work too', async (t) => {
  t.same(await search('q'), ['Tailspin'], 'one character, in the website');
  t.same(await search('+1'), ['Fabrikam'], 'two characters, in the phone number');
});

t.test('lifecycle_stage filters, alone and with search', async (t) => {
  t.same(await names('companies/?lifecycle_stage=customer'), ['Northwind Traders']);
  t.same(await names('companies/?lifecycle_stage=prospect'), ['Fabrikam']);
  t.same(await search('pure', '&lifecycle_stage=lead'), ['100 Pure', '100% Pure']);
  t.same(await search('pure', '&lifecycle_stage=inactive'), []);
});

t.test('pages walk every company exactly once, newest first, while companies are inserted between pages', async (t) => {
  const all = json<Array<{ id: string; created_at: string }>>(await a.call(viewerA, 'GET', 'companies/?limit=200'));
  t.equal(all.length, fixtures.length);
  const sorted = [...all].sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1));
  t.same(
    all.map((c) => c.id),
    sorted.map((c) => c.id),
    'newest first, ties by id',
  );

  const inserted: string[] = [];
  const { ids, pages } = await walkPages(a, viewerA, 'companies/?limit=3', async (page) => {
    inserted.push((await created(a.call(memberA, 'POST', 'companies/', { name: `Inserted during page ${page}` }))).id);
  });
  t.equal(pages, 4, '10 companies in pages of 3');
  t.same(
    ids,
    all.map((c) => c.id),
    'every company that existed once, in order; none inserted meanwhile',
  );
  t.equal(new Set(ids).size, ids.length, 'no duplicates');
  t.equal(inserted.length, 3);

  const filtered = await walkPages(a, viewerA, 'companies/?limit=1&lifecycle_stage=lead&search=pure');
  t.equal(filtered.pages, 2, 'the next link keeps the filters');
  t.equal(filtered.ids.length, 2);

  const last = await a.call(viewerA, 'GET', 'companies/?limit=200');
  t.notOk(last.headers.link, 'no Link header on the last page');
  t.equal(json(last).length, fixtures.length + inserted.length);
  await app.db.company.deleteMany({ where: { id: { in: inserted } } });
});

t.test('bad query parameters answer 400', async (t) => {
  for (const query of [
    'limit=0',
    'limit=201',
    'limit=abc',
    'limit=1.5',
    'cursor=bm90LWEtY3Vyc29y',
    'cursor=%%%',
    'lifecycle_stage=churned',
    `search=${'x'.repeat(201)}`,
    'search=a%0Ab',
    'search=nwind%1Ftraders',
  ]) {
    const res = await a.call(viewerA, 'GET', `companies/?${query}`);
    t.equal(res.statusCode, 400, query);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.equal(json(res).code, 'validation_failed', query);
  }
});

t.test('another workspace sees none of these companies, whatever it searches', async (t) => {
  t.same(await names('companies/', memberB, b), ['Northwind Beta']);
  t.same(await names('companies/?search=Contoso', memberB, b), []);
  t.same(await names('companies/?search=northwind', memberB, b), ['Northwind Beta']);
  const aCompanies = json<Array<{ id: string }>>(await a.call(viewerA, 'GET', 'companies/?limit=200'));
  const foreignCursor = Buffer.from(JSON.stringify([new Date().toISOString(), aCompanies[0]!.id])).toString('base64url');
  t.same(await names(`companies/?cursor=${foreignCursor}`, memberB, b), ['Northwind Beta'], 'a cursor from A only positions');
});

t.test('the search column is kept by the trigger, whoever writes', async (t) => {
  const raw = await app.db.company.create({
    data: { organizationId: a.id, name: 'Raw Insert', website: 'HTTPS://RAW.example', searchText: 'forged' },
  });
  t.equal(raw.searchText, 'raw insert\u001fhttps://raw.example', 'computed by the database, not taken from the writer');
  await app.db.company.delete({ where: { id: raw.id } });
});

t.test('a search finds every match, among the newest rows and far older ones, page after page', async (t) => {
  // Matches among the newest rows (the ordered part of a search) and far older ones (the index): pages are full.
  const org = await app.db.organization.create({ data: { name: 'haystack', slug: 'haystack' } });
  await app.db.membership.create({ data: { organizationId: org.id, userId: memberA.id, role: 'member' } });
  await app.db.$executeRaw`
    INSERT INTO companies (id, organization_id, name, created_at, updated_at)
    SELECT gen_random_uuid(), ${org.id}::uuid, CASE WHEN n <= 30 OR n > 11970 THEN 'Needle ' || n ELSE 'Hay ' || n END,
           now() - make_interval(secs => n), now()
    FROM generate_series(1, 12000) AS n`;
  const haystack: Workspace = {
    id: org.id,
    call: (user, method, path) => app.inject({ method, url: `/api/v1/organizations/${org.id}/${path}`, headers: user.headers }),
  };
  const { ids, pages } = await walkPages(haystack, memberA, 'companies/?search=NEEDLE&limit=25');
  const byId = new Map(
    (await app.db.company.findMany({ where: { organizationId: org.id, name: { startsWith: 'Needle' } } })).map((c) => [c.id, c.name]),
  );
  const expected = [...Array.from({ length: 30 }, (_, i) => i + 1), ...Array.from({ length: 30 }, (_, i) => 11971 + i)];
  t.same(
    ids.map((id) => byId.get(id)),
    expected.map((n) => `Needle ${n}`),
    'all 60, newest first, none twice',
  );
  t.equal(pages, 3, 'pages of 25, 25 and 10: each full unless last');
  const rare = await walkPages(haystack, memberA, `companies/?search=${encodeURIComponent('hay 11970')}&limit=200`);
  const hay = await app.db.company.findFirstOrThrow({ where: { organizationId: org.id, name: 'Hay 11970' } });
  t.same(rare.ids, [hay.id], 'a rare term far beyond the newest rows, at the end of the links');
});

t.test('timestamps read by lists, searches and pages are what the create answered and what to_char writes', async (t) => {
  // PostgreSQL's own timestamp text drops trailing zeros of the fraction ('…:05', '…:05.7', '…:05.72'); the API
  // always has three digits and a Z, like the create answer (formatted by the database) and the cursors.
  const moments = ['2031-01-02 03:04:05', '2031-01-02 03:04:05.7', '2031-01-02 03:04:05.72', '2031-01-02 03:04:05.723'];
  const made: Array<{ id: string; created_at: string; updated_at: string }> = [];
  for (const [n, moment] of moments.entries()) {
    const company = await created<{ id: string; created_at: string; updated_at: string }>(
      a.call(memberA, 'POST', 'companies/', { name: `Stamp ${n} zzstamp` }),
    );
    t.match(company.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'the create answer');
    await app.pg.query(
      `UPDATE companies SET created_at = $2::timestamp AT TIME ZONE 'UTC', updated_at = $2::timestamp AT TIME ZONE 'UTC' WHERE id = $1`,
      [company.id, moment],
    );
    made.push(company);
  }
  const { rows: expected } = await app.pg.query<{ id: string; iso: string }>(
    `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS iso FROM companies WHERE id = ANY($1::uuid[])`,
    [made.map((company) => company.id)],
  );
  const wanted = new Map(expected.map((row) => [row.id, row.iso]));
  t.same([...wanted.values()].sort(), [
    '2031-01-02T03:04:05.000Z',
    '2031-01-02T03:04:05.700Z',
    '2031-01-02T03:04:05.720Z',
    '2031-01-02T03:04:05.723Z',
  ]);
  const read = async (path: string) => {
    const res = await a.call(viewerA, 'GET', path);
    t.equal(res.statusCode, 200, path);
    return json<Array<{ id: string; created_at: string; updated_at: string }>>(res).filter((row) => wanted.has(row.id));
  };
  // The plain list's first page (these are now the newest), a search page, and a cursor page after the newest one.
  const first = await read('companies/?limit=10');
  const searched = await read('companies/?search=zzstamp');
  const newest = first[0]!;
  const cursor = Buffer.from(JSON.stringify([newest.created_at, newest.id])).toString('base64url');
  const after = await read(`companies/?limit=10&cursor=${cursor}`);
  for (const [label, rows, count] of [
    ['first page', first, 4],
    ['search', searched, 4],
    ['cursor page', after, 3],
  ] as const) {
    t.equal(rows.length, count, `${label}: the stamped companies`);
    for (const row of rows) {
      t.equal(row.created_at, wanted.get(row.id), `${label}: created_at of ${row.id}`);
      t.equal(row.updated_at, wanted.get(row.id), `${label}: updated_at of ${row.id}`);
    }
  }
});
