// ETags of deals, tasks and automations, through HTTP, as companies and contacts have them (test/browser/etags.test.ts):
// a single record answers an `ETag`, If-None-Match naming it answers 304, and PATCH, DELETE, the deal move and the
// archive and restore of companies, contacts and deals with a stale If-Match answer 412 `precondition_failed` having
// written nothing (the record, its company's timeline and the
// automation runs unchanged); a current tag or `*` writes. Every write is a new version, even two within a millisecond,
// and a deal shifted on the board by another deal's move gets one too (its `position` changed).
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;
const ETAG = /^"[0-9a-z]+"$/;

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, headers: Record<string, string> = {}, payload?: object) =>
  app.inject({ method, url: `${base}/${path}`, headers: { ...admin.headers, ...headers }, ...(payload ? { payload } : {}) });
const etagOf = (res: LightMyRequestResponse) => String(res.headers.etag);
const created = async (res: Promise<LightMyRequestResponse>) => {
  const done = await res;
  if (done.statusCode !== 201) throw new Error(done.body);
  return json(done);
};

const acme = await created(call('POST', 'companies/', {}, { name: 'Acme' }));
const globex = await created(call('POST', 'companies/', {}, { name: 'Globex' }));
/** A webhook rule on `trigger`: a refused write must queue no run of it. */
const ruleOn = (trigger: string) =>
  created(
    call(
      'POST',
      'automations/',
      {},
      { name: trigger, trigger, action_type: 'webhook', action_config: { url: 'https://hooks.example.com/crm' } },
    ),
  );
for (const trigger of ['deal.stage_changed', 'task.completed']) await ruleOn(trigger);

/** What a refused write must leave as it was: the record, both companies' timelines, and the automation runs. */
const snapshot = async (path: string) => ({
  record: (await call('GET', path)).body,
  acme: (await call('GET', `companies/${acme.id}/activity/?limit=100`)).body,
  globex: (await call('GET', `companies/${globex.id}/activity/?limit=100`)).body,
  // Which runs were queued (a refused write must queue none), not how far each has got: the job runner moves them on
  // meanwhile (this test's hooks fail to resolve), which made the snapshot differ for no fault of the write.
  runs: (json(await call('GET', 'automations/runs/?limit=100')) as { id: string; trigger: string; payload: unknown }[]).map(
    ({ id, trigger, payload }) => ({ id, trigger, payload }),
  ),
});

/** 412 `precondition_failed` as problem+json. */
function refused(t: Test, res: LightMyRequestResponse, what: string) {
  t.equal(res.statusCode, 412, `${what}: 412`);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
  t.equal(json(res).code, 'precondition_failed');
}

const collections = [
  {
    name: 'deals',
    create: { company_id: acme.id, title: 'Renewal' },
    // A stale change that would move the record to another company and fire its event, were it written.
    stale: { company_id: globex.id, stage: 'proposal' },
    change: { title: 'Renewal 2' },
  },
  {
    name: 'tasks',
    create: { company_id: acme.id, title: 'Call back' },
    stale: { company_id: globex.id, workflow_status: 'completed' },
    change: { title: 'Call back soon' },
  },
] as const;

for (const collection of collections) {
  const { name } = collection;

  t.test(`${name}: ETag on GET, 304 for If-None-Match naming it (weak, listed or *), 200 for another`, async (t) => {
    const path = `${name}/${(await created(call('POST', `${name}/`, {}, collection.create))).id}/`;
    const read = await call('GET', path);
    t.equal(read.statusCode, 200);
    t.match(etagOf(read), ETAG, 'a strong ETag');
    for (const header of [etagOf(read), `W/${etagOf(read)}`, `"0000", ${etagOf(read)}`, '*']) {
      const cached = await call('GET', path, { 'if-none-match': header });
      t.equal(cached.statusCode, 304, `If-None-Match: ${header}`);
      t.equal(cached.body, '', 'no body');
      t.equal(etagOf(cached), etagOf(read));
    }
    t.equal((await call('GET', path, { 'if-none-match': '"0123"' })).statusCode, 200, 'another tag: the record');
  });

  t.test(`${name}: PATCH with a stale If-Match is refused and writes nothing; a current one, * or none writes`, async (t) => {
    const path = `${name}/${(await created(call('POST', `${name}/`, {}, collection.create))).id}/`;
    const seen = etagOf(await call('GET', path));
    const first = await call('PATCH', path, { 'if-match': seen }, collection.change);
    t.equal(first.statusCode, 200, first.body);
    t.match(etagOf(first), ETAG);
    t.not(etagOf(first), seen, 'a new version');
    t.equal(etagOf(await call('GET', path)), etagOf(first), 'the PATCH answers the ETag a GET then gives');

    const before = await snapshot(path);
    refused(t, await call('PATCH', path, { 'if-match': seen }, collection.stale), 'the second tab');
    refused(t, await call('PATCH', path, { 'if-match': `W/${etagOf(first)}` }, collection.stale), 'a weak tag never matches');
    refused(t, await call('PATCH', path, { 'if-match': '"1", "zz"' }, collection.stale), 'tags of no version');
    t.same(await snapshot(path), before, 'record, timelines and runs as they were');

    const listed = await call('PATCH', path, { 'if-match': `"0000", ${etagOf(first)}` }, { title: 'Listed' });
    t.equal(listed.statusCode, 200, 'one of a list of tags matches');
    const star = await call('PATCH', path, { 'if-match': '*' }, { title: 'Star' });
    t.equal(star.statusCode, 200, '*: any version');
    t.not(etagOf(star), etagOf(listed));
    const plain = await call('PATCH', path, {}, { title: 'Plain' });
    t.equal(plain.statusCode, 200, 'without If-Match, as before');
    t.equal(json(await call('GET', path)).title, 'Plain');
  });

  t.test(`${name}: every write is a new version, even two within one millisecond`, async (t) => {
    const path = `${name}/${(await created(call('POST', `${name}/`, {}, collection.create))).id}/`;
    const [a, b] = await Promise.all([call('PATCH', path, {}, { title: 'A' }), call('PATCH', path, {}, { title: 'B' })]);
    const c = await call('PATCH', path, {}, { title: 'C' });
    const tags = [a, b, c].map(etagOf);
    t.equal(new Set(tags).size, 3, 'three versions');
    t.equal(etagOf(await call('GET', path)), etagOf(c));
    refused(t, await call('PATCH', path, { 'if-match': etagOf(a) }, { title: 'D' }), 'an older version');
  });

  t.test(`${name}: DELETE with a stale If-Match is refused; with the current one it deletes, then 404`, async (t) => {
    const path = `${name}/${(await created(call('POST', `${name}/`, {}, collection.create))).id}/`;
    const seen = etagOf(await call('GET', path));
    const current = etagOf(await call('PATCH', path, {}, collection.change));
    const before = await snapshot(path);
    refused(t, await call('DELETE', path, { 'if-match': seen }), 'stale');
    t.same(await snapshot(path), before, 'still there, nothing written');
    t.equal((await call('DELETE', path, { 'if-match': current })).statusCode, 204);
    t.equal((await call('DELETE', path, { 'if-match': current })).statusCode, 404, 'gone: 404, not 412');
    t.equal((await call('DELETE', path, { 'if-match': '*' })).statusCode, 404, '* of nothing: 404');
    t.equal((await call('PATCH', path, { 'if-match': current }, collection.change)).statusCode, 404);

    const other = `${name}/${(await created(call('POST', `${name}/`, {}, collection.create))).id}/`;
    t.equal((await call('DELETE', other, { 'if-match': '*' })).statusCode, 204, '*: any version');
    t.equal((await call('GET', `${name}/not-a-uuid/`, { 'if-none-match': '*' })).statusCode, 404);
  });
}

t.test('deals: the board move honours If-Match; a deal shifted by another move gets a new version', async (t) => {
  const first = await created(call('POST', 'deals/', {}, { company_id: acme.id, title: 'First', stage: 'qualified' }));
  const second = await created(call('POST', 'deals/', {}, { company_id: acme.id, title: 'Second', stage: 'qualified' }));
  const secondPath = `deals/${second.id}/`;
  const seen = etagOf(await call('GET', secondPath));
  t.equal(json(await call('GET', secondPath)).position, 1);

  // Moving the first deal out of the stage moves the second up: its position, hence its version, changed.
  const moved = await call('POST', `deals/${first.id}/move/`, {}, { stage: 'proposal', position: 0 });
  t.equal(moved.statusCode, 200, moved.body);
  t.match(etagOf(moved), ETAG, 'a move answers the new ETag');
  t.equal(etagOf(await call('GET', `deals/${first.id}/`)), etagOf(moved));
  const shifted = await call('GET', secondPath);
  t.equal(json(shifted).position, 0, 'moved up');
  t.not(etagOf(shifted), seen, 'a new version');
  t.equal((await call('GET', secondPath, { 'if-none-match': seen })).statusCode, 200, 'a cache of the old position is stale');

  const before = await snapshot(secondPath);
  refused(
    t,
    await call('POST', `${secondPath}move/`, { 'if-match': seen }, { stage: 'won', position: 0 }),
    'a move against the old version',
  );
  t.same(await snapshot(secondPath), before, 'nothing moved, no event');
  const won = await call('POST', `${secondPath}move/`, { 'if-match': etagOf(shifted) }, { stage: 'won', position: 0 });
  t.equal(won.statusCode, 200, won.body);
  t.equal(json(won).stage, 'won');
  t.equal((await call('POST', `${secondPath}move/`, { 'if-match': '*' }, { stage: 'lead', position: 0 })).statusCode, 200, '*');
  t.equal((await call('POST', `${secondPath}move/`, {}, { stage: 'qualified', position: 0 })).statusCode, 200, 'without If-Match');

  // Archive and restore answer the new version too.
  const archived = await call('POST', `${secondPath}archive/`);
  t.equal(archived.statusCode, 200);
  t.equal(etagOf(archived), etagOf(await call('GET', secondPath)));
  const restored = await call('POST', `${secondPath}restore/`);
  t.not(etagOf(restored), etagOf(archived));
});

t.test('automations: ETag on GET, 304 for If-None-Match naming it; a secret rotation is a new version', async (t) => {
  const rule = await created(
    call(
      'POST',
      'automations/',
      {},
      { name: 'Hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'https://hooks.example.com/a' } },
    ),
  );
  const path = `automations/${rule.id}/`;
  const read = await call('GET', path);
  t.equal(read.statusCode, 200);
  t.match(etagOf(read), ETAG);
  for (const header of [etagOf(read), `W/${etagOf(read)}`, '*']) {
    const cached = await call('GET', path, { 'if-none-match': header });
    t.equal(cached.statusCode, 304, `If-None-Match: ${header}`);
    t.equal(cached.body, '');
    t.equal(etagOf(cached), etagOf(read));
  }
  t.equal((await call('GET', path, { 'if-none-match': '"0123"' })).statusCode, 200);

  // Two rotations back to back (within one millisecond, often): each a new version.
  t.equal((await call('POST', `${path}rotate-secret/`)).statusCode, 200);
  const once = await call('GET', path);
  t.equal((await call('POST', `${path}rotate-secret/`)).statusCode, 200);
  const twice = await call('GET', path);
  t.equal(new Set([etagOf(read), etagOf(once), etagOf(twice)]).size, 3, 'three versions');
  t.equal((await call('GET', path, { 'if-none-match': etagOf(read) })).statusCode, 200, 'the old tag is stale');
  t.ok(json(twice).action_config.has_secret);
});

t.test('a version stamped ahead of the clock (another host, or the same millisecond) still moves on with the next write', async (t) => {
  const ahead = new Date(Date.now() + 3_600_000);
  const deal = await created(call('POST', 'deals/', {}, { company_id: acme.id, title: 'Ahead' }));
  const task = await created(call('POST', 'tasks/', {}, { company_id: acme.id, title: 'Ahead' }));
  const rule = await created(
    call(
      'POST',
      'automations/',
      {},
      { name: 'Ahead', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'https://hooks.example.com/b' } },
    ),
  );
  await app.db.$executeRaw`UPDATE deals SET updated_at = ${ahead} WHERE id = ${deal.id}::uuid`;
  await app.db.$executeRaw`UPDATE tasks SET updated_at = ${ahead} WHERE id = ${task.id}::uuid`;
  await app.db.$executeRaw`UPDATE automations SET updated_at = ${ahead} WHERE id = ${rule.id}::uuid`;
  for (const [path, write] of [
    [`deals/${deal.id}/`, () => call('PATCH', `deals/${deal.id}/`, {}, { title: 'Later' })],
    [`deals/${deal.id}/`, () => call('POST', `deals/${deal.id}/move/`, {}, { stage: 'won', position: 0 })],
    [`deals/${deal.id}/`, () => call('POST', `deals/${deal.id}/archive/`)],
    [`tasks/${task.id}/`, () => call('PATCH', `tasks/${task.id}/`, {}, { title: 'Later' })],
    [`automations/${rule.id}/`, () => call('POST', `automations/${rule.id}/rotate-secret/`)],
  ] as const) {
    const before = json(await call('GET', path)).updated_at as string;
    t.equal((await write()).statusCode, 200);
    const after = await call('GET', path);
    t.equal(Date.parse(json(after).updated_at) - Date.parse(before), 1, `${path}: one millisecond later`);
    t.equal((await call('GET', path, { 'if-none-match': `"${Date.parse(before).toString(36)}"` })).statusCode, 200, 'a new ETag');
  }
});

t.test('archive and restore honour If-Match: a stale tag is refused and writes nothing, even when nothing would change', async (t) => {
  for (const trigger of ['company.updated', 'contact.updated']) await ruleOn(trigger);
  const kinds = [
    { name: 'companies', create: { name: 'Initech' }, change: { name: 'Initech Ltd' }, timeline: true },
    {
      name: 'contacts',
      create: { company_id: acme.id, first_name: 'Ada', last_name: 'Lovelace' },
      change: { first_name: 'Augusta' },
      timeline: true,
    },
    { name: 'deals', create: { company_id: acme.id, title: 'Archive me' }, change: { title: 'Archived soon' }, timeline: false },
  ];
  for (const kind of kinds) {
    const path = `${kind.name}/${(await created(call('POST', `${kind.name}/`, {}, kind.create))).id}/`;
    // The record, the automation runs (and the companies' timelines), and its own timeline where it has one.
    const state = async () => ({
      ...(await snapshot(path)),
      own: kind.timeline ? json(await call('GET', `${path}activity/?limit=100`)) : null,
    });
    const seen = etagOf(await call('GET', path));
    const current = etagOf(await call('PATCH', path, {}, kind.change));

    let before = await state();
    refused(t, await call('POST', `${path}archive/`, { 'if-match': seen }), `${kind.name}: archive at an old version`);
    t.same(await state(), before, `${kind.name}: not archived, no timeline entry, no run`);
    const archived = await call('POST', `${path}archive/`, { 'if-match': current });
    t.equal(archived.statusCode, 200, `${kind.name}: archive at the current version`);
    t.not(json(archived).archived_at, null);
    t.not(etagOf(archived), current, 'a new version');

    before = await state();
    refused(t, await call('POST', `${path}archive/`, { 'if-match': current }), `${kind.name}: archived already, asked at the old version`);
    refused(t, await call('POST', `${path}restore/`, { 'if-match': current }), `${kind.name}: restore at the old version`);
    t.same(await state(), before, `${kind.name}: still archived, nothing written`);
    const again = await call('POST', `${path}archive/`, { 'if-match': etagOf(archived) });
    t.equal(again.statusCode, 200, 'archived already, at its version: unchanged');
    t.equal(etagOf(again), etagOf(archived));

    t.equal((await call('POST', `${path}restore/`, { 'if-match': `"0000", ${etagOf(archived)}` })).statusCode, 200, 'one tag of a list');
    t.equal(json(await call('GET', path)).archived_at, null, 'restored');
    t.equal((await call('POST', `${path}archive/`, { 'if-match': '*' })).statusCode, 200, '*: any version');
    t.equal((await call('POST', `${path}restore/`)).statusCode, 200, 'without If-Match, as before');
    const missing = `${kind.name}/00000000-0000-4000-8000-000000000000/archive/`;
    t.equal((await call('POST', missing, { 'if-match': '*' })).statusCode, 404, '* of nothing: 404');
  }
});
