// The index of an ordered custom field: built by its job for number, decimal, date and datetime fields only, partial
// on its workspace, read by the query language's ranges and ascending sorts, dropped at archive and built again at
// restore, rebuilt when a crash left it invalid, built without stopping record writes, and dropped with its workspace.
import pg from 'pg';
import t, { type Test } from 'tap';
import { servingRoleUrl } from '../../src/db/serving-role.js';
import { runDueJobs } from '../../src/jobs/queue.js';
import {
  customFieldIndexName,
  customFieldIndexTasks,
  customFieldRecencyIndexName,
  queueResizedCustomFieldIndexes,
  syncCustomFieldIndex,
} from '../../src/modules/custom-fields/index-job.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces, workspace } from '../tenancy/crm-workspaces.js';

const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { a, b, memberA, memberB } = await crmWorkspaces(app);
const adminA = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
const adminB = await createUser(app, { membership: { organizationId: b.id, role: 'admin' } });

const serving = new pg.Client({ connectionString: servingRoleUrl(databaseUrl) });
await serving.connect();
t.teardown(() => serving.end());

/**
 * The query page statements the serving pool receives until the test `t` ends (text and values, to be explained as
 * they ran).
 */
function pageStatements(t: Test): pg.QueryConfig[] {
  const sent: pg.QueryConfig[] = [];
  const pool = app.serving.pool as unknown as { query: (...args: unknown[]) => unknown };
  const query = pool.query.bind(pool);
  pool.query = (config: unknown, ...rest: unknown[]) => {
    const statement = config as pg.QueryConfig;
    if (typeof statement?.text === 'string' && statement.text.includes('query_key_'))
      sent.push({ text: statement.text, values: statement.values });
    return query(config, ...rest);
  };
  t.teardown(() => {
    pool.query = query;
  });
  return sent;
}

/** A sort of the page's rows in a plan (the definitions' stamp, computed once per statement, sorts a few ids of its own). */
const PAGE_SORT = /Sort Key: (?!custom_field_definitions)/;
// Every workspace here is small: the tests of the indexes themselves build them whatever the size.
const runJobs = (minRecords = 0) => runDueJobs(databaseUrl, customFieldIndexTasks({ pool: app.pg, minRecords }));
const define = (ws: typeof a, admin: typeof adminA, key: string, type: string) =>
  created<{ id: string }>(ws.call(admin, 'POST', 'custom-fields/', { object: 'company', key, label: key, type }));

/** The custom-field indexes of the database: name → validity and definition. */
async function indexes(): Promise<Map<string, { valid: boolean; definition: string }>> {
  const { rows } = await app.pg.query<{ name: string; valid: boolean; definition: string }>(
    `SELECT c.relname AS name, i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS definition
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname ~ '^custom_field_[0-9a-f]{32}(_recent)?$'`,
  );
  return new Map(rows.map((row) => [row.name, { valid: row.valid, definition: row.definition }]));
}

const seats = await define(a, adminA, 'seats', 'number');
const mrr = await define(a, adminA, 'mrr', 'decimal');
const renewal = await define(a, adminA, 'renewal', 'date');
const signed = await define(a, adminA, 'signed', 'datetime');
const code = await define(a, adminA, 'code', 'text');
// The same key in another workspace, as text: its values do not cast, and a's index must not try them.
const seatsB = await define(b, adminB, 'seats', 'text');
await created(b.call(memberB, 'POST', 'companies/', { name: 'Other', custom_fields: { seats: 'not a number' } }));

t.test('the job builds two valid indexes per ordered field, partial on its workspace, and none for the other types', async (t) => {
  t.ok((await runJobs()) >= 4, 'a job per ordered field');
  const built = await indexes();
  for (const field of [seats, mrr, renewal, signed]) {
    for (const name of [customFieldIndexName(field.id), customFieldRecencyIndexName(field.id)]) {
      const index = built.get(name);
      t.ok(index?.valid, `${name} valid`);
      t.match(index?.definition, `WHERE (organization_id = '${a.id}'::uuid)`);
    }
  }
  t.match(
    built.get(customFieldRecencyIndexName(seats.id))?.definition,
    /\(created_at DESC, id DESC, crm_custom_number\(custom_fields, 'seats'::text\)\)/,
    'the recency index: newest first, then the value',
  );
  t.match(built.get(customFieldIndexName(seats.id))?.definition, /crm_custom_number\(custom_fields, 'seats'::text\)/);
  t.match(built.get(customFieldIndexName(renewal.id))?.definition, /crm_custom_date\(custom_fields, 'renewal'::text\)/);
  t.match(built.get(customFieldIndexName(signed.id))?.definition, /crm_custom_timestamptz\(custom_fields, 'signed'::text\)/);
  t.notOk(built.has(customFieldIndexName(code.id)), 'no index for text');
  t.notOk(built.has(customFieldIndexName(seatsB.id)), "none for b's text field of the same key");
  t.equal(built.size, 8);
});

t.test('ranges and ascending sorts read the index, with the same answers', async (t) => {
  // Enough rows that an index is worth reading; loaded as the owner, in the form the API stores.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, custom_fields, updated_at)
     SELECT gen_random_uuid(), $1, 'Bulk ' || n,
            jsonb_build_object('seats', n, 'mrr', (n * 2.5)::text, 'renewal', to_char(date '2026-01-01' + n % 1000, 'YYYY-MM-DD'),
                               'signed', to_char(timestamptz '2026-01-01' + make_interval(mins => n), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
            now()
     FROM generate_series(1, 5000) AS n`,
    [a.id],
  );
  await app.pg.query('ANALYZE companies');
  const sent = pageStatements(t);
  /** The page's answer, and the plan of the statement that read it. */
  const page = async (body: object, steer = false) => {
    sent.length = 0;
    const res = await a.call(memberA, 'POST', 'companies/query/', body);
    t.equal(res.statusCode, 200, res.body);
    const statement = sent.at(-1);
    // Explained as it ran: by the serving role, under the workspace's policy (an index condition must be leakproof).
    await serving.query('BEGIN');
    await serving.query(`SELECT set_config('app.organization_id', $1, true)`, [a.id]);
    // On this small table a sort of everything is as cheap as any index: `steer` shows what the index can serve.
    if (steer) await serving.query('SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off');
    const { rows } = await serving.query(`EXPLAIN (COSTS OFF) ${statement?.text}`, statement?.values);
    await serving.query('ROLLBACK');
    const plan = rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
    const answer = json(res) as { results: Array<{ custom_fields: Record<string, unknown> }>; next_cursor: string | null };
    return { ...answer, plan, statements: sent.length };
  };
  const between = (key: string, from: unknown, to: unknown) => ({
    and: [
      { field: `custom.${key}`, op: 'gte', value: from },
      { field: `custom.${key}`, op: 'lte', value: to },
    ],
  });
  const range = await page({ filter: between('seats', 1000, 1009), limit: 50 });
  t.same(
    range.results.map((row) => row.custom_fields.seats).sort((x, y) => Number(x) - Number(y)),
    [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009],
  );
  t.match(range.plan, `using ${customFieldIndexName(seats.id)} on`, "the rare number range reads its value index's candidates");
  // A range past the 3,000 candidates a page takes from the index is read in the page's order: the same answer. In
  // the default order, among the newest rows of the recency index, whose entries hold the value.
  const common = await page({ filter: between('seats', 1, 4000), limit: 50 }, true);
  const reference = async (order: string, offset = 0) =>
    (
      await app.pg.query<{ seats: number }>(
        `SELECT (custom_fields ->> 'seats')::int AS seats FROM companies
         WHERE organization_id = $1 AND (custom_fields ->> 'seats')::numeric BETWEEN 1 AND 4000 ORDER BY ${order} LIMIT 50 OFFSET $2`,
        [a.id, offset],
      )
    ).rows.map((row) => row.seats);
  t.same(
    common.results.map((row) => row.custom_fields.seats),
    await reference('created_at DESC, id DESC'),
  );
  t.notMatch(common.plan, /candidate/, 'read in order, not from the candidates');
  t.match(common.plan, `Index Scan using ${customFieldRecencyIndexName(seats.id)} on`, 'the recency index serves the default order');
  t.notMatch(common.plan, PAGE_SORT, 'in its order');
  t.equal(common.statements, 1, 'the walk among the newest rows answered');
  // The next page walks on from the cursor, with the same index.
  const next = await page({ filter: between('seats', 1, 4000), limit: 50, cursor: common.next_cursor }, true);
  t.same(
    next.results.map((row) => row.custom_fields.seats),
    await reference('created_at DESC, id DESC', 50),
  );
  t.match(next.plan, `Index Scan using ${customFieldRecencyIndexName(seats.id)} on`);
  t.equal(next.statements, 1);
  // In another order: a walk of the first rows in that order.
  const byName = await page({ filter: between('seats', 1, 4000), sort: [{ field: 'name', direction: 'desc' }], limit: 50 });
  t.same(
    byName.results.map((row) => row.custom_fields.seats),
    await reference('name COLLATE crm_natural DESC, id DESC'),
  );
  t.match(byName.plan, /Subquery Scan/, 'a walk of the first rows in order was enough');
  // Equality is containment, which the map's GIN index serves under the policy too.
  const one = await page({ filter: { field: 'custom.seats', op: 'eq', value: 1234 } });
  t.same(
    one.results.map((row) => row.custom_fields.seats),
    [1234],
  );
  t.match(one.plan, 'companies_custom_fields_idx', 'equality reads the GIN index');
  const sorted = await page({ sort: [{ field: 'custom.seats' }], limit: 3 });
  t.same(
    sorted.results.map((row) => row.custom_fields.seats),
    [1, 2, 3],
  );
  t.match(sorted.plan, `Index Scan using ${customFieldIndexName(seats.id)}`, 'the sort reads its index');
  t.notMatch(sorted.plan, PAGE_SORT, 'read in the index order');
  // Descending, empty values still last: the filled rows, then the empty ones, each a backward scan of the index.
  const descending = await page({ sort: [{ field: 'custom.seats', direction: 'desc' }], limit: 3 }, true);
  t.same(
    descending.results.map((row) => row.custom_fields.seats),
    [5000, 4999, 4998],
  );
  t.match(descending.plan, `Index Scan Backward using ${customFieldIndexName(seats.id)} on`, 'a page of the index, read backward');
  for (const name of ['No seats 1', 'No seats 2']) await created(a.call(memberA, 'POST', 'companies/', { name }));
  const edge = {
    or: [
      { field: 'custom.seats', op: 'lte', value: 2 },
      { field: 'custom.seats', op: 'is_empty' },
    ],
  };
  const { rows: expected } = await app.pg.query<{ id: string }>(
    `SELECT id FROM companies WHERE organization_id = $1 AND archived_at IS NULL
       AND ((custom_fields ->> 'seats')::numeric <= 2 OR custom_fields ->> 'seats' IS NULL)
     ORDER BY (custom_fields ->> 'seats') IS NULL, (custom_fields ->> 'seats')::numeric DESC, id DESC`,
    [a.id],
  );
  t.ok(expected.length > 3, 'filled and empty rows both match');
  const walked: string[] = [];
  let cursor: string | null = null;
  do {
    const next = await page({
      filter: edge,
      sort: [{ field: 'custom.seats', direction: 'desc' }],
      limit: 2,
      ...(cursor ? { cursor } : {}),
    });
    walked.push(...next.results.map((row) => (row as unknown as { id: string }).id));
    cursor = next.next_cursor;
  } while (cursor);
  t.same(
    walked,
    expected.map((row) => row.id),
    'every page in order, across the filled and the empty rows',
  );
  const dates = await page({ filter: between('renewal', '2026-01-02', '2026-01-03'), limit: 50 });
  t.equal(dates.results.length, 10, 'n % 1000 in 1..2: five rows each');
  t.match(dates.plan, `using ${customFieldIndexName(renewal.id)} on`, 'the date range reads its index');
  const instants = await page({ filter: between('signed', '2026-01-01T01:00:00Z', '2026-01-01T01:04:00+00:00'), limit: 50 });
  t.equal(instants.results.length, 5);
  t.match(instants.plan, `using ${customFieldIndexName(signed.id)} on`, 'the datetime range reads its index');
});

t.test("a range in the default order walks about the 8,000 newest rows, found from the table's sample", async (t) => {
  const organization = await app.db.organization.create({ data: { name: 'Aged', slug: 'aged-companies' } });
  const owner = await createUser(app, { membership: { organizationId: organization.id, role: 'owner' } });
  const aged = workspace(app, organization.id);
  await define(aged, owner, 'age', 'number');
  // 20,000 rows a second apart, each with its age in seconds: the newest rows hold the smallest values.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, custom_fields, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'Aged ' || n, jsonb_build_object('age', n), now() - make_interval(secs => n), now()
     FROM generate_series(1, 20000) AS n`,
    [aged.id],
  );
  await app.pg.query('ANALYZE companies');
  await runJobs();
  const sent = pageStatements(t);
  const read = async (from: number, to: number) => {
    sent.length = 0;
    const filter = {
      and: [
        { field: 'custom.age', op: 'gte', value: from },
        { field: 'custom.age', op: 'lte', value: to },
      ],
    };
    const res = await aged.call(owner, 'POST', 'companies/query/', { filter, limit: 50 });
    t.equal(res.statusCode, 200, res.body);
    const ages = (json(res) as { results: Array<{ custom_fields: { age: number } }> }).results.map((row) => row.custom_fields.age);
    return { ages, statements: [...sent] };
  };
  const upTo = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);

  const newest = await read(1, 2000);
  t.same(newest.ages, upTo(1, 50));
  t.equal(newest.statements.length, 1, 'the walk among the newest rows found the page');
  // Its bound comes from the sample, 125 index entries, not from 8,000 rows of the table.
  await serving.query('BEGIN');
  await serving.query(`SELECT set_config('app.organization_id', $1, true)`, [aged.id]);
  await serving.query('SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off');
  const { rows } = await serving.query(`EXPLAIN (COSTS OFF) ${newest.statements[0]!.text}`, newest.statements[0]!.values);
  await serving.query('ROLLBACK');
  t.match(
    rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n'),
    /Index Only Scan Backward using companies_recency_sample_idx/,
  );

  // Matches only among the oldest rows: the walk stops at about the 8,000th newest row and finds none, and the
  // candidates (past 3,000) give way to a read in order. Without the bound the walk would have found them.
  const oldest = await read(15001, 20000);
  t.same(oldest.ages, upTo(15001, 50), 'the same page');
  t.equal(oldest.statements.length, 3, 'the bounded walk, the counted candidates, the ordered read');
  const rare = await read(19001, 19010);
  t.same(rare.ages, upTo(19001, 10));
  t.equal(rare.statements.length, 2, 'the bounded walk, then the few candidates');
});

t.test('a field gets its indexes once its workspace is large enough, and loses them when it shrinks', async (t) => {
  const minRecords = 100;
  const organization = await app.db.organization.create({ data: { name: 'Growing', slug: 'growing-companies' } });
  const owner = await createUser(app, { membership: { organizationId: organization.id, role: 'owner' } });
  const growing = workspace(app, organization.id);
  const score = await define(growing, owner, 'score', 'number');
  const add = (from: number, to: number) =>
    app.pg.query(
      `INSERT INTO companies (id, organization_id, name, custom_fields, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'Growing ' || n, jsonb_build_object('score', n), now() - make_interval(secs => n), now()
       FROM generate_series($2::int, $3::int) AS n`,
      [growing.id, from, to],
    );
  const sent = pageStatements(t);
  /** The lowest three scores, and whether the page's statement read them through the index's function. */
  const lowest = async () => {
    sent.length = 0;
    const res = await growing.call(owner, 'POST', 'companies/query/', { sort: [{ field: 'custom.score' }], limit: 3 });
    t.equal(res.statusCode, 200, res.body);
    const scores = (json(res) as { results: Array<{ custom_fields: { score: number } }> }).results.map((row) => row.custom_fields.score);
    return { scores, throughIndex: sent.some((statement) => statement.text.includes('crm_custom_number(')) };
  };
  const state = async () => {
    const present = await indexes();
    return {
      indexes: [customFieldIndexName(score.id), customFieldRecencyIndexName(score.id)].map((name) => present.get(name)?.valid ?? false),
      indexed: (await app.db.customFieldDefinition.findUniqueOrThrow({ where: { id: score.id } })).indexedAt !== null,
    };
  };

  await add(1, 60);
  await runJobs(minRecords);
  t.same(await state(), { indexes: [false, false], indexed: false }, '60 records: no index');
  t.same(await lowest(), { scores: [1, 2, 3], throughIndex: false }, 'the cast reads them, not the function');
  t.equal(await queueResizedCustomFieldIndexes({ pool: app.pg, minRecords }), 0, 'nothing to do at 60');

  await add(61, 120);
  t.equal(await queueResizedCustomFieldIndexes({ pool: app.pg, minRecords }), 1, 'the sweep sees it grow past 100');
  t.equal(await runJobs(minRecords), 1);
  t.same(await state(), { indexes: [true, true], indexed: true }, '120 records: both indexes, and the mark');
  t.same(await lowest(), { scores: [1, 2, 3], throughIndex: true }, 'the page reads the index');

  // Kept down to half of the size, so that a workspace near it does not build and drop them in turn.
  await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND (custom_fields ->> 'score')::int > 60`, [growing.id]);
  t.equal(await queueResizedCustomFieldIndexes({ pool: app.pg, minRecords }), 0, 'kept at 60');
  await app.pg.query(`DELETE FROM companies WHERE organization_id = $1 AND (custom_fields ->> 'score')::int > 40`, [growing.id]);
  t.equal(await queueResizedCustomFieldIndexes({ pool: app.pg, minRecords }), 1, 'dropped below 50');
  t.equal(await runJobs(minRecords), 1);
  t.same(await state(), { indexes: [false, false], indexed: false }, 'the mark cleared, the indexes dropped');
  t.same(await lowest(), { scores: [1, 2, 3], throughIndex: false });
});

t.test('archive drops the index, restore builds it again; an invalid one is rebuilt', async (t) => {
  t.equal((await a.call(adminA, 'DELETE', `custom-fields/${mrr.id}/`)).statusCode, 204);
  await runJobs();
  t.notOk((await indexes()).has(customFieldIndexName(mrr.id)), 'gone with the archive');
  t.notOk((await indexes()).has(customFieldRecencyIndexName(mrr.id)), 'both');
  t.equal((await a.call(adminA, 'POST', `custom-fields/${mrr.id}/restore/`)).statusCode, 200);
  await runJobs();
  t.ok((await indexes()).get(customFieldIndexName(mrr.id))?.valid, 'back with the restore');
  t.ok((await indexes()).get(customFieldRecencyIndexName(mrr.id))?.valid, 'both');

  // What a crash in the middle of CREATE INDEX CONCURRENTLY leaves behind.
  await app.pg.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [customFieldIndexName(mrr.id)]);
  await syncCustomFieldIndex({ pool: app.pg }, mrr.id);
  t.ok((await indexes()).get(customFieldIndexName(mrr.id))?.valid, 'dropped and built again');
});

t.test('record writes go on while an index is being built', async (t) => {
  const score = await define(a, adminA, 'score', 'number');
  // A write transaction open on companies: CREATE INDEX CONCURRENTLY waits for it to end before it builds.
  const writer = new pg.Client({ connectionString: databaseUrl });
  await writer.connect();
  t.teardown(() => writer.end());
  await writer.query('BEGIN');
  await writer.query(`INSERT INTO companies (id, organization_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'Open', now())`, [a.id]);
  const building = runJobs();
  const waiting = async () => {
    const { rows } = await app.pg.query(
      `SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'`,
    );
    return rows.length > 0;
  };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && !(await waiting())) await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(await waiting(), 'the build waits for the open write');
  // Meanwhile creates, updates and deletes of the same table go through.
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'During', custom_fields: { score: 7 } }));
  t.equal((await a.call(memberA, 'PATCH', `companies/${company.id}/`, { custom_fields: { score: 8 } })).statusCode, 200);
  t.ok(await waiting(), 'still building');
  await writer.query('COMMIT');
  await building;
  t.ok((await indexes()).get(customFieldIndexName(score.id))?.valid);
  const found = await a.call(memberA, 'POST', 'companies/query/', { filter: { field: 'custom.score', op: 'eq', value: 8 } });
  t.same(
    json(found).results.map((row: { name: string }) => row.name),
    ['During'],
  );
});

t.test("a deleted workspace's field indexes are dropped by their jobs", async (t) => {
  const organization = await app.db.organization.create({ data: { name: 'Short-lived', slug: 'short-lived' } });
  const owner = await createUser(app, { membership: { organizationId: organization.id, role: 'owner' } });
  const doomed = workspace(app, organization.id);
  const fields = [await define(doomed, owner, 'seats', 'number'), await define(doomed, owner, 'renewal', 'date')];
  await runJobs();
  for (const field of fields) t.ok((await indexes()).get(customFieldRecencyIndexName(field.id))?.valid, 'built');
  t.equal((await app.inject({ method: 'DELETE', url: `/api/v1/organizations/${doomed.id}/`, headers: owner.headers })).statusCode, 204);
  t.equal(await runJobs(), 2, "a job per deleted field's index");
  for (const field of fields) {
    t.notOk((await indexes()).has(customFieldIndexName(field.id)), 'value index dropped');
    t.notOk((await indexes()).has(customFieldRecencyIndexName(field.id)), 'recency index dropped');
  }
  t.ok((await indexes()).get(customFieldIndexName(seats.id))?.valid, "the other workspace's indexes stay");
});
