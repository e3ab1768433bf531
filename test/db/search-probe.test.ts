// A search that reaches the trigram index asks it for the term's rare part when the statistics sample shows some of
// the term's trigrams in most rows (`per` of `person4242`), and tests every candidate for the whole term: the answer
// is the term's matches only, never a row that holds just the part.
import t from 'tap';
import { probeOf } from '../../src/db/search-statistics.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

/** The trigrams common in a sample of `person4711 sales@example.com` and `person123` rows. */
const common = new Set(
  ['per', 'ers', 'rso', 'son', 'on4', 'n47', '471', '711', 'on1', 'n12', '123', 'sal', 'ale', 'les'].concat([
    'exa',
    'xam',
    'amp',
    'mpl',
    'ple',
    'com',
  ]),
);

t.test('the longest run of rare trigrams, two or more, else the term', async (t) => {
  t.equal(probeOf('Person4242', common), 'n4242', 'per, ers, rso, son and on4 are common; n42, 424 and 242 are not');
  t.equal(probeOf('qqzzqq', common), 'qqzzqq', 'every trigram rare: the term itself');
  t.equal(probeOf('person9', common), 'person9', 'a single rare trigram (on9): the term itself');
  t.equal(probeOf('person', common), 'person', 'no rare trigram: the term itself');
  t.equal(probeOf('sales-xyzzy', common), 'xyzzy', 'trigrams only within runs of letters and digits');
  t.equal(probeOf('İstanbul4242', common), 'İstanbul4242', 'a term whose JavaScript folding changes its length: whole');
  t.equal(probeOf('person4242', null), 'person4242', 'no statistics yet: the term itself');
});

t.test('through the API: the rare part finds the candidates, the whole term decides', async (t) => {
  const { app } = await buildTestApp(t);
  const { admin, organizationId } = await setupInstallation(app);
  const company = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/companies/`,
    headers: admin.headers,
    payload: { name: 'People Ltd' },
  });
  const companyId = json<{ id: string }>(company).id;
  // Older rows: the term's match, and rows holding only parts of it (`n4242`, `on4242`, `4242`).
  await app.pg.query(
    `INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, name, 'Old', now() - interval '1 day' - make_interval(secs => n), now()
     FROM unnest(ARRAY['Person4242', 'Person14242', 'Hudson4242', 'Jon4242', 'Person4243']) WITH ORDINALITY AS v(name, n)`,
    [organizationId, companyId],
  );
  // Newer rows the ordered parts read first, none a match: the search goes on to the index.
  await app.pg.query(
    `INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, 'Person' || (n * 7 % 1000), 'New', now() + make_interval(secs => n), now()
     FROM generate_series(1, 5000) AS n`,
    [organizationId, companyId],
  );
  await app.pg.query('ANALYZE contacts');
  // The serving role, which pg_stats shows no statistics of a table under row-level security, is told which trigrams
  // are common, and nothing of the sampled rows.
  const { rows } = await app.serving.pool.query<{ common: string[] }>(
    `SELECT crm_common_grams('contacts', ARRAY['per', 'n42'], 0.02) AS common`,
  );
  t.same(rows[0]!.common, ['per'], 'the serving role learns that `per` is common and `n42` is not');
  const res = await app.inject({
    method: 'GET',
    url: `/api/v1/organizations/${organizationId}/contacts/?search=PERSON4242`,
    headers: admin.headers,
  });
  t.equal(res.statusCode, 200);
  t.same(
    json<Array<{ first_name: string }>>(res)
      .map((c) => c.first_name)
      .sort(),
    ['Person4242'],
    'the matches of the whole term',
  );
  t.equal(res.headers.link, undefined, 'the last page');
});
