// Search pages read a bounded number of rows: for every kind of term, following `Link: rel="next"` yields every
// match exactly once, newest first, and nothing else, also while records are inserted between pages.
import t from 'tap';
import { foldCase, SEARCH_SCAN_ROWS } from '../../src/lib/text-search.js';
import { buildTestApp, json } from '../helpers/app.js';
import { created, crmWorkspaces, type Workspace, walkPages } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

// Row n (1 = newest) of 2.5 scan windows: common names, a rare name only among the oldest rows, a two-letter mail
// domain on a few rows, phone digits, literal `%` and `_`, and lifecycle stages in turn.
const ROWS = Math.round(SEARCH_SCAN_ROWS * 2.5);
await app.pg.query(
  `INSERT INTO companies (id, organization_id, name, email, phone_number, lifecycle_stage, created_at, updated_at)
   SELECT gen_random_uuid(), $1,
          CASE WHEN n > $2 - 3 THEN 'Zyxx Rare ' || n WHEN n % 1000 = 7 THEN '50%_off ' || n
               WHEN n % 10 = 0 THEN 'Acme ' || n ELSE 'Globex ' || n END,
          'info' || n || '@' || CASE WHEN n % 700 = 0 THEN 'qj' ELSE 'mail' END || '.example',
          '+1-555-' || lpad(n::text, 4, '0'),
          (ARRAY['lead','prospect','customer','inactive'])[1 + n % 4]::lifecycle_stage,
          now() - make_interval(secs => n), now() - make_interval(secs => n)
   FROM generate_series(1, $2) AS n`,
  [a.id, ROWS],
);

interface Company {
  id: string;
  name: string;
  email: string | null;
  phone_number: string | null;
  website: string | null;
  lifecycle_stage: string;
}
// The oracle: every company of the workspace, newest first, and a plain substring test of its fields.
const everyCompany = (
  await app.db.company.findMany({ where: { organizationId: a.id }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] })
).map((c) => ({
  id: c.id,
  name: c.name,
  email: c.email,
  phone_number: c.phoneNumber,
  website: c.website,
  lifecycle_stage: c.lifecycleStage,
}));
const matching = (term: string, stage?: string) =>
  everyCompany
    .filter((c) => [c.name, c.email, c.phone_number, c.website].some((field) => field !== null && foldCase(field).includes(foldCase(term))))
    .filter((c) => stage === undefined || c.lifecycle_stage === stage)
    .map((c) => c.id);

/** Follows the links from `firstUrl`, inserting a matching company after each page; returns every page. */
async function walk(ws: Workspace, firstUrl: string, term: string) {
  const pages: Array<{ ids: string[]; link: boolean }> = [];
  let url: string | undefined = firstUrl;
  while (url) {
    const res = await ws.call(viewerA, 'GET', url);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    const link = res.headers.link as string | undefined;
    pages.push({ ids: json<Company[]>(res).map((c) => c.id), link: link !== undefined });
    url = link ? /<([^>]+)>; rel="next"/.exec(link)?.[1]?.replace(`/api/v1/organizations/${ws.id}/`, '') : undefined;
    if (url) await created(ws.call(memberA, 'POST', 'companies/', { name: `${term} inserted meanwhile` }));
    if (pages.length > ROWS) throw new Error('the links do not end');
  }
  return pages;
}

const terms = [
  { kind: 'a common term (10 %)', term: 'ACME' },
  { kind: 'a rare term only among the oldest rows', term: 'zyxx rare' },
  { kind: 'a term with no match', term: 'nothing matches this' },
  { kind: 'a two-character term with few matches', term: 'qj' },
  { kind: 'a one-character term', term: '7' },
  { kind: 'digits of a phone number', term: '555-12' },
  { kind: 'a term with % and _', term: '%_o' },
];

for (const { kind, term } of terms) {
  t.test(`${kind}: every match once, newest first, nothing else, across pages`, async (t) => {
    const expected = matching(term);
    const pages = await walk(a, `companies/?limit=50&search=${encodeURIComponent(term)}`, term);
    const ids = pages.flatMap((page) => page.ids);
    t.same(ids, expected, `${expected.length} matches`);
    t.ok(
      pages.every((page) => page.ids.length <= 50),
      'no page beyond the limit',
    );
    t.notOk(pages.at(-1)!.link, 'the last page has no link');
    // However few matches there are, a page never reads more than SEARCH_SCAN_ROWS rows: the links go on.
    t.ok(pages.length >= Math.ceil(ROWS / SEARCH_SCAN_ROWS), `${pages.length} pages`);
    await app.db.company.deleteMany({ where: { organizationId: a.id, name: { endsWith: 'inserted meanwhile' } } });
  });
}

t.test('a page short of matches still links on, and an empty page may too', async (t) => {
  const pages = await walk(a, 'companies/?search=zyxx', 'zyxx');
  t.same(
    pages.map((page) => page.ids.length),
    [0, 0, 3],
    'two windows without a match, then the oldest three',
  );
  t.same(
    pages.map((page) => page.link),
    [true, true, false],
  );
  await app.db.company.deleteMany({ where: { organizationId: a.id, name: { endsWith: 'inserted meanwhile' } } });
});

t.test('a filter that no index serves counts against the scan bound too, and keeps every match', async (t) => {
  const pages = await walk(a, 'companies/?limit=20&lifecycle_stage=prospect&search=acme', 'acme');
  t.same(
    pages.flatMap((page) => page.ids),
    [],
    'acme is on every tenth row, prospects on rows n % 4 = 1: none',
  );
  t.equal(pages.length, Math.ceil(ROWS / SEARCH_SCAN_ROWS));
  const customers = await walk(a, 'companies/?limit=20&lifecycle_stage=customer&search=acme', 'acme');
  t.same(
    customers.flatMap((page) => page.ids),
    matching('acme', 'customer'),
  );
  await app.db.company.deleteMany({ where: { organizationId: a.id, name: { endsWith: 'inserted meanwhile' } } });
});

t.test('contacts: searched within one company across pages (its index is sought, other companies never counted)', async (t) => {
  const [one, other] = await Promise.all(
    ['One', 'Other'].map((name) => created<{ id: string }>(a.call(memberA, 'POST', 'companies/', { name }))),
  );
  await app.pg.query(
    `INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, created_at, updated_at)
     SELECT gen_random_uuid(), $1, CASE WHEN n % 2 = 0 THEN $2::uuid ELSE $3::uuid END, 'Person', 'No ' || n,
            CASE WHEN n % ($4 / 6) IN (0, 1) THEN 'found' || n || '@example.test' END, now() - make_interval(secs => n), now()
     FROM generate_series(1, $4) AS n`,
    [a.id, one!.id, other!.id, SEARCH_SCAN_ROWS * 3],
  );
  const expected = (
    await app.db.contact.findMany({
      where: { organizationId: a.id, companyId: one!.id, email: { startsWith: 'found' } },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    })
  ).map((c) => c.id);
  const ids: string[] = [];
  let url: string | undefined = `contacts/?limit=2&company_id=${one!.id}&search=FOUND`;
  let pages = 0;
  while (url) {
    const res = await a.call(viewerA, 'GET', url);
    ids.push(...json<Array<{ id: string }>>(res).map((c) => c.id));
    pages += 1;
    const link = res.headers.link as string | undefined;
    url = link ? /<([^>]+)>; rel="next"/.exec(link)?.[1]?.replace(`/api/v1/organizations/${a.id}/`, '') : undefined;
  }
  t.equal(expected.length, 6, "six of its contacts match (and six of the other company's)");
  t.same(ids, expected, 'the six, newest first');
  t.equal(pages, 3, "two full pages, then the last within the company's second scan window");
});

t.test('rows of one millisecond across the scan bound: each match once, in (created_at, id) order', async (t) => {
  // Workspace B: 2.5 windows of rows in runs of 400 sharing one timestamp, so every scan bound falls inside a run
  // and the next page must resume by id within it; every twentieth row matches.
  const rows = Math.round(SEARCH_SCAN_ROWS * 2.5);
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, lifecycle_stage, created_at, updated_at)
     SELECT gen_random_uuid(), $1, CASE WHEN n % 20 = 0 THEN 'Tied match ' ELSE 'Tied other ' END || n, 'lead',
            date_trunc('milliseconds', now()) - make_interval(secs => n / 400), now()
     FROM generate_series(1, $2) AS n`,
    [b.id, rows],
  );
  const expected = (
    await app.pg.query<{ id: string }>(
      `SELECT id FROM companies WHERE organization_id = $1 AND name LIKE 'Tied match %' ORDER BY created_at DESC, id DESC`,
      [b.id],
    )
  ).rows.map((row) => row.id);
  const { ids, pages } = await walkPages(b, memberB, 'companies/?limit=100&search=tied%20match');
  t.equal(expected.length, Math.floor(rows / 20));
  t.same(ids, expected, 'every match once, in list order');
  t.equal(pages, Math.ceil(rows / SEARCH_SCAN_ROWS), 'one page per scan window (fewer than 100 matches in each)');
});
