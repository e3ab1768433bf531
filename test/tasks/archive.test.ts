// Tasks through the record kernel: archive and restore (the `archived` list filter, idempotence, If-Match,
// capabilities, isolation), the incremental sync with its tombstones, and the CSV export.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { whenSynced } from '../helpers/sync.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const newTask = (title: string, body: Record<string, unknown> = {}) =>
  created(a.call(memberA, 'POST', 'tasks/', { company_id: acme.id, title, ...body }));
/** A POST to the task's `action` with `If-Match: etag`. */
const conditional = (id: string, action: string, etag: string) =>
  app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${a.id}/tasks/${id}/${action}/`,
    headers: { ...memberA.headers, 'if-match': etag },
  });
const titles = async (query: string) => {
  const res = await a.call(viewerA, 'GET', `tasks/?limit=200&${query}`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return json<Array<{ title: string }>>(res).map((task) => task.title);
};

t.test('archive sets archived_at and takes the task out of the default list; restore brings it back', async (t) => {
  const task = await newTask('Shelved');
  t.equal(task.archived_at, null, 'a new task is active');
  const res = await a.call(memberA, 'POST', `tasks/${task.id}/archive/`);
  t.equal(res.statusCode, 200);
  const archived = json(res);
  t.match(archived, { id: task.id, title: 'Shelved', archived_at: String, effective_status: 'open' });
  t.ok(archived.updated_at > task.updated_at, 'a new version');
  t.ok(res.headers.etag, 'an ETag');
  t.notOk((await titles('')).includes('Shelved'), 'not in the default list');
  t.notOk((await titles('archived=active')).includes('Shelved'));
  t.ok((await titles('archived=archived')).includes('Shelved'));
  t.ok((await titles('archived=all')).includes('Shelved'));
  t.same(json(await a.call(viewerA, 'GET', `tasks/${task.id}/`)), archived, 'still readable');

  const again = json(await a.call(memberA, 'POST', `tasks/${task.id}/archive/`));
  t.same(again, archived, 'archiving an archived task changes nothing');

  const restored = json(await a.call(memberA, 'POST', `tasks/${task.id}/restore/`));
  t.match(restored, { id: task.id, archived_at: null });
  t.ok((await titles('')).includes('Shelved'), 'back in the default list');
  t.same(json(await a.call(memberA, 'POST', `tasks/${task.id}/restore/`)), restored, 'restoring an active task changes nothing');
  t.equal((await a.call(viewerA, 'GET', 'tasks/?archived=maybe')).statusCode, 400);
});

t.test('If-Match: a stale version answers 412 and nothing changes; the current one archives', async (t) => {
  const task = await newTask('Versioned');
  const etag = (await a.call(viewerA, 'GET', `tasks/${task.id}/`)).headers.etag as string;
  t.equal((await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { title: 'Versioned 2' })).statusCode, 200);
  const stale = await conditional(task.id, 'archive', etag);
  t.equal(stale.statusCode, 412);
  t.equal(json(await a.call(viewerA, 'GET', `tasks/${task.id}/`)).archived_at, null, 'not archived');
  const current = (await a.call(viewerA, 'GET', `tasks/${task.id}/`)).headers.etag as string;
  const res = await conditional(task.id, 'archive', current);
  t.equal(res.statusCode, 200);
  t.not(res.headers.etag, current, 'the answer carries the new version');
});

t.test('viewers cannot archive (403), another workspace sees 404, an unknown id 404', async (t) => {
  const task = await newTask('Guarded');
  t.equal((await a.call(viewerA, 'POST', `tasks/${task.id}/archive/`)).statusCode, 403);
  t.equal((await a.call(viewerA, 'POST', `tasks/${task.id}/restore/`)).statusCode, 403);
  t.equal((await b.call(memberB, 'POST', `tasks/${task.id}/archive/`)).statusCode, 404);
  t.equal((await a.call(memberA, 'POST', 'tasks/nope/archive/')).statusCode, 404);
  t.equal(json(await a.call(viewerA, 'GET', `tasks/${task.id}/`)).archived_at, null);
});

t.test('updated_since syncs tasks (archives too); a deleted task leaves a tombstone in the deletions feed', async (t) => {
  const since = new Date(Date.now() - 1000).toISOString();
  const task = await newTask('Synced');
  await a.call(memberA, 'POST', `tasks/${task.id}/archive/`);
  type Synced = Array<{ id: string; archived_at: string | null }>;
  const feed = json<Synced>(
    await whenSynced(
      () => a.call(viewerA, 'GET', `tasks/?updated_since=${encodeURIComponent(since)}&limit=200`),
      (answer) => answer.statusCode !== 200 || json<Synced>(answer).some((row) => row.id === task.id && row.archived_at !== null),
    ),
  );
  t.match(
    feed.find((row) => row.id === task.id),
    { archived_at: String },
    'the archived task, as it is now',
  );
  t.equal((await a.call(viewerA, 'GET', `tasks/?updated_since=${encodeURIComponent(since)}&sort=due_at`)).statusCode, 400);
  t.equal((await a.call(memberA, 'DELETE', `tasks/${task.id}/`)).statusCode, 204);
  type Deleted = Array<{ record_type: string; id: string }>;
  const deletions = json<Deleted>(
    await whenSynced(
      () => a.call(viewerA, 'GET', `deletions/?since=${encodeURIComponent(since)}&record_type=task`),
      (answer) => answer.statusCode !== 200 || json<Deleted>(answer).length > 0,
    ),
  );
  t.same(
    deletions.map((row) => [row.record_type, row.id]),
    [['task', task.id]],
  );
});

t.test('the CSV export lists the tasks of the filters, archived ones on request', async (t) => {
  await newTask('Exported', { kind: 'call' });
  const res = await a.call(viewerA, 'GET', 'tasks/export/?archived=all');
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/csv/);
  const [header, ...rows] = res.body.trim().split('\r\n');
  t.match(header, /^id,title,kind,priority,workflow_status,due_at,/);
  t.ok(rows.some((row) => row.includes(',Exported,call,')));
  t.notOk((await b.call(memberB, 'GET', 'tasks/export/')).body.includes('Exported'), 'not another workspace');
});
