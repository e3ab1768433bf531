// Incremental sync: `updated_since` hands out every change once committed, in commit-safe order, never skipping one
// whose transaction began earlier and committed later (forced with a transaction held open on a second connection);
// the deletions feed completes it; a local copy kept in step by both equals the database after any interleaving.
import fc from 'fast-check';
import pg from 'pg';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { crmWorkspaces, type Workspace } from '../tenancy/crm-workspaces.js';

const { app, databaseUrl } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
t.setTimeout(300_000);

interface Company {
  id: string;
  name: string;
  updated_at: string;
}

/** One poll of a sync: follows its links until a page is shorter than `limit`; returns the records and where to poll next. */
async function poll(ws: Workspace, url: string, limit = 3): Promise<{ records: Company[]; next: string; pages: number }> {
  const records: Company[] = [];
  let pages = 0;
  for (let current = url; ; ) {
    const res = await ws.call(viewerA, 'GET', current);
    if (res.statusCode !== 200) throw new Error(`${current}: ${res.statusCode} ${res.body}`);
    const page = json<Company[]>(res);
    records.push(...page);
    pages += 1;
    const link = /<([^>]+)>; rel="next"/.exec(String(res.headers.link))?.[1];
    if (!link) throw new Error('a sync page without a next link');
    const next = link.replace(`/api/v1/organizations/${ws.id}/`, '');
    if (page.length < limit) return { records, next, pages };
    current = next;
  }
}

/**
 * Polls until `count` records arrived: changes are handed out once every older transaction of the cluster has
 * ended, and other test files running beside this one may hold one open a moment (a delay, never a loss).
 */
async function pollFor(ws: Workspace, url: string, count: number, limit = 3) {
  const records: Company[] = [];
  let next = url;
  for (let attempt = 0; attempt < 100; attempt++) {
    const polled = await poll(ws, next, limit);
    records.push(...polled.records);
    next = polled.next;
    if (records.length >= count) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { records, next };
}

const start = new Date(Date.now() - 1000).toISOString();
const create = async (name: string) => json<Company>(await a.call(memberA, 'POST', 'companies/', { name }));

t.test('changes after an instant, each once, then only what changed next', async (t) => {
  const created = [await create('Sync one'), await create('Sync two'), await create('Sync three'), await create('Sync four')];
  const first = await pollFor(a, `companies/?updated_since=${encodeURIComponent(start)}&limit=3`, 4);
  t.same(
    first.records.map((c) => c.id),
    created.map((c) => c.id),
    'the four, in the order they were written, across pages',
  );
  const quiet = await poll(a, first.next);
  t.same(quiet.records, [], 'caught up: an empty page that still links on');
  const renamed = json<Company>(await a.call(memberA, 'PATCH', `companies/${created[1]!.id}/`, { name: 'Sync two, renamed' }));
  const after = await pollFor(a, quiet.next, 1);
  t.same(
    after.records.map((c) => [c.id, c.name]),
    [[renamed.id, 'Sync two, renamed']],
    'only the change',
  );
  const other = await b.call(memberB, 'POST', 'companies/', { name: 'Sync of B' });
  t.equal(other.statusCode, 201);
  t.same((await poll(a, after.next)).records, [], "another workspace's changes never appear");
});

t.test("archiving is a change the sync hands out (archived_at set), whatever the lists' default; contacts sync alike", async (t) => {
  const company = await create('Sync archived');
  const since = await pollFor(a, `companies/?updated_since=${encodeURIComponent(start)}&limit=50`, 1);
  t.ok(since.records.some((c) => c.id === company.id));
  // Catch up first, so the next poll holds only what follows.
  let next = since.next;
  for (let page = await poll(a, next, 50); page.records.length > 0; page = await poll(a, next, 50)) next = page.next;
  t.equal((await a.call(memberA, 'POST', `companies/${company.id}/archive/`)).statusCode, 200);
  const archived = await pollFor(a, next, 1, 50);
  t.same(
    archived.records.map((c) => [c.id, typeof (c as Company & { archived_at: string | null }).archived_at]),
    [[company.id, 'string']],
    'the archived record, with archived_at',
  );
  const list = json<Company[]>(await a.call(viewerA, 'GET', 'companies/?limit=100'));
  t.notOk(
    list.some((c) => c.id === company.id),
    'while the default list leaves it out',
  );

  const contactStart = new Date(Date.now() - 1000).toISOString();
  const contact = json<Company>(
    await a.call(memberA, 'POST', 'contacts/', { first_name: 'Sia', last_name: 'Sync', company_id: company.id }),
  );
  const contacts = await pollFor(a, `contacts/?updated_since=${encodeURIComponent(contactStart)}&limit=3`, 1);
  t.same(
    contacts.records.map((c) => c.id),
    [contact.id],
    'contacts: the new one',
  );
  await a.call(memberA, 'POST', `contacts/${contact.id}/archive/`);
  await a.call(memberA, 'PATCH', `contacts/${contact.id}/`, { job_title: 'Buyer' });
  const changed = await pollFor(a, contacts.next, 1);
  t.same(
    changed.records.map((c) => c.id),
    [contact.id],
    'the archived, then edited contact, once, at its latest change',
  );
  t.match(changed.records[0], { job_title: 'Buyer', archived_at: String });
  t.same((await poll(a, changed.next)).records, [], 'caught up');
});

t.test('a transaction that began earlier and commits later is not skipped', async (t) => {
  const [held, later] = [await create('Held by a slow transaction'), await create('Changed meanwhile')];
  const caughtUp = await pollFor(a, `companies/?updated_since=${encodeURIComponent(start)}&limit=50`, 6, 50);
  const slow = new pg.Client({ connectionString: databaseUrl });
  await slow.connect();
  t.teardown(() => slow.end());
  // The slow writer takes its transaction id first, then a quick one commits a change after it.
  await slow.query('BEGIN');
  await slow.query(`UPDATE companies SET name = 'Held, renamed late', updated_at = now() WHERE id = $1`, [held.id]);
  const quick = await a.call(memberA, 'PATCH', `companies/${later.id}/`, { name: 'Changed meanwhile, committed first' });
  t.equal(quick.statusCode, 200);
  const during = await poll(a, caughtUp.next, 50);
  t.same(during.records, [], 'nothing is handed out past a transaction still running: the quick change waits');
  await slow.query('COMMIT');
  const afterCommit = await pollFor(a, during.next, 2, 50);
  t.same(
    afterCommit.records.map((c) => c.name),
    ['Held, renamed late', 'Changed meanwhile, committed first'],
    'both, the late commit first (its transaction began first)',
  );
});

t.test('deletions: a company with its contacts, in the feed; other workspaces and old instants', async (t) => {
  const since = new Date().toISOString();
  const company = await create('To delete');
  const contact = json<{ id: string }>(
    await a.call(memberA, 'POST', 'contacts/', { company_id: company.id, first_name: 'Gone', last_name: 'Withit' }),
  );
  t.equal((await a.call(memberA, 'DELETE', `companies/${company.id}/`)).statusCode, 204);
  const otherCompany = json<{ id: string }>(await b.call(memberB, 'POST', 'companies/', { name: 'B deleted' }));
  t.equal((await b.call(memberB, 'DELETE', `companies/${otherCompany.id}/`)).statusCode, 204);
  // Handed out once every older transaction of the cluster has ended (other test files may hold one a moment).
  let res = await a.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(since)}`);
  for (let attempt = 0; attempt < 100 && json<unknown[]>(res).length < 2; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    res = await a.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(since)}`);
  }
  t.equal(res.statusCode, 200);
  const deletions = json<Array<{ record_type: string; id: string }>>(res);
  t.same(
    deletions.map((d) => [d.record_type, d.id]).sort(),
    [
      ['company', company.id],
      ['contact', contact.id],
    ],
    'the company and the contact its deletion took along; none of B',
  );
  t.match(String(res.headers.link), /rel="next"/, 'the feed links on');
  const next = /<([^>]+)>/.exec(String(res.headers.link))![1]!.replace(`/api/v1/organizations/${a.id}/`, '');
  t.same(json(await a.call(viewerA, 'GET', next)), [], 'then nothing new');
  const contactsOnly = json<Array<{ record_type: string }>>(
    await a.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(since)}&record_type=contact`),
  );
  t.same(
    contactsOnly.map((d) => d.record_type),
    ['contact'],
  );
  const old = await a.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(new Date(Date.now() - 31 * 86_400_000).toISOString())}`);
  t.equal(old.statusCode, 410);
  t.equal(json<{ code: string }>(old).code, 'deletions_expired');
  t.equal((await b.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(since)}`)).statusCode, 404, 'not a member of B');
});

t.test('bad sync requests answer 400', async (t) => {
  for (const query of [
    `updated_since=${encodeURIComponent(start)}&sort=name`,
    `updated_since=${encodeURIComponent(start)}&search=x`,
    'updated_since=yesterday',
    `updated_since=${encodeURIComponent(start)}&cursor=${Buffer.from(JSON.stringify(['sync', '99999999999999999999999', '00000000-0000-4000-8000-000000000000'])).toString('base64url')}`,
    `updated_since=${encodeURIComponent(start)}&cursor=${Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'])).toString('base64url')}`,
  ]) {
    const res = await a.call(viewerA, 'GET', `companies/?${query}`);
    t.equal(res.statusCode, 400, query);
    t.equal(json<{ code: string }>(res).code, 'validation_failed');
  }
});

t.test('a deleted workspace takes its records without tombstones, and its deletion does not fail', async (t) => {
  const org = await app.db.organization.create({ data: { name: 'doomed', slug: 'doomed' } });
  const company = await app.db.company.create({ data: { organizationId: org.id, name: 'Doomed Co' } });
  await app.db.contact.create({ data: { organizationId: org.id, companyId: company.id, firstName: 'D', lastName: 'C' } });
  await app.db.organization.delete({ where: { id: org.id } });
  t.equal(await app.db.crmDeletion.count({ where: { organizationId: org.id } }), 0);
});

t.test('a copy kept by the sync and the deletions feed equals the database after any interleaving', async (t) => {
  const slow = new pg.Client({ connectionString: databaseUrl });
  await slow.connect();
  t.teardown(() => slow.end());
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          fc.record({ op: fc.constant('create' as const), name: fc.string({ minLength: 1, maxLength: 12 }) }),
          fc.record({ op: fc.constant('update' as const), pick: fc.nat(), name: fc.string({ minLength: 1, maxLength: 12 }) }),
          fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }),
          fc.record({ op: fc.constant('late' as const), pick: fc.nat(), name: fc.string({ minLength: 1, maxLength: 12 }) }),
          fc.record({ op: fc.constant('poll' as const) }),
        ),
        { minLength: 1, maxLength: 14 },
      ),
      async (steps) => {
        runs += 1;
        const org = await app.db.organization.create({ data: { name: `sync ${runs}`, slug: `sync-${runs}` } });
        await app.db.membership.createMany({
          data: [
            { organizationId: org.id, userId: memberA.id, role: 'member' },
            { organizationId: org.id, userId: viewerA.id, role: 'viewer' },
          ],
        });
        const ws: Workspace = {
          id: org.id,
          call: (user, method, path, payload) =>
            app.inject({
              method,
              url: `/api/v1/organizations/${org.id}/${path}`,
              headers: user.headers,
              ...(payload === undefined ? {} : { payload: payload as object }),
            }),
        };
        const since = new Date(Date.now() - 1000).toISOString();
        const copy = new Map<string, string>();
        let syncUrl = `companies/?updated_since=${encodeURIComponent(since)}&limit=2`;
        let deletionsUrl = `deletions/?since=${encodeURIComponent(since)}&limit=2`;
        let lateOpen = false;
        /** The row the open late transaction holds locked: the API's writes of it would wait for that commit. */
        let locked: string | undefined;
        const live = async () =>
          (await app.db.company.findMany({ where: { organizationId: org.id }, select: { id: true } })).map((c) => c.id);
        const catchUp = async () => {
          const changes = await poll(ws, syncUrl, 2);
          for (const record of changes.records) copy.set(record.id, record.name);
          syncUrl = changes.next;
          for (;;) {
            const res = await ws.call(viewerA, 'GET', deletionsUrl);
            const page = json<Array<{ id: string }>>(res);
            for (const deletion of page) copy.delete(deletion.id);
            deletionsUrl = /<([^>]+)>/.exec(String(res.headers.link))![1]!.replace(`/api/v1/organizations/${org.id}/`, '');
            if (page.length < 2) break;
          }
        };
        for (const step of steps) {
          const ids = (await live()).filter((id) => id !== locked);
          const target = 'pick' in step && ids.length > 0 ? ids[step.pick % ids.length] : undefined;
          if (step.op === 'create') await ws.call(memberA, 'POST', 'companies/', { name: step.name });
          else if (step.op === 'update' && target) await ws.call(memberA, 'PATCH', `companies/${target}/`, { name: step.name });
          else if (step.op === 'delete' && target) await ws.call(memberA, 'DELETE', `companies/${target}/`);
          else if (step.op === 'late' && target && !lateOpen) {
            // A transaction that takes its id now and commits after the next poll.
            await slow.query('BEGIN');
            await slow.query(`UPDATE companies SET name = $2, updated_at = now() WHERE id = $1`, [target, step.name]);
            lateOpen = true;
            locked = target;
          } else if (step.op === 'poll') {
            await catchUp();
            if (lateOpen) {
              await slow.query('COMMIT');
              lateOpen = false;
              locked = undefined;
            }
          }
        }
        if (lateOpen) await slow.query('COMMIT');
        const actual = new Map(
          (await app.db.company.findMany({ where: { organizationId: org.id }, select: { id: true, name: true } })).map((c) => [
            c.id,
            c.name,
          ]),
        );
        // Changes are handed out once every older transaction of the cluster has ended: other test files running
        // beside this one may hold one open a moment, which delays the last changes (never loses them). Poll on.
        const same = () => JSON.stringify([...copy].sort()) === JSON.stringify([...actual].sort());
        for (let attempt = 0; attempt < 100; attempt++) {
          await catchUp();
          if (same()) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        if (!same()) {
          const missing = [...actual.keys()].filter((id) => !copy.has(id));
          const { rows } = await app.pg.query(
            'SELECT id, name, changed_xid::text, updated_at, created_at, pg_snapshot_xmin(pg_current_snapshot())::text AS horizon FROM companies WHERE id = ANY($1::uuid[])',
            [missing],
          );
          const cursor = /cursor=([^&]+)/.exec(syncUrl)?.[1];
          t.comment(
            JSON.stringify({
              steps,
              missing: rows,
              since,
              cursor: cursor && Buffer.from(decodeURIComponent(cursor), 'base64url').toString(),
            }),
          );
        }
        t.same(Object.fromEntries(copy), Object.fromEntries(actual), `run ${runs}: the copy equals the database`);
      },
    ),
    { numRuns: 25, seed: 42 },
  );
  t.ok(runs >= 25, `${runs} generated interleavings`);
});
