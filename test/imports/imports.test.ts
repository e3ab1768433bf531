// CSV imports through HTTP: bad files refused before any write, each status, the errors CSV, upsert, contact
// company matching, cancel, resume after a batch that failed once, tenancy, and the export → import round trip.
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { JOBS, runDueJobs } from '../../src/jobs/queue.js';
import { IMPORT_KIND_SPECS } from '../../src/modules/imports/import-file.js';
import { COMPANY_IDS_SQL, COMPANY_REFS_SQL, duplicateProbeSql, matchSql } from '../../src/modules/imports/import-batches.js';
import { importTasks } from '../../src/modules/imports/import-job.js';
import { IMPORT_THREAD_NICENESS, threadConnection } from '../../src/modules/imports/import-thread.js';
import { buildTestApp, json } from '../helpers/app.js';
import { makeDue } from '../helpers/jobs.js';
import { multipartForm } from '../helpers/multipart.js';
import { threadNiceness } from '../helpers/threads.js';
import { created, crmWorkspaces, type Workspace } from '../tenancy/crm-workspaces.js';
import type { SignedIn } from '../helpers/fixtures.js';

const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const upload = (ws: Workspace, user: SignedIn, fields: Record<string, string | Buffer>, headers: Record<string, string> = {}) => {
  const { payload, contentType } = multipartForm(fields);
  return app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${ws.id}/imports/`,
    headers: { ...user.headers, 'content-type': contentType, ...headers },
    payload,
  });
};
const runJobs = (batchSize?: number, analyzeAfterRows?: number) =>
  runDueJobs(
    databaseUrl,
    importTasks({
      db: app.db,
      pool: app.pg,
      connection: threadConnection(app.config),
      ...(batchSize ? { batchSize } : {}),
      ...(analyzeAfterRows ? { analyzeAfterRows } : {}),
    }),
  );
const importOf = async (id: string) => json(await a.call(viewerA, 'GET', `imports/${id}/`));
const companyCount = () => app.db.company.count({ where: { organizationId: a.id } });

t.test('bad files answer 4xx and store nothing', async (t) => {
  const cases: [Record<string, string | Buffer>, number, RegExp][] = [
    [{ kind: 'companies', file: Buffer.from([0xff, 0xfe, 0x00, 0x41]) }, 400, /not UTF-8/],
    [{ kind: 'companies', file: 'name,"unclosed\nA,b\n' }, 400, /not valid CSV/],
    [{ kind: 'companies', file: '' }, 400, /no header/],
    [{ kind: 'companies', file: 'name,colour\nAcme,red\n' }, 400, /Unknown column \\"colour\\"/],
    [{ kind: 'companies', file: 'email\nx@example.com\n' }, 400, /required field name/],
    [{ kind: 'companies', file: 'name\nAcme\n', mapping: '{"name": "nope"}' }, 400, /not a field/],
    [{ kind: 'companies', file: 'name\nAcme\n', mapping: 'not json' }, 400, /JSON object/],
    [{ kind: 'people', file: 'name\nAcme\n' }, 400, /validation/i],
    [{ kind: 'companies' }, 400, /file/],
  ];
  for (const [fields, status, detail] of cases) {
    const res = await upload(a, memberA, fields);
    t.equal(res.statusCode, status, JSON.stringify(fields.file?.toString() ?? fields));
    t.match(res.body, detail);
  }
  const big = await upload(a, memberA, { kind: 'companies', file: Buffer.alloc(50 * 1024 * 1024 + 10, 'a') });
  t.equal(big.statusCode, 413);
  t.equal(json(big).code, 'import_file_too_large');
  t.equal(await app.db.import.count(), 0);
  t.equal(await companyCount(), 0);
  t.equal((await upload(a, viewerA, { kind: 'companies', file: 'name\nAcme\n' })).statusCode, 403);
});

t.test('a file with BOM and semicolons: queued, then succeeded, formula prefixes stripped, failed rows in the errors CSV', async (t) => {
  const file =
    '\uFEFFname;email;lifecycle_stage;colour\r\nAcme;hello@acme.example;customer;red\r\n"\'=SUM(A1)";;;\r\n;bad;;\r\nBeta;not-an-email;nope;\r\nShort\r\n';
  const res = await upload(a, memberA, { kind: 'companies', file, mapping: '{"colour": null}' });
  t.equal(res.statusCode, 202);
  const queued = json(res);
  t.match(queued, { kind: 'companies', mode: 'create', status: 'queued', total_rows: 5, processed_rows: 0, created: 0, finished_at: null });
  t.equal(await runJobs(), 1);
  const done = await importOf(queued.id);
  t.match(done, { status: 'succeeded', total_rows: 5, processed_rows: 5, created: 2, updated: 0, failed_rows: 3 });
  t.ok(done.finished_at);
  const names = (await app.db.company.findMany({ where: { organizationId: a.id }, orderBy: { name: 'asc' } })).map((c) => [
    c.name,
    c.lifecycleStage,
  ]);
  t.same(names, [
    ['=SUM(A1)', 'lead'],
    ['Acme', 'customer'],
  ]);
  const codes = (await app.db.company.findMany({ where: { organizationId: a.id }, orderBy: { customerCode: 'asc' } })).map((c) => [
    c.customerCode,
    c.name,
  ]);
  t.same(
    codes,
    [
      ['CUS-00001', 'Acme'],
      ['CUS-00002', '=SUM(A1)'],
    ],
    'imported companies get customer codes in file order, as creates do',
  );
  const next = json(await a.call(memberA, 'POST', 'companies/', { name: 'After the import' }));
  t.equal(next.customer_code, 'CUS-00003', 'the next create continues the sequence');
  await app.db.company.delete({ where: { id: next.id } });
  const errors = await a.call(viewerA, 'GET', `imports/${queued.id}/errors/`);
  t.equal(errors.statusCode, 200);
  t.match(errors.headers['content-type'], /^text\/csv/);
  t.same(errors.body.split('\r\n').filter(Boolean), [
    'line,name,email,lifecycle_stage,colour,error',
    // The create endpoint's messages for the same fields.
    '4,,bad,,,name: This field is required.; email: Enter a valid email address. Must be null.',
    '5,Beta,not-an-email,nope,,email: Enter a valid email address. Must be null.; lifecycle_stage: Must be equal to constant.',
    '6,Short,,,,"row: Expected 4 cells, found 1."',
  ]);
});

t.test('a file of only bad rows ends failed with every row in the errors CSV', async (t) => {
  const queued = json(await upload(a, memberA, { kind: 'companies', file: 'name,email\n,x\n,y\n' }));
  await runJobs();
  t.match(await importOf(queued.id), { status: 'failed', processed_rows: 2, created: 0, failed_rows: 2 });
  const lines = (await a.call(viewerA, 'GET', `imports/${queued.id}/errors/`)).body.split('\r\n').filter(Boolean);
  t.equal(lines.length, 3);
});

t.test('upsert: website, else email; several matches fail the row; repeated keys in one file update the first', async (t) => {
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Twin', website: 'https://twin.example' }));
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Twin 2', website: 'https://twin.example' }));
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Mail', email: 'Mail@Example.com' }));
  const file = [
    'name,website,email',
    'Acme Renamed,,HELLO@acme.example',
    'Twin?,https://twin.example,',
    'Mail Renamed,https://mail.example,mail@example.com',
    'New,https://new.example,',
    'New Again,https://new.example,',
  ].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'companies', file, mode: 'upsert' }));
  await runJobs();
  t.match(await importOf(queued.id), { status: 'succeeded', mode: 'upsert', created: 1, updated: 3, failed_rows: 1 });
  const byName = async (name: string) => app.db.company.findMany({ where: { organizationId: a.id, name } });
  t.equal((await byName('Acme Renamed')).length, 1);
  t.equal((await byName('Acme Renamed'))[0]?.lifecycleStage, 'customer', 'a column not in the file stays unchanged');
  t.equal((await byName('Mail Renamed'))[0]?.website, 'https://mail.example');
  t.equal((await byName('New Again')).length, 1);
  t.equal((await byName('New')).length, 0, 'the second row with the key updated the record the first created');
  const errors = (await a.call(viewerA, 'GET', `imports/${queued.id}/errors/`)).body;
  t.match(errors, /3,Twin\?,https:\/\/twin.example,,website: Matches several companies./);
});

t.test('upsert by an email that companies shared before duplicates were refused matches them all: the row fails', async (t) => {
  // As the migration crm_profiles_archive_activity left them: the oldest holds the email, the newer one is flagged.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, email, email_shared, created_at, updated_at)
     VALUES (gen_random_uuid(), $1, 'Legacy Holder', 'shared@legacy.example', false, now() - interval '2 days', now()),
            (gen_random_uuid(), $1, 'Legacy Sharer', 'Shared@Legacy.example', true, now() - interval '1 day', now())`,
    [a.id],
  );
  t.teardown(() => app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND name LIKE 'Legacy %'`, [a.id]));
  const queued = json(
    await upload(a, memberA, {
      kind: 'companies',
      file: 'name,email\nLegacy Renamed,SHARED@legacy.example\nLegacy Newcomer,newcomer@legacy.example\n',
      mode: 'upsert',
    }),
  );
  await runJobs();
  t.match(await importOf(queued.id), { status: 'succeeded', updated: 0, created: 1, failed_rows: 1 });
  const errors = (await a.call(viewerA, 'GET', `imports/${queued.id}/errors/`)).body;
  t.match(errors, /2,Legacy Renamed,SHARED@legacy.example,email: Matches several companies./);
});

t.test('imported records get timeline entries in the batch: created, then updated (field names) and assigned by upsert', async (t) => {
  const made = json(
    await upload(a, memberA, { kind: 'companies', file: 'name,website,notes\nTimed Import,https://timed.example,private words\n' }),
  );
  await runJobs();
  t.match(await importOf(made.id), { status: 'succeeded', created: 1 });
  const [company] = await app.db.company.findMany({ where: { organizationId: a.id, website: 'https://timed.example' } });
  const timeline = async () => json<Array<Record<string, unknown>>>(await a.call(viewerA, 'GET', `companies/${company!.id}/activity/`));
  t.match(await timeline(), [{ kind: 'created', fields: [], actor_type: 'user', actor_id: memberA.id, actor_name: memberA.username }]);

  const file = `name,website,city,assigned_to\nTimed Import,https://timed.example,Lyon,${viewerA.id}\n`;
  const upserted = json(await upload(a, memberA, { kind: 'companies', file, mode: 'upsert' }));
  await runJobs();
  t.match(await importOf(upserted.id), { status: 'succeeded', updated: 1 });
  const entries = await timeline();
  // One statement writes both entries at one time, so their order between them is the id's; created stays the oldest.
  t.same(entries.map((e) => e.kind).sort(), ['assigned', 'created', 'updated']);
  t.equal(entries.at(-1)?.kind, 'created');
  t.same(entries.find((e) => e.kind === 'updated')?.fields, ['city'], 'only the changed field: the same name is no change');
  t.equal(entries.find((e) => e.kind === 'assigned')?.subject_id, viewerA.id);
  t.notOk(JSON.stringify(entries).includes('Lyon'), 'names, never values');

  // Unchanged on a second upsert: no entry, as an update that changes nothing adds none.
  const again = json(await upload(a, memberA, { kind: 'companies', file, mode: 'upsert' }));
  await runJobs();
  t.match(await importOf(again.id), { status: 'succeeded', updated: 1 });
  t.equal((await timeline()).length, 3);

  const contacts = json(
    await upload(a, memberA, {
      kind: 'contacts',
      file: `first_name,last_name,email,company_id\nTia,Timed,tia@timed.example,${company!.id}\n`,
    }),
  );
  await runJobs();
  t.match(await importOf(contacts.id), { status: 'succeeded', created: 1 });
  const contact = await app.db.contact.findFirstOrThrow({ where: { organizationId: a.id, email: 'tia@timed.example' } });
  t.match(json(await a.call(viewerA, 'GET', `contacts/${contact.id}/activity/`)), [{ kind: 'created', actor_id: memberA.id }]);
  await app.db.contact.delete({ where: { id: contact.id } }); // the next test counts the workspace's contacts
});

t.test('contacts name their company by company_id, customer code, website or exact name', async (t) => {
  const acme = (await app.db.company.findFirst({ where: { organizationId: a.id, name: 'Acme Renamed' } }))!;
  const other = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
  // A company named like Acme's customer code: the code decides first.
  const decoy = await created(a.call(memberA, 'POST', 'companies/', { name: acme.customerCode }));
  const file = [
    'first_name,last_name,company,company_id',
    `Hal,Coded,${acme.customerCode},`,
    'Ada,Lovelace,Acme Renamed,',
    'Bob,Builder,https://mail.example,',
    `Cy,Direct,,${acme.id}`,
    'Dee,Twins,Twin,',
    'Eve,Nobody,Nowhere,',
    `Fay,Foreign,,${other.id}`,
    'Gus,Several,https://twin.example,',
  ].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'contacts', file }));
  await runJobs();
  t.match(await importOf(queued.id), { status: 'succeeded', created: 5, failed_rows: 3 });
  const contacts = await app.db.contact.findMany({ where: { organizationId: a.id }, orderBy: { firstName: 'asc' } });
  t.same(
    contacts.map((c) => c.firstName),
    ['Ada', 'Bob', 'Cy', 'Dee', 'Hal'],
  );
  t.equal(contacts[0]?.companyId, acme.id);
  t.equal(contacts[4]?.companyId, acme.id, 'by customer code, before a company of that name');
  t.not(acme.id, decoy.id);
  const errors = (await a.call(viewerA, 'GET', `imports/${queued.id}/errors/`)).body;
  t.match(errors, /Nowhere,,"company: No company of this workspace has this customer code, website or name."/);
  t.match(errors, /company_id: No such company in this organization./);
  t.match(errors, /company: Several companies have this website./);
  t.equal(await app.db.contact.count({ where: { organizationId: b.id } }), 0);
});

t.test('a batch that fails once is retried from the last committed batch, never writing a row twice', async (t) => {
  // The third row fails the first time it is inserted (as a database that went away would), then goes through.
  await app.pg.query(`CREATE SEQUENCE import_test_once`);
  await app.pg.query(`CREATE FUNCTION import_test_fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.name = 'Row 3' AND nextval('import_test_once') = 1 THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`);
  await app.pg.query(
    `CREATE TRIGGER import_test_fail_once BEFORE INSERT ON companies FOR EACH ROW EXECUTE FUNCTION import_test_fail_once()`,
  );
  t.teardown(() => app.pg.query('DROP TRIGGER import_test_fail_once ON companies'));
  const before = await companyCount();
  const file = ['name', ...Array.from({ length: 5 }, (_, i) => `Row ${i + 1}`)].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'companies', file }));
  await runJobs(2);
  t.match(await importOf(queued.id), { status: 'running', processed_rows: 2, created: 2 }, 'the first batch stayed');
  t.equal(await companyCount(), before + 2);
  await makeDue(app.pg, JOBS.import, queued.id);
  await runJobs(2);
  t.match(await importOf(queued.id), { status: 'succeeded', processed_rows: 5, created: 5, failed_rows: 0 });
  t.equal(await companyCount(), before + 5, 'each row exactly once');
});

t.test(
  "an import's batches run on a thread of their own, at background priority: they go on while the API's event loop is held",
  async (t) => {
    const rows = 5000;
    const before = await companyCount();
    const file = ['name', ...Array.from({ length: rows }, (_, i) => `Threaded ${i + 1}`)].join('\n');
    const queued = json(await upload(a, memberA, { kind: 'companies', file }));
    const progress = async () =>
      (await app.pg.query<{ n: number }>('SELECT processed_rows AS n FROM imports WHERE id = $1', [queued.id])).rows[0]?.n ?? 0;
    const running = runJobs(10);
    let started = 0;
    while (started === 0) {
      await sleep(2);
      started = await progress();
    }
    // Held: no callback of this thread (timer, I/O, promise) runs meanwhile. On this thread the job could finish at
    // most the batch in flight (10 rows); on its own thread it goes on.
    const until = Date.now() + 1500;
    while (Date.now() < until);
    const held = (await progress()) - started;
    // The thread is this process's one at background priority (Linux: a niceness per thread, field 19 of its stat).
    const niceness = await threadNiceness();
    await running;
    t.ok(held > 50, `${held} rows were committed while the event loop was held`);
    t.equal(niceness.filter((n) => n === IMPORT_THREAD_NICENESS).length, 1, 'one thread runs at the import niceness');
    t.equal(niceness.filter((n) => n !== 0 && n !== IMPORT_THREAD_NICENESS).length, 0);
    t.match(await importOf(queued.id), { status: 'succeeded', processed_rows: rows, created: rows });
    t.equal(await companyCount(), before + rows);
    await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND name LIKE 'Threaded %'`, [a.id]);
  },
);

t.test('a file of several stored pieces resumes mid-stream after a failed batch, each row once; no spooled upload stays', async (t) => {
  const spooled = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('crm-import-'));
  const spooledBefore = await spooled();
  // Row 4500 fails the first time (the fifth batch of 1,000), after four batches were committed.
  await app.pg.query(`CREATE SEQUENCE import_test_stream_once`);
  await app.pg.query(`CREATE FUNCTION import_test_stream_fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.name LIKE 'Streamed 4500 %' AND nextval('import_test_stream_once') = 1 THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`);
  await app.pg.query(
    `CREATE TRIGGER import_test_stream_fail_once BEFORE INSERT ON companies FOR EACH ROW EXECUTE FUNCTION import_test_stream_fail_once()`,
  );
  t.teardown(() => app.pg.query('DROP TRIGGER import_test_stream_fail_once ON companies'));
  const before = await companyCount();
  const rows = 7000;
  // About 1.4 MB: more than one stored piece, a quoted cell with a line break to cross a piece boundary somewhere.
  const file = ['name,website', ...Array.from({ length: rows }, (_, i) => `Streamed ${i + 1} ${'x'.repeat(150)},"two\nlines"`)].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'companies', file }));
  t.equal(queued.total_rows, rows);
  const pieces = await app.db.importChunk.findMany({ where: { importId: queued.id }, orderBy: { seq: 'asc' } });
  t.ok(pieces.length > 1, `stored in ${pieces.length} pieces`);
  t.equal(pieces.map((piece) => piece.text).join(''), file, 'the pieces are the file');
  t.same(await spooled(), spooledBefore, 'the spooled upload is removed once answered');
  await runJobs();
  t.match(await importOf(queued.id), { status: 'running', processed_rows: 4000, created: 4000 }, 'four batches stayed');
  await makeDue(app.pg, JOBS.import, queued.id);
  await runJobs();
  t.match(await importOf(queued.id), { status: 'succeeded', processed_rows: rows, created: rows, failed_rows: 0 });
  t.equal(await companyCount(), before + rows, 'each row exactly once');
  const { rows: names } = await app.pg.query<{ n: number; distinct: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT name)::int AS distinct FROM companies WHERE organization_id = $1 AND name LIKE 'Streamed %'`,
    [a.id],
  );
  t.same(names[0], { n: rows, distinct: rows });
  await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND name LIKE 'Streamed %'`, [a.id]);
});

t.test('upsert keys and company references are index probes, not scans of the workspace', async (t) => {
  // 20,000 companies and contacts in workspace B, with statistics: a plan for 1,000 keys must not read them all.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, email, website, updated_at)
     SELECT gen_random_uuid(), $1, 'Planned ' || i, 'c' || i || '@plan.example', 'https://plan' || i || '.example', now() FROM generate_series(1, 20000) i`,
    [b.id],
  );
  await app.pg.query(
    `INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, updated_at)
     SELECT gen_random_uuid(), $1, (SELECT id FROM companies WHERE organization_id = $1 AND name = 'Planned 1'), 'P', 'L' || i, 'P' || i || '@plan.example', now()
     FROM generate_series(1, 20000) i`,
    [b.id],
  );
  t.teardown(async () => {
    await app.pg.query(`DELETE FROM contacts WHERE organization_id = $1 AND email LIKE '%@plan.example'`, [b.id]);
    await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND name LIKE 'Planned %'`, [b.id]);
  });
  await app.pg.query('ANALYZE companies, contacts');
  const keys = (format: (i: number) => string) => Array.from({ length: 1000 }, (_, i) => format(i * 7 + 1));
  const plan = async (sql: string, params: unknown[]) =>
    JSON.stringify((await app.pg.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN']);
  const companies = await plan(matchSql(IMPORT_KIND_SPECS.companies), [
    b.id,
    keys((i) => `https://plan${i}.example`),
    keys((i) => `C${i}@PLAN.example`),
  ]);
  t.match(companies, /companies_organization_id_md5_website_idx/);
  t.match(companies, /companies_organization_id_email_unique/, 'emails from the unique index');
  t.match(companies, /companies_organization_id_lower_email_shared_idx/, 'and from the index of the emails shared before');
  t.notMatch(companies, /Seq Scan/);
  for (const [field, index] of [
    ['email', /companies_organization_id_email_unique/],
    ['tax_id', /companies_organization_id_tax_id_unique/],
  ] as const) {
    const probe = await plan(duplicateProbeSql(field), [b.id, keys((i) => `c${i}@plan.example`)]);
    t.match(probe, index, `a batch's ${field} duplicates are found in the unique index`);
    t.notMatch(probe, /Seq Scan/);
  }
  const contacts = await plan(matchSql(IMPORT_KIND_SPECS.contacts), [b.id, keys((i) => `p${i}@plan.example`)]);
  t.match(contacts, /contacts_organization_id_lower_email_idx/);
  t.notMatch(contacts, /Seq Scan/);
  const refs = await plan(COMPANY_REFS_SQL, [
    b.id,
    [...keys((i) => `https://plan${i}.example`), ...keys((i) => `Planned ${i}`), ...keys((i) => `CUS-${String(i).padStart(5, '0')}`)],
  ]);
  t.match(refs, /companies_organization_id_customer_code_key/);
  t.match(refs, /companies_organization_id_md5_website_idx/);
  t.match(refs, /companies_organization_id_name_id_idx/);
  t.notMatch(refs, /Seq Scan on companies/);
});

t.test('a workspace the statistics do not know yet (its first import) is probed by index, not read whole each batch', async (t) => {
  // The statistics were taken before this workspace had rows, as when an import fills a new workspace: PostgreSQL
  // counts it as one row, and would read all of it (by its created_at index) for every batch's lookups, an import
  // quadratic in its size. The lookups name the workspace as a value the planner does not see.
  // Forty workspaces of 500 companies and 500 contacts each, counted by ANALYZE; then a new one gets 3,000 of each.
  const { rows: known } = await app.pg.query<{ id: string }>(
    `INSERT INTO organizations (id, name, slug, updated_at)
     SELECT gen_random_uuid(), 'Known ' || w, 'known-plans-' || w, now() FROM generate_series(1, 40) w RETURNING id`,
  );
  const fill = (rows: number) => [
    `INSERT INTO companies (id, organization_id, name, email, tax_id, website, customer_code, updated_at)
     SELECT gen_random_uuid(), $1, 'Co ' || i, 'c' || i || '@' || $2 || '.example', 'TAX-' || $2 || '-' || i,
            'https://' || $2 || i || '.example', 'CUS-' || lpad(i::text, 5, '0'), now()
     FROM generate_series(1, ${rows}) i`,
    `INSERT INTO contacts (id, organization_id, company_id, first_name, last_name, email, updated_at)
     SELECT gen_random_uuid(), $1, c.id, 'F', 'L' || c.name, 'p' || c.customer_code || '@' || $2 || '.example', now()
     FROM companies c WHERE c.organization_id = $1`,
  ];
  for (const [w, { id }] of known.entries()) for (const sql of fill(500)) await app.pg.query(sql, [id, `known${w}`]);
  // ANALYZE reads every row (a sample of 300 × the target), so the plans below do not depend on a random sample:
  // with the default target, a sample's count of workspaces now and then made reading an average one look cheaper.
  // The tables are compacted first and autovacuum kept off them: the planner scales its row counts by the tables'
  // pages now, which the rows earlier tests deleted (and whether autovacuum has reclaimed them yet) would vary.
  for (const table of ['companies', 'contacts']) {
    await app.pg.query(`ALTER TABLE ${table} ALTER organization_id SET STATISTICS 1000, SET (autovacuum_enabled = off)`);
  }
  t.teardown(async () => {
    for (const table of ['companies', 'contacts']) {
      await app.pg.query(`ALTER TABLE ${table} ALTER organization_id SET STATISTICS -1, RESET (autovacuum_enabled)`);
    }
  });
  await app.pg.query('VACUUM FULL companies, contacts');
  await app.pg.query('ANALYZE companies, contacts');
  const fresh = await app.db.organization.create({ data: { name: 'Fresh import', slug: 'fresh-import-plans' } });
  for (const sql of fill(3000)) await app.pg.query(sql, [fresh.id, 'fresh']);
  t.teardown(async () => {
    // Counted first: the foreign keys' own lookups are planned by the same statistics.
    await app.pg.query('ANALYZE companies, contacts');
    await app.pg.query('DELETE FROM organizations WHERE id = ANY($1::uuid[])', [[fresh.id, ...known.map((k) => k.id)]]);
  });
  // A batch's 1,000 keys; the contact upsert lookup is asked for 100. For it, probing 1,000 keys cost about as much as
  // reading an average known workspace (500 rows), and now and then the planner chose the read; the company
  // references went the other way with 100 (reading a workspace once cost less than 200 values' three probes each).
  // The plan guarded against reads the whole workspace whatever the number of keys.
  const keys = (format: (i: number) => string, count = 1000) => Array.from({ length: count }, (_, i) => format(i * 7 + 1));
  // A scan whose index condition is the workspace alone reads all of it; so does a sequential scan.
  const wholeWorkspace = /^\(organization_id = ('[^']*'::uuid|\(InitPlan \d+\)\.col\d+|\$\d+)\)$/;
  const scans = (node: Record<string, unknown>): string[] => [
    ...(node['Node Type'] === 'Seq Scan' ? ['Seq Scan'] : []),
    ...(typeof node['Index Cond'] === 'string' && wholeWorkspace.test(node['Index Cond'])
      ? [`${node['Index Name']} by workspace alone`]
      : []),
    ...((node.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(scans),
  ];
  const reads = async (sql: string, params: unknown[]) =>
    scans((await app.pg.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN'][0].Plan);
  const lookups: Array<[string, string, unknown[]]> = [
    ['email duplicates', duplicateProbeSql('email'), [fresh.id, keys((i) => `c${i}@fresh.example`)]],
    ['tax id duplicates', duplicateProbeSql('tax_id'), [fresh.id, keys((i) => `tax-fresh-${i}`)]],
    [
      'company upsert keys',
      matchSql(IMPORT_KIND_SPECS.companies),
      [fresh.id, keys((i) => `https://fresh${i}.example`), keys((i) => `c${i}@fresh.example`)],
    ],
    [
      'contact upsert keys',
      matchSql(IMPORT_KIND_SPECS.contacts),
      [fresh.id, keys((i) => `pcus-${String(i).padStart(5, '0')}@fresh.example`, 100)],
    ],
    ['company references', COMPANY_REFS_SQL, [fresh.id, [...keys((i) => `Co ${i}`), ...keys((i) => `https://fresh${i}.example`)]]],
    [
      'company ids',
      COMPANY_IDS_SQL,
      [
        fresh.id,
        (await app.pg.query('SELECT array_agg(id) AS ids FROM companies WHERE organization_id = $1', [fresh.id])).rows[0].ids.slice(
          0,
          1000,
        ),
      ],
    ],
  ];
  for (const [what, sql, params] of lookups) t.same(await reads(sql, params), [], `${what}: index probes`);
});

t.test('a finished import that wrote enough rows counts its table again (ANALYZE); a small one leaves it to autovacuum', async (t) => {
  const analyzed = async () =>
    (await app.pg.query<{ at: Date | null }>(`SELECT last_analyze AS at FROM pg_stat_user_tables WHERE relname = 'companies'`)).rows[0]
      ?.at ?? null;
  const small = json(await upload(a, memberA, { kind: 'companies', file: 'name\nAnalysis One\n' }));
  const before = await analyzed();
  await runJobs();
  t.match(await importOf(small.id), { status: 'succeeded', created: 1 });
  t.same(await analyzed(), before, 'one row: not counted again');
  const enough = json(await upload(a, memberA, { kind: 'companies', file: 'name\nAnalysis Two\nAnalysis Three\n' }));
  await runJobs(undefined, 2);
  t.match(await importOf(enough.id), { status: 'succeeded', created: 2 });
  const after = await analyzed();
  t.ok(after !== null && (before === null || after > before), 'two rows of a threshold of two: ANALYZE ran');
});

t.test('an import whose last attempt died with its process ends failed', async (t) => {
  const queued = json(await upload(a, memberA, { kind: 'companies', file: 'name\nOrphan\n' }));
  // As if every attempt had been taken by processes that died: the extra attempt records the failure.
  await makeDue(app.pg, JOBS.import, queued.id, { attempts: JOBS.import.attempts });
  await runJobs();
  const failed = await importOf(queued.id);
  t.match(failed, { status: 'failed', processed_rows: 0, created: 0 });
  t.ok(failed.finished_at);
});

t.test('cancel: committed batches stay and are counted; a finished import answers 409', async (t) => {
  const file = ['name', ...Array.from({ length: 4 }, (_, i) => `Cancel ${i}`)].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'companies', file }));
  const cancelled = await a.call(memberA, 'POST', `imports/${queued.id}/cancel/`);
  t.equal(cancelled.statusCode, 200);
  t.match(json(cancelled), { status: 'cancelled', processed_rows: 0 });
  t.ok(json(cancelled).finished_at);
  await runJobs();
  t.match(await importOf(queued.id), { status: 'cancelled', created: 0 });
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: { startsWith: 'Cancel' } } }), 0);
  const again = await a.call(memberA, 'POST', `imports/${queued.id}/cancel/`);
  t.equal(again.statusCode, 409);
  t.equal(json(again).code, 'import_finished');
  t.equal((await a.call(viewerA, 'POST', `imports/${queued.id}/cancel/`)).statusCode, 403);
});

t.test('cancel while running keeps the committed batches and counts them', async (t) => {
  // The second batch fails (its third row is refused by the database), so the import stays running after one batch.
  await app.pg.query(`CREATE FUNCTION import_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.name = 'Half 2' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`);
  await app.pg.query(`CREATE TRIGGER import_test_refuse BEFORE INSERT ON companies FOR EACH ROW EXECUTE FUNCTION import_test_refuse()`);
  t.teardown(() => app.pg.query('DROP TRIGGER import_test_refuse ON companies'));
  const file = ['name', ...Array.from({ length: 4 }, (_, i) => `Half ${i}`)].join('\n');
  const queued = json(await upload(a, memberA, { kind: 'companies', file }));
  await runJobs(2);
  t.match(await importOf(queued.id), { status: 'running', processed_rows: 2, created: 2 });
  const cancelled = json(await a.call(memberA, 'POST', `imports/${queued.id}/cancel/`));
  t.match(cancelled, { status: 'cancelled', processed_rows: 2, created: 2 });
  await makeDue(app.pg, JOBS.import, queued.id);
  await runJobs(2);
  t.match(await importOf(queued.id), { status: 'cancelled', processed_rows: 2, created: 2 });
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: { startsWith: 'Half' } } }), 2);
});

t.test('listing, tenancy and the import.finished trigger', async (t) => {
  const list = await a.call(viewerA, 'GET', 'imports/?limit=2');
  t.equal(list.statusCode, 200);
  t.equal(json(list).length, 2);
  t.match(list.headers.link, /rel="next"/);
  const all = json(await a.call(viewerA, 'GET', 'imports/?limit=200'));
  t.same(
    all.map((i: { created_at: string }) => i.created_at),
    [...all.map((i: { created_at: string }) => i.created_at)].sort().reverse(),
  );
  const someImport = all[0].id as string;
  t.equal((await b.call(memberB, 'GET', `imports/${someImport}/`)).statusCode, 404);
  t.equal((await a.call(memberB, 'GET', `imports/${someImport}/`)).statusCode, 404);
  t.equal((await b.call(memberB, 'GET', `imports/${someImport}/errors/`)).statusCode, 404);
  t.equal((await b.call(memberB, 'POST', `imports/${someImport}/cancel/`)).statusCode, 404);
  t.same(json(await b.call(memberB, 'GET', 'imports/')), []);
  t.equal((await a.call(viewerA, 'GET', 'imports/not-a-uuid/')).statusCode, 404);

  // Rules on company.created too: an import must not start them.
  for (const trigger of ['import_finished', 'company_created'] as const) {
    await app.db.automation.create({
      data: { organizationId: a.id, name: trigger, trigger, actionType: 'webhook', actionConfig: { url: 'https://hooks.example.com/x' } },
    });
  }
  const runsBefore = await app.db.automationRun.count({ where: { organizationId: a.id } });
  const queued = json(await upload(a, memberA, { kind: 'companies', file: 'name\nTriggered\nTriggered too\n' }));
  await runJobs();
  const runs = await app.db.automationRun.findMany({ where: { organizationId: a.id } });
  t.equal(runs.length, runsBefore + 1, 'one run for the import, none per row');
  t.match(runs.at(-1)?.payload, { event: 'import.finished', data: { id: queued.id, status: 'succeeded', created: 2 } });
});

t.test('export → import round trip keeps formula-looking values', async (t) => {
  const [c, memberC] = [b, memberB];
  // A record without website or email has no upsert key: start from records that have one.
  await app.db.company.deleteMany({ where: { organizationId: c.id } });
  await created(c.call(memberC, 'POST', 'companies/', { name: '=HYPERLINK("http://evil")', phone_number: '+1 555', website: '@home' }));
  await created(c.call(memberC, 'POST', 'companies/', { name: 'Plain, "quoted"', email: 'plain@example.com' }));
  const exported = (await c.call(memberC, 'GET', 'companies/export/')).body;
  t.match(exported, /'=HYPERLINK/);
  const queued = json(await upload(c, memberC, { kind: 'companies', file: exported, mode: 'upsert' }));
  await runJobs();
  const done = json(await c.call(memberC, 'GET', `imports/${queued.id}/`));
  t.match(done, { status: 'succeeded', updated: 2, created: 0, failed_rows: 0 });
  const reexported = (await c.call(memberC, 'GET', 'companies/export/')).body;
  const strip = (csv: string) => csv.split('\r\n').map((line) => line.split(',').slice(1, 6).join(','));
  t.same(strip(reexported), strip(exported), 'the same values after a round trip');
  const createdCopy = json(await upload(c, memberC, { kind: 'companies', file: exported }));
  await runJobs();
  // The copy of the company with an email is refused (emails are unique in a workspace, issue 27), as a failed row.
  t.match(json(await c.call(memberC, 'GET', `imports/${createdCopy.id}/`)), { status: 'succeeded', created: 1, failed_rows: 1 });
  t.equal(
    await app.db.company.count({
      where: { organizationId: c.id, name: '=HYPERLINK("http://evil")', phoneNumber: '+1 555', website: '@home' },
    }),
    2,
  );
});

t.test('Idempotency-Key replays the same import', async (t) => {
  const headers = { 'idempotency-key': 'import-once' };
  const first = await upload(a, memberA, { kind: 'companies', file: 'name\nOnce\n' }, headers);
  const second = await upload(a, memberA, { kind: 'companies', file: 'name\nOnce\n' }, headers);
  t.equal(first.statusCode, 202);
  t.equal(second.statusCode, 202);
  t.equal(json(second).id, json(first).id);
  t.equal((await upload(a, memberA, { kind: 'companies', file: 'name\nTwice\n' }, headers)).statusCode, 422);
});
