// Notes through the record kernel and their own rules: create with targets (400 on `targets.N`), read, pages and sync,
// If-Match, the author rule, a record's notes newest first, `note_added` timeline entries, `note.created` runs, targets
// that leave with their record (and a note that goes with its last one), capabilities, API keys and tenancy.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { whenSynced } from '../helpers/sync.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const otherMember = await createUser(app, { membership: { organizationId: a.id, role: 'member' } });
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const ada = await created(a.call(memberA, 'POST', 'contacts/', { first_name: 'Ada', last_name: 'L', company_id: acme.id }));
const deal = await created(a.call(memberA, 'POST', 'deals/', { title: 'Renewal', company_id: acme.id }));
const task = await created(a.call(memberA, 'POST', 'tasks/', { title: 'Call back', company_id: acme.id }));
const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Beta Co' }));
const rule = await created(
  a.call(admin, 'POST', 'automations/', {
    name: 'notes',
    trigger: 'note.created',
    action_type: 'webhook',
    action_config: { url: 'https://hooks.example.com/crm' },
  }),
);
const runsOf = () => app.db.automationRun.findMany({ where: { automationId: rule.id } });
const timeline = async (path: string) =>
  json<Array<{ kind: string; subject_id: string | null }>>(await a.call(viewerA, 'GET', `${path}activity/?limit=100`));

t.test('a note is created on several records, read back, and its targets keep their order', async (t) => {
  const runsBefore = (await runsOf()).length;
  const res = await a.call(memberA, 'POST', 'notes/', {
    body: 'Met **Ada** about the renewal.',
    targets: [
      { type: 'contact', id: ada.id },
      { type: 'company', id: acme.id },
      { type: 'deal', id: deal.id },
      { type: 'task', id: task.id },
    ],
  });
  t.equal(res.statusCode, 201, res.body);
  const note = json(res);
  t.match(note, {
    id: String,
    body: 'Met **Ada** about the renewal.',
    created_by: memberA.id,
    created_by_name: memberA.username,
    created_at: String,
    updated_at: String,
  });
  t.same(
    note.targets.map((target: { type: string }) => target.type),
    ['contact', 'company', 'deal', 'task'],
  );
  const read = await a.call(viewerA, 'GET', `notes/${note.id}/`);
  t.equal(read.statusCode, 200);
  t.same(json(read), note);
  t.ok(read.headers.etag, 'an ETag');
  const list = json<Array<{ id: string; targets: unknown }>>(await a.call(viewerA, 'GET', 'notes/'));
  t.same(
    list.find((n) => n.id === note.id),
    note,
    'the list reads the same note, targets included',
  );
  t.ok(
    (await timeline(`companies/${acme.id}/`)).some((e) => e.kind === 'note_added' && e.subject_id === note.id),
    'company timeline',
  );
  t.ok(
    (await timeline(`contacts/${ada.id}/`)).some((e) => e.kind === 'note_added' && e.subject_id === note.id),
    'contact timeline',
  );
  const runs = await runsOf();
  t.equal(runs.length, runsBefore + 1, 'one note.created run');
  t.match(runs.at(-1)?.payload, { event: 'note.created', data: { id: note.id, targets: note.targets } });
});

t.test('bad bodies and targets answer 400 and write nothing', async (t) => {
  const count = await app.db.note.count({ where: { organizationId: a.id } });
  const runs = (await runsOf()).length;
  const cases: Array<[unknown, string]> = [
    [{ body: '', targets: [{ type: 'company', id: acme.id }] }, 'body'],
    [{ body: 'x'.repeat(65537), targets: [{ type: 'company', id: acme.id }] }, 'body'],
    [{ body: 'x', targets: [] }, 'targets'],
    [{ body: 'x', targets: Array.from({ length: 21 }, () => ({ type: 'company', id: acme.id })) }, 'targets'],
    [{ body: 'x', targets: [{ type: 'invoice', id: acme.id }] }, 'targets.0.type'],
  ];
  for (const [payload, field] of cases) {
    const res = await a.call(memberA, 'POST', 'notes/', payload);
    t.equal(res.statusCode, 400, field);
    t.ok(
      Object.keys(json(res).errors ?? {}).some((key) => key.startsWith(field)),
      `${field}: ${res.body.slice(0, 200)}`,
    );
  }
  const max = await a.call(memberA, 'POST', 'notes/', { body: 'y'.repeat(65536), targets: [{ type: 'company', id: acme.id }] });
  t.equal(max.statusCode, 201, '65,536 characters are fine');
  const res = await a.call(memberA, 'POST', 'notes/', {
    body: 'Mixed',
    targets: [
      { type: 'company', id: acme.id },
      { type: 'company', id: foreign.id },
      { type: 'deal', id: acme.id },
      { type: 'company', id: acme.id },
    ],
  });
  t.equal(res.statusCode, 400);
  t.same(Object.keys(json(res).errors).sort(), ['targets.1', 'targets.2', 'targets.3'], 'another workspace, wrong type, twice');
  t.equal(await app.db.note.count({ where: { organizationId: a.id } }), count + 1, 'only the valid note');
  t.equal((await runsOf()).length, runs + 1);
});

t.test('only the author, an owner or an admin changes or deletes a note; If-Match guards both', async (t) => {
  const note = await created(a.call(memberA, 'POST', 'notes/', { body: 'Mine', targets: [{ type: 'deal', id: deal.id }] }));
  t.equal((await a.call(otherMember, 'PATCH', `notes/${note.id}/`, { body: 'Theirs' })).statusCode, 403);
  t.equal((await a.call(otherMember, 'DELETE', `notes/${note.id}/`)).statusCode, 403);
  t.equal((await a.call(viewerA, 'PATCH', `notes/${note.id}/`, { body: 'V' })).statusCode, 403);
  const patched = await a.call(memberA, 'PATCH', `notes/${note.id}/`, {
    body: 'Mine, edited',
    targets: [
      { type: 'deal', id: deal.id },
      { type: 'company', id: acme.id },
    ],
  });
  t.equal(patched.statusCode, 200, patched.body);
  t.match(json(patched), { body: 'Mine, edited', targets: [{ type: 'deal' }, { type: 'company' }] });
  t.ok(json(patched).updated_at > note.updated_at, 'a new version');
  t.ok(
    (await timeline(`companies/${acme.id}/`)).some((e) => e.kind === 'note_added' && e.subject_id === note.id),
    'added target',
  );
  const stale = await app.inject({
    method: 'PATCH',
    url: `/api/v1/organizations/${a.id}/notes/${note.id}/`,
    headers: { ...admin.headers, 'if-match': `"${note.updated_at}"` },
    payload: { body: 'Stale' },
  });
  t.equal(stale.statusCode, 412);
  const byAdmin = await app.inject({
    method: 'PATCH',
    url: `/api/v1/organizations/${a.id}/notes/${note.id}/`,
    headers: { ...admin.headers, 'if-match': patched.headers.etag as string },
    payload: { body: 'Moderated' },
  });
  t.equal(byAdmin.statusCode, 200, byAdmin.body);
  t.equal((await a.call(admin, 'DELETE', `notes/${note.id}/`)).statusCode, 204);
  t.equal((await a.call(memberA, 'GET', `notes/${note.id}/`)).statusCode, 404);
  const deletions = await whenSynced(
    async () =>
      json<Array<{ record_type: string; id: string }>>(
        await a.call(viewerA, 'GET', `deletions/?record_type=note&since=${encodeURIComponent(note.created_at)}`),
      ),
    (answer) => answer.some((d) => d.id === note.id),
  );
  t.ok(
    deletions.some((d) => d.id === note.id),
    'a tombstone for the sync',
  );
});

t.test("a record's notes, newest first; unknown and foreign records answer 404", async (t) => {
  const first = await created(a.call(memberA, 'POST', 'notes/', { body: 'First', targets: [{ type: 'task', id: task.id }] }));
  const second = await created(a.call(memberA, 'POST', 'notes/', { body: 'Second', targets: [{ type: 'task', id: task.id }] }));
  const res = await a.call(viewerA, 'GET', `tasks/${task.id}/notes/`);
  t.equal(res.statusCode, 200);
  const ids = json<Array<{ id: string }>>(res).map((n) => n.id);
  t.ok(ids.indexOf(second.id) < ids.indexOf(first.id) && ids.indexOf(second.id) >= 0, 'newest first');
  t.notOk(
    json<Array<{ id: string }>>(await a.call(viewerA, 'GET', `contacts/${ada.id}/notes/`)).some((n) => n.id === first.id),
    "not on the contact's list",
  );
  t.equal((await a.call(viewerA, 'GET', `companies/${foreign.id}/notes/`)).statusCode, 404);
  t.equal((await a.call(viewerA, 'GET', 'deals/not-a-uuid/notes/')).statusCode, 404);
  t.equal((await b.call(memberB, 'GET', `notes/${first.id}/`)).statusCode, 404, 'another workspace');
  t.equal((await b.call(memberB, 'DELETE', `notes/${first.id}/`)).statusCode, 404);
});

t.test('a deleted record leaves its notes; a note whose last target is deleted is deleted', async (t) => {
  const co = await created(a.call(memberA, 'POST', 'companies/', { name: 'Doomed' }));
  const contact = await created(a.call(memberA, 'POST', 'contacts/', { first_name: 'Bo', last_name: 'K', company_id: acme.id }));
  const shared = await created(
    a.call(memberA, 'POST', 'notes/', {
      body: 'Both',
      targets: [
        { type: 'company', id: co.id },
        { type: 'contact', id: contact.id },
      ],
    }),
  );
  const only = await created(a.call(memberA, 'POST', 'notes/', { body: 'Only', targets: [{ type: 'company', id: co.id }] }));
  t.equal((await a.call(memberA, 'DELETE', `companies/${co.id}/`)).statusCode, 204);
  const kept = json(await a.call(viewerA, 'GET', `notes/${shared.id}/`));
  t.same(kept.targets, [{ type: 'contact', id: contact.id }], 'the company left the targets');
  t.ok(kept.updated_at > shared.updated_at, 'a new version: its ETag changes and the sync hands it out again');
  t.equal((await a.call(viewerA, 'GET', `notes/${only.id}/`)).statusCode, 404, 'a note without targets is gone');
  t.equal((await a.call(memberA, 'DELETE', `contacts/${contact.id}/`)).statusCode, 204);
  t.equal((await a.call(viewerA, 'GET', `notes/${shared.id}/`)).statusCode, 404);
});

t.test('viewers cannot write; API keys write with MANAGE_CRM and change only their own notes', async (t) => {
  t.equal((await a.call(viewerA, 'POST', 'notes/', { body: 'V', targets: [{ type: 'company', id: acme.id }] })).statusCode, 403);
  const keyed = async (capabilities: string[]) =>
    json(await a.call(admin, 'POST', 'api-keys/', { name: capabilities.join('+'), capabilities })).key as string;
  const reader = await keyed(['VIEW_CRM']);
  const writer = await keyed(['VIEW_CRM', 'MANAGE_CRM']);
  const url = `/api/v1/organizations/${a.id}/notes/`;
  const payload = { body: 'From the sync', targets: [{ type: 'company', id: acme.id }] };
  t.equal((await app.inject({ method: 'POST', url, headers: bearer(reader), payload })).statusCode, 403);
  const made = await app.inject({ method: 'POST', url, headers: bearer(writer), payload });
  t.equal(made.statusCode, 201, made.body);
  const note = json(made);
  t.equal(note.created_by_name, 'VIEW_CRM+MANAGE_CRM');
  t.not(note.created_by, null);
  t.equal((await a.call(memberA, 'PATCH', `notes/${note.id}/`, { body: 'Not yours' })).statusCode, 403, 'a user is not the key');
  const own = await app.inject({ method: 'PATCH', url: `${url}${note.id}/`, headers: bearer(writer), payload: { body: 'Edited' } });
  t.equal(own.statusCode, 200, own.body);
  const memberNote = await created(a.call(memberA, 'POST', 'notes/', payload));
  const other = await app.inject({ method: 'DELETE', url: `${url}${memberNote.id}/`, headers: bearer(writer) });
  t.equal(other.statusCode, 403, "a key is not the member's author");
});

t.test('the notes list syncs with updated_since', async (t) => {
  const since = new Date(Date.now() - 1000).toISOString();
  const note = await created(a.call(memberA, 'POST', 'notes/', { body: 'Synced', targets: [{ type: 'company', id: acme.id }] }));
  const res = await whenSynced(
    () => a.call(viewerA, 'GET', `notes/?updated_since=${encodeURIComponent(since)}&limit=200`),
    (answer) => answer.statusCode !== 200 || json<Array<{ id: string }>>(answer).some((n) => n.id === note.id),
  );
  t.equal(res.statusCode, 200, res.body);
  t.ok(
    json<Array<{ id: string }>>(res).some((n) => n.id === note.id),
    'the new note is in the sync',
  );
});
