// The database's own wall: as the serving role, SQL without the workspace condition reads and writes only the
// workspace set for its transaction, and nothing without one; every table with an organization_id keeps its policy.
import t from 'tap';
import pg from 'pg';
import { buildTestApp } from '../helpers/app.js';
import { crmWorkspaces, created } from './crm-workspaces.js';
import { bypassesRowSecurity, servingRoleUrl } from '../../src/db/serving-role.js';
import { bindTenant } from '../../src/db/tenant.js';
import { scopeToOrganization } from '../../src/db/tenant-scope.js';
import { organizationPool, withPlanSettings } from '../../src/db/organization-setting.js';

const { app, databaseUrl } = await buildTestApp(t);
const { a, b, memberA, memberB } = await crmWorkspaces(app);
const companyA = await created<{ id: string }>(a.call(memberA, 'POST', 'companies/', { name: 'Acme Alpha' }));
const companyB = await created<{ id: string }>(b.call(memberB, 'POST', 'companies/', { name: 'Acme Beta' }));
await created(b.call(memberB, 'POST', 'contacts/', { first_name: 'Beta', last_name: 'Person', company_id: companyB.id }));

const serving = new pg.Client({ connectionString: servingRoleUrl(databaseUrl) });
await serving.connect();
t.teardown(() => serving.end());

/** Runs `work` in a transaction of the serving role with workspace `organizationId` set (none: null), then rolls back. */
async function inWorkspace<T>(organizationId: string | null, work: () => Promise<T>): Promise<T> {
  await serving.query('BEGIN');
  try {
    if (organizationId) await serving.query("SELECT set_config('app.organization_id', $1, true)", [organizationId]);
    return await work();
  } finally {
    await serving.query('ROLLBACK');
  }
}

const ids = (result: pg.QueryResult) => result.rows.map((row: { id: string }) => row.id);

t.test('the serving role, and the app under test, are bound by row-level security', async (t) => {
  t.equal(await bypassesRowSecurity(serving), false);
  t.equal(await bypassesRowSecurity(app.serving.pool), false, 'workspace requests in the tests go through the wall');
  t.equal(await bypassesRowSecurity(app.pg), true, 'the installation path is the owner');
});

t.test('without the workspace condition, workspace B stays out of a list, a search and a single read', async (t) => {
  await inWorkspace(a.id, async () => {
    t.same(ids(await serving.query('SELECT id FROM companies ORDER BY created_at DESC, id DESC')), [companyA.id], 'list');
    t.same(ids(await serving.query("SELECT id FROM companies WHERE name ILIKE '%acme%'")), [companyA.id], 'search');
    t.same(ids(await serving.query('SELECT id FROM companies WHERE id = $1', [companyB.id])), [], 'single record');
    t.same(ids(await serving.query('SELECT id FROM contacts')), [], "B's contact");
  });
});

t.test("without the workspace condition, workspace B's notes and their targets stay out", async (t) => {
  const noteB = await created<{ id: string }>(
    b.call(memberB, 'POST', 'notes/', { body: 'Beta note', targets: [{ type: 'company', id: companyB.id }] }),
  );
  await inWorkspace(a.id, async () => {
    t.same(ids(await serving.query('SELECT id FROM notes WHERE id = $1', [noteB.id])), [], 'the note');
    t.equal((await serving.query('SELECT 1 FROM note_targets WHERE note_id = $1', [noteB.id])).rowCount, 0, 'its targets');
    t.equal((await serving.query("UPDATE notes SET body = 'taken' WHERE id = $1", [noteB.id])).rowCount, 0, 'update');
  });
  await inWorkspace(b.id, async () => {
    t.same(ids(await serving.query('SELECT id FROM notes WHERE id = $1', [noteB.id])), [noteB.id], 'its own workspace reads it');
  });
});

t.test("without the workspace condition, workspace B's saved views stay out", async (t) => {
  const viewB = await created<{ id: string }>(
    b.call(memberB, 'POST', 'views/', { name: 'Beta view', object: 'companies', visibility: 'workspace' }),
  );
  await inWorkspace(a.id, async () => {
    t.same(ids(await serving.query('SELECT id FROM saved_views WHERE id = $1', [viewB.id])), [], 'the view');
    t.equal((await serving.query("UPDATE saved_views SET name = 'taken' WHERE id = $1", [viewB.id])).rowCount, 0, 'update');
    t.equal((await serving.query('DELETE FROM saved_views WHERE id = $1', [viewB.id])).rowCount, 0, 'delete');
  });
  await inWorkspace(b.id, async () => {
    t.same(ids(await serving.query('SELECT id FROM saved_views WHERE id = $1', [viewB.id])), [viewB.id], 'its own workspace reads it');
  });
});

t.test('without the workspace condition, workspace B is neither updated, deleted nor written into', async (t) => {
  await inWorkspace(a.id, async () => {
    t.equal((await serving.query("UPDATE companies SET name = 'taken' WHERE id = $1", [companyB.id])).rowCount, 0, 'update');
    t.equal((await serving.query("UPDATE companies SET name = 'taken' WHERE name LIKE 'Acme%'")).rowCount, 1, 'only A');
    t.equal((await serving.query('DELETE FROM companies WHERE id = $1', [companyB.id])).rowCount, 0, 'delete');
  });
  await t.rejects(
    inWorkspace(a.id, () => serving.query("INSERT INTO companies (id, organization_id, name) VALUES (gen_random_uuid(), $1, 'x')", [b.id])),
    { code: '42501' },
    'an insert into B is refused',
  );
  const stored = await app.db.company.findUniqueOrThrow({ where: { id: companyB.id } });
  t.equal(stored.name, 'Acme Beta');
});

t.test('a transaction without the setting reads no workspace row at all', async (t) => {
  const { rows: tables } = await app.pg.query<{ table: string }>(
    "SELECT table_name AS table FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'organization_id'",
  );
  t.ok(tables.length >= 18);
  const owner = await app.pg.query<{ count: number }>('SELECT count(*)::int AS count FROM memberships');
  t.ok((owner.rows[0]?.count ?? 0) > 0, 'there are rows to hide');
  await inWorkspace(null, async () => {
    for (const { table } of tables) {
      const { rows } = await serving.query<{ count: number }>(`SELECT count(*)::int AS count FROM ${pg.escapeIdentifier(table)}`);
      t.equal(rows[0]?.count, 0, table);
    }
  });
  // Nor outside a transaction, nor with the setting empty.
  t.equal((await serving.query('SELECT id FROM companies')).rowCount, 0);
  await inWorkspace(null, async () => {
    await serving.query("SELECT set_config('app.organization_id', '', true)");
    t.equal((await serving.query('SELECT id FROM companies')).rowCount, 0);
  });
});

t.test("the tenant handles' statements carry their workspace, and only theirs", async (t) => {
  const membership = await app.db.membership.findFirstOrThrow({ where: { organizationId: a.id }, include: { organization: true } });
  const tenant = bindTenant(app.serving.db, app.serving.pool, {
    membershipId: membership.id,
    role: 'member',
    organization: membership.organization,
  });
  const raw = await tenant.db.$queryRaw<Array<{ id: string }>>`SELECT id FROM companies`;
  t.same(
    raw.map((row) => row.id),
    [companyA.id],
    "the tenant client's raw SQL, which has no condition",
  );
  const pool = organizationPool(app.serving.pool, a.id);
  t.same(ids(await pool.query('SELECT id FROM companies')), [companyA.id], "the tenant pool's");
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    t.same(ids(await client.query('SELECT id FROM companies')), [companyA.id], 'in a transaction of its client');
    await client.query('COMMIT');
  } finally {
    client.release();
  }
  t.equal((await app.serving.pool.query('SELECT id FROM companies')).rowCount, 0, 'the bare serving pool reads nothing');
  // Many at once on the shared Prisma client: each operation keeps its own workspace.
  const tenantB = bindTenant(app.serving.db, app.serving.pool, {
    membershipId: '',
    role: 'member',
    organization: { ...membership.organization, id: b.id },
  });
  const reads = await Promise.all(
    Array.from({ length: 20 }, (_, n) => (n % 2 ? tenantB : tenant).db.company.findMany({ select: { id: true } })),
  );
  t.same(
    reads.map((rows) => rows.map((row) => row.id)),
    reads.map((_, n) => [n % 2 ? companyB.id : companyA.id]),
  );
});

t.test('a transaction block gets the workspace with its first statement, and again after a savepoint rolls it back', async (t) => {
  const setting = async (client: pg.PoolClient) =>
    (await client.query("SELECT current_setting('app.organization_id', true) AS value")).rows[0]?.value as string;
  const client = await organizationPool(app.serving.pool, a.id).connect();
  try {
    await client.query('BEGIN');
    t.equal(await setting(client), a.id, 'the first statement of the block carries the setting');
    // Cleared by hand: were the preface sent with every statement, the next read would see the workspace again.
    await client.query("SELECT set_config('app.organization_id', '', true)");
    t.equal(await setting(client), '', 'later statements of the block go without the preface: the setting holds until COMMIT');
    await client.query('ROLLBACK');

    await client.query('BEGIN');
    await client.query('SAVEPOINT before_first');
    t.same(ids(await client.query('SELECT id FROM companies')), [companyA.id], 'set with the first statement after the savepoint');
    await client.query('ROLLBACK TO SAVEPOINT before_first');
    t.same(ids(await client.query('SELECT id FROM companies')), [companyA.id], 'rolled back with it, and sent again after');
    await client.query('COMMIT');
    t.same(ids(await client.query('SELECT id FROM companies')), [companyA.id], 'outside a block, every statement carries it');
    t.equal(await setting(client), a.id);
  } finally {
    client.release();
  }
});

t.test("a statement's plan settings hold for it alone, in its workspace, and never inside a block", async (t) => {
  const client = await organizationPool(app.serving.pool, a.id).connect();
  try {
    const read = "SELECT current_setting('enable_indexscan') AS scan, current_setting('work_mem') AS mem, id FROM companies";
    const planned = await client.query(withPlanSettings({ text: read }, { enable_indexscan: 'off', work_mem: '64MB' }));
    t.same(
      planned.rows.map((row: { scan: string; mem: string; id: string }) => [row.scan, row.mem, row.id]),
      [['off', '64MB', companyA.id]],
      'the settings and the workspace hold for the statement',
    );
    const after = await client.query("SELECT current_setting('enable_indexscan') AS scan, current_setting('work_mem') AS mem");
    t.not(after.rows[0]?.scan, 'off', 'the next statement on the same connection plans as usual');
    t.not(after.rows[0]?.mem, '64MB');
    await client.query('BEGIN');
    t.throws(() => client.query(withPlanSettings({ text: 'SELECT 1' }, { enable_indexscan: 'off' })), /outside a transaction block/);
    await client.query('ROLLBACK');
  } finally {
    client.release();
  }
});

t.test('single reads of two workspaces in the same tick each find their own record (no shared batch)', async (t) => {
  // Prisma gathers findUnique calls of one tick into one batch, sent in the context of the first: the second
  // workspace's read would run with the first's setting, and its record, hidden by the policy, answer 404.
  const readA = scopeToOrganization(app.serving.db, a.id);
  const readB = scopeToOrganization(app.serving.db, b.id);
  const [foundA, foundB] = await Promise.all([
    readA.company.findUnique({ where: { id: companyA.id }, select: { id: true } }),
    readB.company.findUnique({ where: { id: companyB.id }, select: { id: true } }),
  ]);
  t.same([foundA?.id, foundB?.id], [companyA.id, companyB.id]);
  const [orThrowA, orThrowB] = await Promise.all([
    readA.company.findUniqueOrThrow({ where: { id: companyA.id }, select: { id: true } }),
    readB.company.findUniqueOrThrow({ where: { id: companyB.id }, select: { id: true } }),
  ]);
  t.same([orThrowA.id, orThrowB.id], [companyA.id, companyB.id]);
  // Through the API: two workspaces' members read their own company at once, many times over.
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, n) =>
      n % 2 ? b.call(memberB, 'GET', `companies/${companyB.id}/`) : a.call(memberA, 'GET', `companies/${companyA.id}/`),
    ),
  );
  t.same(
    answers.map((answer) => answer.statusCode),
    answers.map(() => 200),
  );
  t.equal(await readB.company.findUnique({ where: { id: companyA.id } }), null, "another workspace's record stays unread");
  await t.rejects(readB.company.findUniqueOrThrow({ where: { id: companyA.id } }), { code: 'P2025' });
  const membership = await scopeToOrganization(app.serving.db, a.id).membership.findUnique({
    where: { organizationId_userId: { organizationId: a.id, userId: memberA.id } },
    select: { role: true },
  });
  t.equal(membership?.role, 'member', 'a compound unique key reads as well');
  // In a transaction the read stays in it: it sees the transaction's own uncommitted row.
  const seen = await readA.$transaction(async (tx) => {
    const company = await tx.company.create({ data: { name: 'Uncommitted Ltd', organizationId: a.id }, select: { id: true } });
    const [inside] = await Promise.all([tx.company.findUnique({ where: { id: company.id }, select: { id: true } })]);
    await tx.company.delete({ where: { id: company.id } });
    return inside?.id === company.id;
  });
  t.ok(seen, 'a findUnique in a transaction reads within it');
});

t.test('every table with an organization_id has row-level security enabled, forced, and a policy', async (t) => {
  const { rows } = await app.pg.query<{ table: string; enabled: boolean; forced: boolean; policies: number }>(
    `SELECT c.relname AS table, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
            (SELECT count(*)::int FROM pg_policies p WHERE p.schemaname = n.nspname AND p.tablename = c.relname) AS policies
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped)
      ORDER BY c.relname`,
  );
  t.equal(rows.length, 25);
  t.ok(
    ['notes', 'note_targets', 'crm_events', 'event_stream_tickets', 'event_streams', 'saved_views', 'custom_field_definitions'].every(
      (table) => rows.some((row) => row.table === table),
    ),
    'notes and their targets, the event log, the change streams, saved views and custom field definitions too',
  );
  for (const row of rows) {
    t.ok(
      row.enabled && row.forced && row.policies > 0,
      `${row.table}: enabled ${row.enabled}, forced ${row.forced}, ${row.policies} policies`,
    );
  }
});

t.test("a list's plan keeps the workspace index: the policy's condition is an index condition", async (t) => {
  const list = 'SELECT id FROM companies WHERE organization_id = $1 ORDER BY created_at DESC, id DESC LIMIT 50';
  /** The plan of `text` as `client` sees it; the table is small, so sequential scans are off to show the index. */
  const explain = async (client: pg.ClientBase, text: string, values: unknown[]) => {
    await client.query('SET LOCAL enable_seqscan = off');
    const { rows } = await client.query(`EXPLAIN (COSTS OFF) ${text}`, values);
    return rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
  };
  const owner = await app.pg.connect();
  let before: string;
  try {
    await owner.query('BEGIN');
    before = await explain(owner, list, [a.id]);
    await owner.query('ROLLBACK');
  } finally {
    owner.release();
  }
  const after = await inWorkspace(a.id, () => explain(serving, list, [a.id]));
  const policyAlone = await inWorkspace(a.id, () =>
    explain(serving, 'SELECT id FROM companies ORDER BY created_at DESC, id DESC LIMIT 50', []),
  );
  t.comment(`the owner (no policy):\n${before}\nthe serving role:\n${after}\nthe serving role, no condition of its own:\n${policyAlone}`);
  for (const plan of [before, after]) t.match(plan, /Index (Only )?Scan using companies_organization_id_created_at_id_idx on companies/);
  // The policy's comparison with the statement's own workspace is decided once (a one-time filter), never per row.
  t.notMatch(after, /^\s*Filter:.*organization_id/m, 'no filter after the index');
  t.match(policyAlone, /Index Cond: \(organization_id = \(NULLIF\(current_setting/, "alone, the policy's condition is the index condition");
});
