// Deals and tasks on the company and contact timelines, through HTTP: `*_attached` when created for a record or moved
// to it, `*_detached` on the one left, with actor (user or API key) and time; a write that fails after its entries
// were written (a referenced deal deleted meanwhile, forced with a lock held from a second connection) leaves none;
// another workspace sees nothing.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app, databaseUrl } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const globex = await created(a.call(memberA, 'POST', 'companies/', { name: 'Globex' }));
const ada = await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Ada', last_name: 'L' }));
const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));

type Entry = {
  kind: string;
  subject_id: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_name: string | null;
  created_at: string;
};
const timeline = async (path: string) => {
  const res = await a.call(viewerA, 'GET', `${path}/activity/?limit=100`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return json<Entry[]>(res);
};
/** The entries about `subject` on a timeline, newest first, as `kind`s. */
const about = async (path: string, subject: string) => (await timeline(path)).filter((e) => e.subject_id === subject).map((e) => e.kind);

t.test('a deal created for a company and contact is on both timelines; a move leaves detached and attached entries', async (t) => {
  const started = Date.now();
  const deal = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, contact_id: ada.id, title: 'Renewal' }));
  const [entry] = (await timeline(`companies/${acme.id}`)).filter((e) => e.subject_id === deal.id);
  t.match(entry, { kind: 'deal_attached', subject_id: deal.id, actor_type: 'user', actor_id: memberA.id, actor_name: memberA.username });
  t.ok(Date.parse(entry!.created_at) >= started - 1000, 'with its time');
  t.same(await about(`contacts/${ada.id}`, deal.id), ['deal_attached']);
  t.same(await about(`companies/${globex.id}`, deal.id), []);

  const res = await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { company_id: globex.id, contact_id: null });
  t.equal(res.statusCode, 200, res.body);
  t.same(await about(`companies/${acme.id}`, deal.id), ['deal_detached', 'deal_attached']);
  t.same(await about(`companies/${globex.id}`, deal.id), ['deal_attached']);
  t.same(await about(`contacts/${ada.id}`, deal.id), ['deal_detached', 'deal_attached'], 'the contact cleared');

  // Neither a PATCH naming the same company nor a kanban move nor other fields touch the timelines.
  await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { company_id: globex.id, title: 'Renewal 2' });
  t.equal((await a.call(memberA, 'POST', `deals/${deal.id}/move/`, { stage: 'proposal', position: 0 })).statusCode, 200);
  t.same(await about(`companies/${globex.id}`, deal.id), ['deal_attached']);
  t.notOk(JSON.stringify(await timeline(`companies/${globex.id}`)).includes('Renewal'), 'ids, never the content');
});

t.test('tasks too, and an API key is the actor of its writes', async (t) => {
  const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
  const made = await a.call(admin, 'POST', 'api-keys/', { name: 'sync-bot', capabilities: ['VIEW_CRM', 'MANAGE_CRM'] });
  const key = json<{ id: string; key: string }>(made);
  const url = `/api/v1/organizations/${a.id}/tasks/`;
  const res = await app.inject({ method: 'POST', url, headers: bearer(key.key), payload: { company_id: acme.id, title: 'Call back' } });
  t.equal(res.statusCode, 201, res.body);
  const task = json<{ id: string }>(res);
  const [entry] = (await timeline(`companies/${acme.id}`)).filter((e) => e.subject_id === task.id);
  t.match(entry, { kind: 'task_attached', actor_type: 'api_key', actor_id: key.id, actor_name: 'sync-bot' });

  const moved = await app.inject({
    method: 'PATCH',
    url: `${url}${task.id}/`,
    headers: bearer(key.key),
    payload: { company_id: globex.id, contact_id: ada.id },
  });
  t.equal(moved.statusCode, 200, moved.body);
  t.same(await about(`companies/${acme.id}`, task.id), ['task_detached', 'task_attached']);
  t.same(await about(`companies/${globex.id}`, task.id), ['task_attached']);
  t.same(await about(`contacts/${ada.id}`, task.id), ['task_attached'], 'the contact named later');
  t.equal((await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { workflow_status: 'completed' })).statusCode, 200);
  t.same(await about(`companies/${globex.id}`, task.id), ['task_attached'], 'completing adds no attachment');
});

t.test('a write that fails after its entries were written leaves none (one transaction)', async (t) => {
  const deal = await created(a.call(memberA, 'POST', 'deals/', { company_id: globex.id, title: 'Doomed' }));
  const before = await timeline(`companies/${acme.id}`);
  // A second connection deletes the deal without committing: the task's check still sees it, its entry on Acme is
  // written, then the task row's foreign key waits for the deal's row lock and fails once the delete commits.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('DELETE FROM deals WHERE organization_id = $1 AND id = $2', [a.id, deal.id]);
  const create = track(a.call(memberA, 'POST', 'tasks/', { company_id: acme.id, deal_id: deal.id, title: 'Orphan' }));
  await holder.waitForLockWaiters(1, create.settled);
  t.notOk(create.settled(), 'the create waits for the deleted deal');
  await holder.release();
  const res = await create.promise;
  t.equal(res.statusCode, 400, res.body);
  t.same(await timeline(`companies/${acme.id}`), before, 'no task_attached entry survived');
  t.equal(await app.db.task.count({ where: { organizationId: a.id, title: 'Orphan' } }), 0);

  const refused = await a.call(memberA, 'POST', 'deals/', {
    company_id: acme.id,
    contact_id: '00000000-0000-4000-8000-000000000000',
    title: 'X',
  });
  t.equal(refused.statusCode, 400);
  t.same(await timeline(`companies/${acme.id}`), before, 'a refused create adds nothing');
});

t.test('tenant isolation: another workspace neither attaches to nor reads these timelines', async (t) => {
  const before = await timeline(`companies/${acme.id}`);
  const res = await b.call(memberB, 'POST', 'deals/', { company_id: acme.id, title: 'Intruder' });
  t.equal(res.statusCode, 400);
  t.same(json(res).errors, { company_id: ['No such company in this organization.'] });
  const task = await b.call(memberB, 'POST', 'tasks/', { company_id: foreign.id, contact_id: ada.id, title: 'Intruder' });
  t.equal(task.statusCode, 400);
  t.same(await timeline(`companies/${acme.id}`), before);
  t.same(await timeline(`contacts/${ada.id}`).then((entries) => entries.filter((e) => e.actor_id === memberB.id)), []);
  t.equal((await b.call(memberB, 'GET', `companies/${acme.id}/activity/`)).statusCode, 404);
  const own = await created(b.call(memberB, 'POST', 'deals/', { company_id: foreign.id, title: 'Theirs' }));
  const theirs = json<Entry[]>(await b.call(memberB, 'GET', `companies/${foreign.id}/activity/`));
  t.same(
    theirs.filter((e) => e.subject_id === own.id).map((e) => e.kind),
    ['deal_attached'],
  );
  t.equal((await a.call(viewerA, 'GET', `companies/${foreign.id}/activity/`)).statusCode, 404);
});

t.test("a deleted company's or contact's timeline entries go with it, also when the company's deletion takes its contacts", async (t) => {
  const gone = await created(a.call(memberA, 'POST', 'companies/', { name: 'Gone' }));
  const kept = await created(a.call(memberA, 'POST', 'companies/', { name: 'Kept' }));
  const person = await created(a.call(memberA, 'POST', 'contacts/', { company_id: gone.id, first_name: 'P', last_name: 'Q' }));
  const lone = await created(a.call(memberA, 'POST', 'contacts/', { company_id: kept.id, first_name: 'L', last_name: 'M' }));
  await created(a.call(memberA, 'POST', 'deals/', { company_id: kept.id, contact_id: person.id, title: 'Stays' }));
  const entries = (where: object) => app.db.crmActivity.count({ where: { organizationId: a.id, ...where } });
  t.ok((await entries({ contactId: person.id })) >= 2);
  t.ok((await entries({ contactId: lone.id })) >= 1);

  t.equal((await a.call(memberA, 'DELETE', `contacts/${lone.id}/`)).statusCode, 204);
  t.equal(await entries({ contactId: lone.id }), 0, "the contact's entries");
  t.equal((await a.call(memberA, 'DELETE', `companies/${gone.id}/`)).statusCode, 204);
  t.equal(await entries({ companyId: gone.id }), 0, "the company's entries");
  t.equal(await entries({ contactId: person.id }), 0, 'and those of the contacts its deletion took');
  t.ok((await entries({ companyId: kept.id })) >= 2, "another company's stay");
});
