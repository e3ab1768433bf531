// The search_text each table's trigger keeps is the record's searchable fields as text, NULLs skipped, joined by
// U+001F and folded by PostgreSQL's lower(): checked against that formula over the row's own columns after API creates,
// partial updates and a cleared field, and through the search those values serve.
import t from 'tap';
import pg from 'pg';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app, databaseUrl } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;
const sql = new pg.Client({ connectionString: databaseUrl });
await sql.connect();
t.teardown(() => sql.end());

const send = async (method: 'POST' | 'PATCH', path: string, payload: object, expected: number) => {
  const res = await app.inject({ method, url: `${base}/${path}`, headers: admin.headers, payload });
  if (res.statusCode !== expected) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
  return json<{ id: string }>(res);
};

/** Rows of `table` whose search_text is not the formula over its columns (the columns in their order, by name). */
const mismatches = async (table: string, columns: string[]) =>
  (
    await sql.query<{ id: string; search_text: string | null; expected: string }>(
      `SELECT id, search_text, lower(array_to_string(ARRAY[${columns.map((c) => `to_jsonb(r) ->> '${c}'`).join(', ')}], E'\\x1f')) AS expected
       FROM ${table} AS r WHERE organization_id = $1`,
      [organizationId],
    )
  ).rows.filter((row) => row.search_text !== row.expected);

t.test('companies: name, email, phone number and website', async (t) => {
  const full = await send(
    'POST',
    'companies/',
    { name: 'İstanbul Straße GmbH', email: 'Info@Example.COM', phone_number: '+49 30 555-0100', website: 'https://ZÜRICH.example' },
    201,
  );
  const bare = await send('POST', 'companies/', { name: 'Bare Ltd' }, 201);
  await send('PATCH', `companies/${full.id}/`, { phone_number: null, name: 'ΣΊΣΥΦΟΣ Ltd' }, 200);
  await send('PATCH', `companies/${bare.id}/`, { website: 'https://bare.example', industry: 'Retail' }, 200);
  t.same(await mismatches('companies', ['name', 'email', 'phone_number', 'website']), [], 'every row holds the formula');
  const { rows } = await sql.query<{ search_text: string }>('SELECT search_text FROM companies WHERE id = $1', [full.id]);
  t.equal(rows[0]?.search_text, 'σίσυφοσ ltd\x1finfo@example.com\x1fhttps://zürich.example', 'the cleared phone number is skipped');
  const found = await app.inject({
    method: 'GET',
    url: `${base}/companies/?search=${encodeURIComponent('ZürICH')}`,
    headers: admin.headers,
  });
  t.same(
    json<Array<{ id: string }>>(found).map((c) => c.id),
    [full.id],
    'found by its website, whatever the case',
  );
  const phone = await app.inject({ method: 'GET', url: `${base}/companies/?search=555-0100`, headers: admin.headers });
  t.same(json<unknown[]>(phone), [], 'no longer found by the phone number it lost');
});

t.test('contacts: first and last name, email and phone number', async (t) => {
  const company = await send('POST', 'companies/', { name: 'Contacts Ltd' }, 201);
  const ada = await send(
    'POST',
    'contacts/',
    { company_id: company.id, first_name: 'Ada', last_name: 'LOVELACE', email: 'Ada@Example.com' },
    201,
  );
  await send('POST', 'contacts/', { company_id: company.id, first_name: 'Grace', last_name: 'Hopper', phone_number: '+1 555 0199' }, 201);
  await send('PATCH', `contacts/${ada.id}/`, { last_name: 'King', job_title: 'Countess' }, 200);
  t.same(await mismatches('contacts', ['first_name', 'last_name', 'email', 'phone_number']), [], 'every row holds the formula');
  const found = await app.inject({ method: 'GET', url: `${base}/contacts/?search=ada%20king`, headers: admin.headers });
  t.same(json<unknown[]>(found), [], 'the fields are joined by a separator no term holds');
  const king = await app.inject({ method: 'GET', url: `${base}/contacts/?search=KING`, headers: admin.headers });
  t.same(
    json<Array<{ id: string }>>(king).map((c) => c.id),
    [ada.id],
    'found by the new last name',
  );
});
