// Search and sort pages are complete and exact: for generated records and terms (`%`, `_`, `\`, any case, non-ASCII
// letters, matches only among the oldest rows, none at all), following `Link: rel="next"` yields exactly the records
// PostgreSQL's own lower() finds, in the list's order, each once, every page full unless it is the last, while
// records are created and renamed between pages (a renamed record, whose key moved, may show at either place). Enough filler rows make the service take both of its paths (the ordered part
// and the GIN indexes).
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { SEARCH_SCAN_ROWS, searchTuning } from '../../src/db/search-statistics.js';
import { buildTestApp, json } from '../helpers/app.js';
import { crmWorkspaces, type Workspace } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA } = await crmWorkspaces(app);
t.setTimeout(600_000);

// Newer than every generated record: the ordered part of a search reads these first, so a match older than them is
// found by the index. Their names hold none of the generated pieces (digits spelt as other letters), but a few hold
// generated-looking text so that terms also match here.
const FILLERS = Math.round(SEARCH_SCAN_ROWS * 1.5);
await app.pg.query(
  `INSERT INTO companies (id, organization_id, name, email, created_at, updated_at)
   SELECT gen_random_uuid(), $1, 'Fyll' || translate(n::text, '0123456789', 'ghjkmnopqr') || CASE WHEN n % 500 = 0 THEN ' ab%_c' ELSE '' END, NULL,
          now() + make_interval(secs => n), now() + make_interval(secs => n)
   FROM generate_series(1, $2) AS n`,
  [a.id, FILLERS],
);
// The other workspace holds look-alikes of everything: none may ever appear.
await app.pg.query(
  `INSERT INTO companies (id, organization_id, name, email, created_at, updated_at)
   SELECT gen_random_uuid(), $1, 'ZÜRICH İstanbul Straße ab%_c \\ ' || n, 'x' || n || '@ab.example', now() - make_interval(days => n), now()
   FROM generate_series(1, 300) AS n`,
  [b.id],
);

/**
 * Pieces of names and terms: ASCII, wildcards, a backslash, letters whose lower case PostgreSQL and JavaScript may
 * differ on, and tsquery's syntax characters.
 */
const PIECES = [
  'a',
  'b',
  'c',
  'A',
  'B',
  'ab',
  'AB',
  '%',
  '_',
  '\\',
  ' ',
  '-',
  '5',
  'ü',
  'Ü',
  'ß',
  'İ',
  'i',
  'ı',
  'Σ',
  'σ',
  'ς',
  'é',
  'zürich',
  'ZÜRICH',
  // What tsquery input treats as syntax (the pairs index is asked through one): each must stay a literal character.
  "'",
  ':',
  '*',
  '&',
  '!',
  '|',
  '(',
];
const text = (maxPieces: number) =>
  fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: maxPieces }).map((pieces) => pieces.join(''));

const companyArbitrary = fc.record({
  name: text(6),
  email: fc.option(
    text(4).map((local) => `${local.replace(/[^a-z0-9]/gi, 'x')}@ex.example`),
    { nil: undefined },
  ),
  phone_number: fc.option(fc.constantFrom('+1-555-0100', '555 010', '+44 20 7946'), { nil: undefined }),
  /** Where the record sits in creation order: among the newest (the ordered part reads it) or the oldest. */
  oldest: fc.boolean(),
});

const SORTS = ['-created_at', 'created_at', 'name', '-name', '-updated_at', 'updated_at'] as const;
const SQL_ORDER: Record<(typeof SORTS)[number], string> = {
  '-created_at': 'created_at DESC, id DESC',
  created_at: 'created_at ASC, id ASC',
  name: 'name COLLATE crm_natural ASC, id ASC',
  '-name': 'name COLLATE crm_natural DESC, id DESC',
  '-updated_at': 'updated_at DESC, id DESC',
  updated_at: 'updated_at ASC, id ASC',
};

/** The reference: the matches by PostgreSQL's lower() of each field (not JavaScript's), in the sort's order. */
async function reference(term: string, sort: (typeof SORTS)[number]): Promise<string[]> {
  const { rows } = await app.pg.query<{ id: string }>(
    `SELECT id FROM companies WHERE organization_id = $1
       AND (strpos(lower(name), lower($2)) > 0 OR strpos(lower(email), lower($2)) > 0
            OR strpos(lower(phone_number), lower($2)) > 0 OR strpos(lower(website), lower($2)) > 0)
     ORDER BY ${SQL_ORDER[sort]}`,
    [a.id, term],
  );
  return rows.map((row) => row.id);
}

/**
 * Follows the links, creating a matching record and renaming one of `touch` after each of the first pages (a rename
 * moves it in a name sort and an updated_at sort); answers what it read and which records changed their sort keys.
 */
async function walk(ws: Workspace, term: string, sort: string, limit: number, touch: string[] = []) {
  const ids: string[] = [];
  const pageSizes: number[] = [];
  const changed = new Set<string>();
  let url: string | undefined = `companies/?search=${encodeURIComponent(term)}&sort=${sort}&limit=${limit}`;
  while (url) {
    const res = await ws.call(viewerA, 'GET', url);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    const page = json<Array<{ id: string }>>(res).map((c) => c.id);
    ids.push(...page);
    pageSizes.push(page.length);
    const link = res.headers.link as string | undefined;
    url = link ? /<([^>]+)>; rel="next"/.exec(link)?.[1]?.replace(`/api/v1/organizations/${ws.id}/`, '') : undefined;
    // A few records created meanwhile (more could keep a walk by name going for ever: each one lands ahead of it).
    if (url && pageSizes.length <= 3) {
      const createdMeanwhile = await ws.call(memberA, 'POST', 'companies/', { name: `meanwhile ${term} ${ids.length}` });
      if (createdMeanwhile.statusCode !== 201) throw new Error(createdMeanwhile.body);
      const renamed = touch[pageSizes.length - 1];
      if (renamed) {
        // To the front or the back of a name sort, and to the newest updated_at.
        const name = `${pageSizes.length % 2 ? '0' : '\u00ff'} renamed ${pageSizes.length}`;
        const res = await ws.call(memberA, 'PATCH', `companies/${renamed}/`, { name });
        if (res.statusCode !== 200) throw new Error(res.body);
        changed.add(renamed);
      }
    }
    if (pageSizes.length > 500) throw new Error('the links never end');
  }
  return { ids, pageSizes, changed };
}

/**
 * The property: generated records (among the newest or beyond every filler) and terms, each walked in a generated sort
 * and page size; `numRuns` cases from `seed`.
 */
async function pagesEqualTheReference(t: Test, numRuns: number, seed: number) {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      // Emails unique in a workspace (issue 27): a run's records never share one.
      fc.uniqueArray(companyArbitrary, { minLength: 1, maxLength: 12, selector: (c) => c.email?.toLowerCase() ?? Symbol() }),
      fc.oneof(
        text(3),
        fc.constantFrom('ab%_c', 'zürich', 'ZÜRICH', 'İ', 'ß', '\\', '%', '_', 'qqzzqq', 'ex.example', '555-01', "'", "a'b", ':*', '&!'),
      ),
      fc.constantFrom(...SORTS),
      fc.integer({ min: 1, max: 7 }),
      async (companies, term, sort, limit) => {
        runs += 1;
        // Generated records, placed among the newest or beyond every filler (only an index finds those).
        const inserted = await app.pg.query<{ id: string }>(
          `INSERT INTO companies (id, organization_id, name, email, phone_number, created_at, updated_at)
           SELECT gen_random_uuid(), $1, c.name, c.email, c.phone_number, c.at, c.at
           FROM jsonb_to_recordset($2::jsonb) AS c(name text, email text, phone_number text, at timestamptz) RETURNING id`,
          [
            a.id,
            JSON.stringify(
              companies.map((c, i) => ({
                ...c,
                at: new Date(Date.now() + (c.oldest ? -86_400_000 * (i + 1) : 86_400_000 * (i + 1))).toISOString(),
              })),
            ),
          ],
        );
        try {
          const expected = await reference(term, sort);
          // Renamed during the walk: the generated records the term matches (their sort keys move; the rest stay).
          const touch = inserted.rows.map((row) => row.id).filter((id) => expected.includes(id));
          const { ids, pageSizes, changed } = await walk(a, term, sort, limit, touch);
          const kept = ids.filter((id) => !changed.has(id));
          t.equal(new Set(kept).size, kept.length, `"${term}" ${sort}: no record whose key stayed appears twice`);
          t.ok(
            pageSizes.slice(0, -1).every((size) => size === limit),
            `"${term}" ${sort}: every page but the last holds ${limit} (${pageSizes.join(', ')})`,
          );
          // Records created during the walk may be included where their sort key places them (after the cursor), and a
          // renamed one at its old or its new place; every other record that existed before it is there exactly once,
          // in the reference's order.
          const before = new Set(expected.filter((id) => !changed.has(id)));
          const seenBefore = kept.filter((id) => before.has(id));
          t.same(seenBefore, [...before], `"${term}" ${sort}: the reference's ${before.size} unchanged matches, in its order`);
          const after = (await reference(term, sort)).filter((id) => !changed.has(id));
          const order = new Map(after.map((id, i) => [id, i]));
          t.ok(
            kept.every((id, i) => i === 0 || (order.get(id) ?? -1) > (order.get(kept[i - 1]!) ?? -1)),
            `"${term}" ${sort}: everything else handed out, in the list order`,
          );
        } finally {
          await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND (id = ANY($2::uuid[]) OR name LIKE 'meanwhile %')`, [
            a.id,
            inserted.rows.map((row) => row.id),
          ]);
        }
      },
    ),
    { numRuns, seed },
  );
  t.ok(runs >= numRuns, `${runs} generated cases`);
}

t.test('generated records and terms: pages equal the reference, in order, full unless last, while records are created and renamed', (t) =>
  pagesEqualTheReference(t, 40, 20261125),
);

t.test('the same through a far ordered part sized by the candidates, then the index', async (t) => {
  // Every term goes far (any count of candidates is "many"), in a part that ends within the fillers (the index then
  // takes the rest of the page from where it stopped) or one that reads them all.
  const tuning = { ...searchTuning };
  t.teardown(() => Object.assign(searchTuning, tuning));
  for (const [rowsPerCandidate, seed] of [
    [2, 20261128],
    [1_000_000, 20261129],
  ] as const) {
    Object.assign(searchTuning, { indexCandidates: -1, farRows: 97, rowsPerCandidate });
    await t.test(`${rowsPerCandidate} rows a candidate`, (t) => pagesEqualTheReference(t, 20, seed));
  }
});

t.test('search terms in every layout answer complete pages in one request each', async (t) => {
  // Matches only among the oldest rows, beyond the ordered part: the first page is full, in one request.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'Oldtail Qv ' || n, now() - make_interval(days => 1000 + n), now() - make_interval(days => 1000 + n)
     FROM generate_series(1, 30) AS n`,
    [a.id],
  );
  for (const term of ['oldtail', 'OLDTAIL', 'qv', 'q', 'nothing-matches-this']) {
    const res = await a.call(viewerA, 'GET', `companies/?search=${encodeURIComponent(term)}&limit=20`);
    const page = json<Array<{ name: string }>>(res);
    const expected = (await reference(term, '-created_at')).length;
    t.equal(page.length, Math.min(20, expected), `"${term}": ${Math.min(20, expected)} records on the first page`);
    t.equal(res.headers.link !== undefined, expected > 20, `"${term}": a next link only when more follow`);
  }
});

t.test("short terms from the pairs index: tsquery's syntax characters are literal", async (t) => {
  // Older than every filler, so only the index finds them; each term has no three word characters in a row, so the
  // index is crm_gram_pairs, asked through a tsquery in which these characters are syntax.
  const names = ["O'Brien Ltd", 'A:B Partners', 'Star*Co', 'Back\\slash', 'R&D!x', 'Pipe|Co', '(Paren', "it's"];
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, name, now() - make_interval(days => 2000 + n::int), now() - make_interval(days => 2000 + n::int)
     FROM unnest($2::text[]) WITH ORDINALITY AS v(name, n)`,
    [a.id, names],
  );
  const terms = ["'", "'b", "o'", "'s", ':', ':b', 'a:', '*', '*c', '\\', '\\s', '&', '&d', 'd!', '!x', '|', '|c', '(', '(p', ':*', "'&"];
  for (const term of terms) {
    const res = await a.call(viewerA, 'GET', `companies/?search=${encodeURIComponent(term)}&limit=50`);
    t.equal(res.statusCode, 200, `"${term}": 200`);
    const expected = await reference(term, '-created_at');
    t.same(
      json<Array<{ id: string }>>(res).map((c) => c.id),
      expected.slice(0, 50),
      `"${term}": the ${Math.min(50, expected.length)} matches of the reference, in order`,
    );
  }
  t.ok((await reference("'b", '-created_at')).length > 0, 'the terms do match old records');
});

t.test('a cursor of one sort is refused by another, and a tampered one is a 400', async (t) => {
  const first = await a.call(viewerA, 'GET', 'companies/?sort=name&limit=2');
  const next = /cursor=([^&>]+)/.exec(String(first.headers.link))?.[1];
  t.ok(next, 'the name sort links on');
  const other = await a.call(viewerA, 'GET', `companies/?sort=-updated_at&cursor=${next}`);
  t.equal(other.statusCode, 400);
  t.match(json(other), { code: 'validation_failed', errors: { cursor: [/another sort order/] } });
  const defaultOrder = await a.call(viewerA, 'GET', `companies/?cursor=${next}`);
  t.equal(defaultOrder.statusCode, 400, 'the default order refuses a name cursor too');
  for (const parts of [
    ['name', 'x\u0000', '00000000-0000-4000-8000-000000000000'],
    ['-created_at', 'yesterday', '00000000-0000-4000-8000-000000000000'],
    ['name', 1, 2],
  ]) {
    const cursor = Buffer.from(JSON.stringify(parts)).toString('base64url');
    const res = await a.call(viewerA, 'GET', `companies/?sort=${String(parts[0])}&cursor=${cursor}`);
    t.equal(res.statusCode, 400, `${JSON.stringify(parts)}: 400`);
  }
  const badSort = await a.call(viewerA, 'GET', 'companies/?sort=email');
  t.equal(badSort.statusCode, 400, 'an unknown sort');
});

t.test('contacts: sorted by last and first name, searched, within one company', async (t) => {
  const company = json<{ id: string }>(await a.call(memberA, 'POST', 'companies/', { name: 'Contact home' }));
  const people = [
    ['Zoë', 'Åberg'],
    ['Anna', 'Berg'],
    ['Bert', 'Berg'],
    ['anna', 'berg'],
    ['Ömer', 'Çelik'],
  ];
  for (const [first_name, last_name] of people) {
    const res = await a.call(memberA, 'POST', 'contacts/', { company_id: company.id, first_name, last_name });
    t.equal(res.statusCode, 201);
  }
  const expected = (
    await app.pg.query<{ id: string }>(
      'SELECT id FROM contacts WHERE organization_id = $1 AND company_id = $2 ORDER BY last_name COLLATE crm_natural, first_name COLLATE crm_natural, id',
      [a.id, company.id],
    )
  ).rows.map((row) => row.id);
  const ids: string[] = [];
  let url: string | undefined = `contacts/?company_id=${company.id}&sort=name&limit=2`;
  while (url) {
    const res = await a.call(viewerA, 'GET', url);
    ids.push(...json<Array<{ id: string }>>(res).map((c) => c.id));
    const link = res.headers.link as string | undefined;
    url = link ? /<([^>]+)>; rel="next"/.exec(link)?.[1]?.replace(`/api/v1/organizations/${a.id}/`, '') : undefined;
  }
  t.same(ids, expected, 'last name, then first name, case- and accent-insensitively');
  const berg = await a.call(viewerA, 'GET', `contacts/?company_id=${company.id}&sort=-name&search=BERG`);
  const names = json<Array<{ first_name: string }>>(berg).map((c) => c.first_name);
  // Åberg reads as aberg, before every Berg; Anna and anna tie and their ids decide.
  t.same([names[0], names[3]], ['Bert', 'Zoë'], 'search and a descending sort together, in the order people read');
  t.same(names.slice(1, 3).sort(), ['Anna', 'anna']);
});
