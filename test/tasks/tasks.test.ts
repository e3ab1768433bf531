// Tasks through HTTP: fields and defaults, references of the same workspace (else 400), completion stamps, the
// computed effective status, every filter (`me` included, and its 400 for an API key), soonest-due pages,
// capabilities, isolation and idempotent create.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces, walkPages } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const globex = await created(a.call(memberA, 'POST', 'companies/', { name: 'Globex' }));
const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
const foreignDeal = await created(b.call(memberB, 'POST', 'deals/', { company_id: foreign.id, title: 'F' }));
const deal = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'D' }));
const ada = await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Ada', last_name: 'L' }));

const hour = 3_600_000;
const at = (offsetHours: number) => new Date(Date.now() + offsetHours * hour).toISOString();
const newTask = (body: Record<string, unknown>, user = memberA) =>
  created(a.call(user, 'POST', 'tasks/', { company_id: acme.id, title: 'T', ...body }));
const titles = async (query: string, user = viewerA) => {
  const res = await a.call(user, 'GET', `tasks/?limit=200&${query}`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return json<Array<{ title: string }>>(res).map((task) => task.title);
};

t.test('create answers the Task with defaults, references and the effective status', async (t) => {
  const task = await newTask({
    title: 'Call',
    kind: 'call',
    priority: 'high',
    due_at: at(2),
    reminder_at: at(1),
    contact_id: ada.id,
    deal_id: deal.id,
    assigned_to: viewerA.id,
    notes: 'n',
  });
  t.match(task, {
    title: 'Call',
    kind: 'call',
    priority: 'high',
    workflow_status: 'todo',
    effective_status: 'open',
    company_id: acme.id,
    contact_id: ada.id,
    deal_id: deal.id,
    assigned_to: viewerA.id,
    completed_at: null,
    completed_by: null,
  });
  t.same(json(await a.call(viewerA, 'GET', `tasks/${task.id}/`)), task);
  t.match(await newTask({}), { kind: 'task', priority: 'normal', workflow_status: 'todo', effective_status: 'open', due_at: null });
  t.match(await newTask({ due_at: at(-1) }), { effective_status: 'overdue' });
});

t.test('bad input and references outside the workspace answer 400 on the field, writing nothing', async (t) => {
  const before = await app.db.task.count();
  for (const [label, body, field] of [
    ['no company', { company_id: undefined }, 'company_id'],
    ['a company of another workspace', { company_id: foreign.id }, 'company_id'],
    ['a deal of another workspace', { deal_id: foreignDeal.id }, 'deal_id'],
    ['a user of another workspace', { assigned_to: memberB.id }, 'assigned_to'],
    ['an unknown kind', { kind: 'visit' }, 'kind'],
    ['an unknown priority', { priority: 'asap' }, 'priority'],
    ['an unknown status', { workflow_status: 'done' }, 'workflow_status'],
    ['a date without time', { due_at: '2026-01-01' }, 'due_at'],
  ] as Array<[string, Record<string, unknown>, string]>) {
    const res = await a.call(memberA, 'POST', 'tasks/', { company_id: acme.id, title: 'X', ...body });
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: ${res.body}`);
  }
  t.equal(await app.db.task.count(), before);
});

t.test('completing stamps completed_at and completed_by; leaving completed clears them', async (t) => {
  const task = await newTask({ title: 'Finish', due_at: at(-5) });
  const done = json(await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { workflow_status: 'completed' }));
  t.match(done, { workflow_status: 'completed', effective_status: 'completed', completed_by: memberA.id });
  t.ok(Date.parse(done.completed_at) > Date.now() - 60_000);
  const again = json(await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { notes: 'still done' }));
  t.equal(again.completed_at, done.completed_at, 'other changes keep the stamp');
  const reopened = json(await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { workflow_status: 'in_progress' }));
  t.match(reopened, { workflow_status: 'in_progress', effective_status: 'overdue', completed_at: null, completed_by: null });
  t.match(await newTask({ workflow_status: 'completed' }), { effective_status: 'completed', completed_by: memberA.id });
});

t.test('filters: assigned_to (an id or me), effective_status, due_before, company_id, deal_id', async (t) => {
  await newTask({ title: 'mine-open', assigned_to: memberA.id, due_at: at(30), company_id: globex.id });
  await newTask({ title: 'mine-late', assigned_to: memberA.id, due_at: at(-30), deal_id: deal.id });
  const done = await newTask({ title: 'mine-done', assigned_to: memberA.id });
  await a.call(memberA, 'PATCH', `tasks/${done.id}/`, { workflow_status: 'completed' });
  await newTask({ title: 'theirs', assigned_to: viewerA.id, due_at: at(-30) });
  t.same((await titles('assigned_to=me', memberA)).sort(), ['mine-done', 'mine-late', 'mine-open']);
  t.same((await titles(`assigned_to=${memberA.id}&effective_status=open`)).sort(), ['mine-open']);
  t.same((await titles(`assigned_to=${memberA.id}&effective_status=overdue`)).sort(), ['mine-late']);
  t.same((await titles(`assigned_to=${memberA.id}&effective_status=completed`)).sort(), ['mine-done']);
  t.same((await titles(`assigned_to=${memberA.id}&effective_status=open&effective_status=overdue`)).sort(), ['mine-late', 'mine-open']);
  t.same((await titles(`assigned_to=${memberA.id}&due_before=${encodeURIComponent(at(0))}`)).sort(), ['mine-late']);
  t.same(await titles(`company_id=${globex.id}`), ['mine-open']);
  t.same(await titles(`deal_id=${deal.id}&assigned_to=${memberA.id}`), ['mine-late']);
  for (const query of ['assigned_to=you', 'effective_status=late', 'due_before=tomorrow', 'sort=title']) {
    t.equal((await a.call(viewerA, 'GET', `tasks/?${query}`)).statusCode, 400, query);
  }
});

t.test('soonest due pages: due_at ascending, no due time last, each task once', async (t) => {
  const ws = await app.db.organization.create({ data: { name: 'due', slug: 'due' } });
  const user = await createUser(app, { membership: { organizationId: ws.id, role: 'member' } });
  const call = (method: 'GET' | 'POST', path: string, payload?: unknown) =>
    app.inject({
      method,
      url: `/api/v1/organizations/${ws.id}/${path}`,
      headers: user.headers,
      ...(payload ? { payload: payload as object } : {}),
    });
  const company = json(await call('POST', 'companies/', { name: 'C' }));
  const expected: string[] = [];
  const same = at(10);
  for (const [i, due] of [at(5), null, at(1), same, null, same, at(-3)].entries()) {
    const task = json(await call('POST', 'tasks/', { company_id: company.id, title: `t${i}`, due_at: due, assigned_to: user.id }));
    expected.push(task.id);
  }
  const all = json<Array<{ id: string; due_at: string | null }>>(await call('GET', 'tasks/?sort=due_at&limit=200&assigned_to=me'));
  const dues = all.map((task) => task.due_at);
  t.same(dues.slice(-2), [null, null], 'no due time last');
  t.same(dues.slice(0, 5), [...dues.slice(0, 5)].sort(), 'ascending');
  const pages = await walkPages(
    { id: ws.id, call: (_user, method, path) => call(method as 'GET', path) },
    user,
    'tasks/?sort=due_at&limit=2&assigned_to=me',
  );
  t.equal(pages.pages, 4);
  t.same(
    pages.ids,
    all.map((task) => task.id),
    'pages follow the same order, each task once',
  );
  t.same([...pages.ids].sort(), [...expected].sort());
});

t.test('viewers read but cannot write (403); another workspace sees 404; API keys work, `me` is 400 for them', async (t) => {
  const task = await newTask({ title: 'Guarded' });
  t.equal((await a.call(viewerA, 'POST', 'tasks/', { company_id: acme.id, title: 'V' })).statusCode, 403);
  t.equal((await a.call(viewerA, 'PATCH', `tasks/${task.id}/`, { title: 'V' })).statusCode, 403);
  t.equal((await a.call(viewerA, 'DELETE', `tasks/${task.id}/`)).statusCode, 403);
  t.equal((await b.call(memberB, 'GET', `tasks/${task.id}/`)).statusCode, 404);
  t.equal((await b.call(memberB, 'PATCH', `tasks/${task.id}/`, { title: 'B' })).statusCode, 404);
  t.equal((await b.call(memberB, 'DELETE', `tasks/${task.id}/`)).statusCode, 404);
  t.equal((await a.call(memberA, 'GET', 'tasks/nope/')).statusCode, 404);
  const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
  const key = json(await a.call(admin, 'POST', 'api-keys/', { name: 'tasks', capabilities: ['VIEW_CRM', 'MANAGE_CRM'] })).key;
  const url = `/api/v1/organizations/${a.id}/tasks/`;
  const made = await app.inject({
    method: 'POST',
    url,
    headers: bearer(key),
    payload: { company_id: acme.id, title: 'Keyed', workflow_status: 'completed' },
  });
  t.equal(made.statusCode, 201, made.body);
  t.match(json(made), { completed_by: null, effective_status: 'completed' });
  const me = await app.inject({ method: 'GET', url: `${url}?assigned_to=me`, headers: bearer(key) });
  t.equal(me.statusCode, 400);
  t.ok(json(me).errors.assigned_to);
  t.equal((await a.call(memberA, 'DELETE', `tasks/${task.id}/`)).statusCode, 204);
  t.equal((await a.call(memberA, 'GET', `tasks/${task.id}/`)).statusCode, 404);
});

t.test('an Idempotency-Key retry of a create answers the first task and creates no second', async (t) => {
  const send = () =>
    app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${a.id}/tasks/`,
      headers: { ...memberA.headers, 'idempotency-key': 'task-retry-1' },
      payload: { company_id: acme.id, title: 'Once' },
    });
  const first = await send();
  t.equal(first.statusCode, 201);
  t.equal(json(await send()).id, json(first).id);
  t.equal(await app.db.task.count({ where: { title: 'Once' } }), 1);
});

t.test('deleting a deal or contact clears the reference; deleting the company deletes its tasks', async (t) => {
  const other = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'Temp' }));
  const task = await newTask({ title: 'Refs', deal_id: other.id, contact_id: ada.id });
  await a.call(memberA, 'DELETE', `deals/${other.id}/`);
  t.match(json(await a.call(memberA, 'GET', `tasks/${task.id}/`)), { deal_id: null, contact_id: ada.id });
  const gone = await created(a.call(memberA, 'POST', 'companies/', { name: 'Gone' }));
  const orphan = await newTask({ company_id: gone.id });
  await a.call(memberA, 'DELETE', `companies/${gone.id}/`);
  t.equal((await a.call(memberA, 'GET', `tasks/${orphan.id}/`)).statusCode, 404);
});
