// CSV export of companies and contacts: headers, RFC 4180 quoting, formula-injection prefix, the list's search and
// filters, batches past the export's page size, capabilities and tenancy.
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const csvLines = (body: string) => body.split('\r\n').filter((line) => line !== '');

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme, "the" best', website: 'https://acme.example' }));
const formula = await created(a.call(memberA, 'POST', 'companies/', { name: '=HYPERLINK("http://evil")', phone_number: '+1 555' }));
await created(b.call(memberB, 'POST', 'companies/', { name: 'Other workspace' }));

t.test('companies export: attachment, header row, quoting, formula prefix, only this workspace', async (t) => {
  const res = await a.call(viewerA, 'GET', 'companies/export/');
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/csv/);
  t.equal(res.headers['content-disposition'], 'attachment; filename="companies.csv"');
  const lines = csvLines(res.body);
  t.equal(
    lines[0],
    'id,name,email,phone_number,website,lifecycle_stage,tax_id,industry,address_line_1,address_line_2,city,postal_code,' +
      'country,notes,assigned_to,customer_code,archived_at,created_at,updated_at',
  );
  t.equal(lines.length, 3, 'header and the two companies of this workspace');
  t.match(lines[1], `${formula.id},"'=HYPERLINK(""http://evil"")",,'+1 555,,lead,`);
  t.match(lines[2], `${acme.id},"Acme, ""the"" best",,,https://acme.example,lead,,,,,,,,,,${acme.customer_code},,${acme.created_at},`);
  t.notMatch(res.body, /Other workspace/);
});

t.test('companies export accepts the search and filters of the list', async (t) => {
  const res = await a.call(viewerA, 'GET', 'companies/export/?search=acme&lifecycle_stage=lead');
  const lines = csvLines(res.body);
  t.equal(lines.length, 2);
  t.match(lines[1], acme.id);
  const none = await a.call(viewerA, 'GET', 'companies/export/?lifecycle_stage=customer');
  t.equal(csvLines(none.body).length, 1, 'only the header');
  t.equal((await a.call(viewerA, 'GET', 'companies/export/?lifecycle_stage=nope')).statusCode, 400);
});

t.test('contacts export filters by company and walks past one batch', async (t) => {
  const rows = Array.from({ length: 1203 }, (_, i) => ({
    organizationId: a.id,
    companyId: acme.id,
    firstName: `First${i}`,
    lastName: `Last${i}`,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i % 7)),
  }));
  await app.db.contact.createMany({ data: rows });
  const res = await a.call(viewerA, 'GET', `contacts/export/?company_id=${acme.id}`);
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-disposition'], 'attachment; filename="contacts.csv"');
  const lines = csvLines(res.body);
  t.equal(lines.length, 1204);
  t.equal(new Set(lines.slice(1).map((line) => line.split(',')[0])).size, 1203, 'no row twice');
  const searched = await a.call(viewerA, 'GET', 'contacts/export/?search=first1202');
  t.equal(csvLines(searched.body).length, 2);
});

t.test('another workspace and strangers get 404; no session 401', async (t) => {
  t.equal((await a.call(memberB, 'GET', 'companies/export/')).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/organizations/${a.id}/contacts/export/` })).statusCode, 401);
  t.ok(json(await a.call(memberA, 'GET', 'companies/')));
});

t.test('cells PostgreSQL writes: line breaks inside quotes, CRLF record ends, empty text, timestamps as the API', async (t) => {
  const multi = await created(
    a.call(memberA, 'POST', 'companies/', { name: 'Multi line', notes: 'first line\nsecond, "quoted"\r\n-third', industry: '' }),
  );
  const archived = json(await a.call(memberA, 'POST', `companies/${multi.id}/archive/`)) as { archived_at: string; updated_at: string };
  const res = await a.call(viewerA, 'GET', 'companies/export/?archived=archived');
  t.equal(res.statusCode, 200);
  t.equal(
    res.body,
    'id,name,email,phone_number,website,lifecycle_stage,tax_id,industry,address_line_1,address_line_2,city,postal_code,' +
      'country,notes,assigned_to,customer_code,archived_at,created_at,updated_at\r\n' +
      `${multi.id},Multi line,,,,lead,,,,,,,,"first line\nsecond, ""quoted""\r\n-third",,${multi.customer_code},` +
      `${archived.archived_at},${multi.created_at},${archived.updated_at}\r\n`,
    'the whole file, byte for byte: the line breaks of the cell kept inside its quotes, records ended by CRLF',
  );
});

t.test('a search term is a value, never SQL: quotes and backslashes match literally, nothing of another workspace', async (t) => {
  const odd = await created(a.call(memberA, 'POST', 'companies/', { name: `O'Brien \\ Sons' OR '1'='1` }));
  for (const term of [`O'Brien \\ Sons`, `' OR '1'='1`, `\\`]) {
    const lines = csvLines((await a.call(viewerA, 'GET', `companies/export/?search=${encodeURIComponent(term)}`)).body);
    t.equal(lines.length, 2, `one match for ${term}`);
    t.match(lines[1], odd.id);
  }
  const none = csvLines((await a.call(viewerA, 'GET', `companies/export/?search=${encodeURIComponent(`x' OR 'a'='a`)}`)).body);
  t.equal(none.length, 1, 'only the header');
});

t.test('cells of quotes and line breaks keep them wherever the chunks of the answer cut the text', async (t) => {
  const notesOf = (n: number) =>
    Array.from({ length: 400 }, (_, i) => `${n}:${i}, "q"${i % 3 === 0 ? '\r\n' : '\n'}`)
      .join('')
      .slice(0, 9_000);
  // 40 records of 9,000 characters: the 360 kB arrive in several socket reads, cut inside cells.
  const ids: string[] = [];
  for (let n = 0; n < 40; n++)
    ids.push((await created(a.call(memberA, 'POST', 'companies/', { name: `Chunked ${n}`, notes: notesOf(n) }))).id);
  const res = await a.call(viewerA, 'GET', `companies/export/?search=chunked&sort=name`);
  const records = parse(res.body, { columns: true }) as Array<Record<string, string>>;
  t.same(
    records.map((record) => [record.name, record.notes]),
    Array.from({ length: 40 }, (_, n) => [`Chunked ${n}`, notesOf(n)]).sort(([x], [y]) => ((x as string) < (y as string) ? -1 : 1)),
    'every cell comes back unchanged',
  );
  const ownCrlf = records.reduce((sum, record) => sum + (record.notes?.split('\r\n').length ?? 1) - 1, 0);
  t.equal(res.body.split('\r\n').length - 1, 41 + ownCrlf, "CRLF ends the 41 records; the others are the cells' own");
  for (const id of ids) await a.call(memberA, 'DELETE', `companies/${id}/`);
});
