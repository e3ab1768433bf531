// Saved views (…/views/): create, read, list, change and delete; who sees which view (personal 404 to others), who
// may write which (MANAGE_CRM for workspace views), every 400 with its path, ETags, the audit log, limits, API keys.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const adminA = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
const otherMemberA = await createUser(app, { membership: { organizationId: a.id, role: 'member' } });

type View = {
  id: string;
  name: string;
  object: string;
  filter: unknown;
  search: string | null;
  sort: unknown[];
  columns: string[];
  visibility: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
};

const customers = { field: 'lifecycle_stage', op: 'eq', value: 'customer' };

t.test('create, read, list, change and delete a workspace view', async (t) => {
  const res = await a.call(memberA, 'POST', 'views/', {
    name: '  Customers  ',
    object: 'companies',
    visibility: 'workspace',
    filter: { and: [customers, { field: 'country', op: 'eq', value: 'DE' }] },
    sort: [{ field: 'name', direction: 'asc' }, { field: 'created_at' }],
    columns: ['name', 'city', 'assigned_to_name'],
  });
  t.equal(res.statusCode, 201, res.body);
  const view = json<View>(res);
  t.match(view, {
    name: 'Customers',
    object: 'companies',
    visibility: 'workspace',
    search: null,
    sort: [{ field: 'name', direction: 'asc' }, { field: 'created_at' }],
    columns: ['name', 'city', 'assigned_to_name'],
    created_by: memberA.id,
  });
  t.same(view.filter, { and: [customers, { field: 'country', op: 'eq', value: 'DE' }] }, 'the filter as it was sent');

  // Every member sees a workspace view, the viewer too.
  const read = await a.call(viewerA, 'GET', `views/${view.id}/`);
  t.equal(read.statusCode, 200);
  t.same(json(read), view);
  const etag = read.headers.etag as string;
  t.ok(etag);
  const cached = await app.inject({
    method: 'GET',
    url: `/api/v1/organizations/${a.id}/views/${view.id}/`,
    headers: { ...viewerA.headers, 'if-none-match': etag },
  });
  t.equal(cached.statusCode, 304);
  t.ok(json<View[]>(await a.call(viewerA, 'GET', 'views/')).some((row) => row.id === view.id));

  // PATCH replaces the parts it gives; a stale If-Match is 412, the current one passes.
  const patch = (payload: object, headers: Record<string, string> = {}, user = otherMemberA) =>
    app.inject({
      method: 'PATCH',
      url: `/api/v1/organizations/${a.id}/views/${view.id}/`,
      headers: { ...user.headers, ...headers },
      payload,
    });
  const changed = await patch({ name: 'Customers, by name', filter: null, search: 'acme' }, { 'if-match': etag });
  t.equal(changed.statusCode, 200, changed.body);
  t.match(json<View>(changed), { name: 'Customers, by name', filter: null, search: 'acme', columns: ['name', 'city', 'assigned_to_name'] });
  t.not(changed.headers.etag, etag, 'a new version');
  t.equal((await patch({ name: 'lost update' }, { 'if-match': etag })).statusCode, 412);
  t.equal(json<View>(await a.call(memberA, 'GET', `views/${view.id}/`)).name, 'Customers, by name');

  // The viewer (VIEW_CRM only) neither changes nor deletes a workspace view.
  const denied = await patch({ name: 'mine now' }, {}, viewerA);
  t.equal(denied.statusCode, 403);
  t.equal(json(denied).code, 'permission_denied');
  t.equal((await a.call(viewerA, 'DELETE', `views/${view.id}/`)).statusCode, 403);

  // Audited: created and updated, with the actor.
  const entries = await app.db.auditLog.findMany({ where: { targetType: 'view', targetId: view.id }, orderBy: { createdAt: 'asc' } });
  t.same(
    entries.map((entry) => [entry.action, entry.actorUserId, entry.organizationId]),
    [
      ['view.created', memberA.id, a.id],
      ['view.updated', otherMemberA.id, a.id],
    ],
  );

  const staleDelete = await app.inject({
    method: 'DELETE',
    url: `/api/v1/organizations/${a.id}/views/${view.id}/`,
    headers: { ...otherMemberA.headers, 'if-match': etag },
  });
  t.equal(staleDelete.statusCode, 412, 'a delete from a stale reading');
  t.equal((await a.call(otherMemberA, 'DELETE', `views/${view.id}/`)).statusCode, 204);
  const gone = await a.call(memberA, 'GET', `views/${view.id}/`);
  t.equal(gone.statusCode, 404);
  t.equal(json(gone).code, 'view_not_found');
  t.equal(await app.db.auditLog.count({ where: { targetType: 'view', targetId: view.id, action: 'view.deleted' } }), 1);
});

t.test('a personal view is seen, changed and deleted by its creator only', async (t) => {
  const view = await created<View>(a.call(viewerA, 'POST', 'views/', { name: 'My leads', object: 'contacts', visibility: 'personal' }));
  t.match(view, { visibility: 'personal', created_by: viewerA.id, filter: null, sort: [], columns: [] });
  t.equal((await a.call(viewerA, 'GET', `views/${view.id}/`)).statusCode, 200);
  for (const other of [memberA, adminA]) {
    const attempts: Array<['GET' | 'PATCH' | 'DELETE', object?]> = [['GET'], ['PATCH', { name: 'x' }], ['DELETE']];
    for (const [method, payload] of attempts) {
      const res = await a.call(other, method, `views/${view.id}/`, payload);
      t.equal(res.statusCode, 404, `${method} by another member`);
      t.equal(json(res).code, 'view_not_found');
    }
    t.notOk(
      json<View[]>(await a.call(other, 'GET', 'views/')).some((row) => row.id === view.id),
      'not in their list',
    );
  }
  t.ok(
    json<View[]>(await a.call(viewerA, 'GET', 'views/')).some((row) => row.id === view.id),
    "in its creator's list",
  );
  // Its creator changes it (VIEW_CRM is enough), but cannot share it without MANAGE_CRM.
  t.equal((await a.call(viewerA, 'PATCH', `views/${view.id}/`, { columns: ['first_name', 'company.name'] })).statusCode, 200);
  const share = await a.call(viewerA, 'PATCH', `views/${view.id}/`, { visibility: 'workspace' });
  t.equal(share.statusCode, 403);
  t.equal(json<View>(await a.call(viewerA, 'GET', `views/${view.id}/`)).visibility, 'personal');
  t.equal((await a.call(viewerA, 'DELETE', `views/${view.id}/`)).statusCode, 204);
});

t.test('capabilities: a VIEW_CRM-only member creates personal views, not workspace ones; sharing and unsharing', async (t) => {
  const refused = await a.call(viewerA, 'POST', 'views/', { name: 'Shared', object: 'companies', visibility: 'workspace' });
  t.equal(refused.statusCode, 403);
  t.equal(json(refused).code, 'permission_denied');
  t.equal(await app.db.savedView.count({ where: { name: 'Shared' } }), 0, 'nothing stored');

  // A member shares a personal view; only its creator makes it personal again.
  const view = await created<View>(a.call(memberA, 'POST', 'views/', { name: 'Pipeline', object: 'deals', visibility: 'personal' }));
  t.equal((await a.call(memberA, 'PATCH', `views/${view.id}/`, { visibility: 'workspace' })).statusCode, 200);
  t.equal((await a.call(viewerA, 'GET', `views/${view.id}/`)).statusCode, 200, 'now every member sees it');
  const taken = await a.call(adminA, 'PATCH', `views/${view.id}/`, { visibility: 'personal' });
  t.equal(taken.statusCode, 403, "an admin cannot make another's view personal");
  t.equal((await a.call(memberA, 'PATCH', `views/${view.id}/`, { visibility: 'personal' })).statusCode, 200);
  t.equal((await a.call(adminA, 'GET', `views/${view.id}/`)).statusCode, 404);
});

t.test('every problem of a body answers 400 with its path', async (t) => {
  const create = (payload: unknown) => a.call(memberA, 'POST', 'views/', payload);
  const errorsOf = async (payload: unknown) => {
    const res = await create(payload);
    t.equal(res.statusCode, 400, JSON.stringify(payload));
    t.equal(json(res).code, 'validation_failed');
    return Object.keys(json<{ errors: Record<string, string[]> }>(res).errors).sort();
  };
  const base = { name: 'v', object: 'companies', visibility: 'personal' };
  t.same(await errorsOf({}), ['name', 'object', 'visibility']);
  t.same(await errorsOf({ ...base, name: '   ' }), ['name']);
  t.same(await errorsOf({ ...base, name: 'x'.repeat(201) }), ['name']);
  t.same(await errorsOf({ ...base, object: 'notes' }), ['object']);
  t.same(await errorsOf({ ...base, visibility: 'public' }), ['visibility']);
  t.same(await errorsOf({ ...base, colour: 'red' }), ['colour']);
  t.same(
    await errorsOf({
      ...base,
      filter: { and: [customers, { field: 'nope', op: 'eq', value: 1 }, { field: 'name', op: 'gt', value: 'a' }] },
      sort: [{ field: 'name' }, { field: 'missing', direction: 'up' }],
      columns: ['name', 'name', 'unknown_column', 7],
    }),
    ['columns.1', 'columns.2', 'columns.3', 'filter.and.1.field', 'filter.and.2.op', 'sort.1.direction', 'sort.1.field'],
  );
  t.same(await errorsOf({ ...base, columns: Array.from({ length: 51 }, (_, i) => `c${i}`) }), ['columns']);
  t.same(await errorsOf({ ...base, sort: [{ field: 'name' }, { field: 'city' }, { field: 'email' }, { field: 'id' }] }), ['sort']);
  t.same(await errorsOf({ ...base, object: 'deals', search: 'acme' }), ['search'], 'deals have no search');
  t.same(await errorsOf({ ...base, object: 'contacts', filter: { field: 'company.nope', op: 'is_empty' } }), ['filter.field']);
  t.same(await errorsOf(['an array']), ['body']);
  // Headers are validated as on every route: an Idempotency-Key over 255 characters is a 400, never stored.
  const longKey = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${a.id}/views/`,
    headers: { ...memberA.headers, 'idempotency-key': 'k'.repeat(300) },
    payload: base,
  });
  t.equal(longKey.statusCode, 400);
  t.equal(await app.db.savedView.count({ where: { organizationId: a.id, name: 'v' } }), 0, 'nothing stored');

  // PATCH checks the parts it gives against the view's object; the object never changes.
  const view = await created<View>(create({ name: 'ok', object: 'tasks', visibility: 'personal' }));
  const patchErrors = async (payload: object) => {
    const res = await a.call(memberA, 'PATCH', `views/${view.id}/`, payload);
    t.equal(res.statusCode, 400);
    return Object.keys(json<{ errors: Record<string, string[]> }>(res).errors).sort();
  };
  t.same(await patchErrors({ object: 'companies' }), ['object']);
  t.same(await patchErrors({ filter: { field: 'lifecycle_stage', op: 'eq', value: 'lead' } }), ['filter.field'], "not a task's field");
  t.same(await patchErrors({ sort: [{ field: 'workflow_status' }], columns: 'title' }), ['columns']);
  t.same(await patchErrors({ name: '' }), ['name']);
  t.equal(json<View>(await a.call(memberA, 'GET', `views/${view.id}/`)).name, 'ok', 'unchanged');
  // A valid one passes: a task's enum, a linked company's field, the record's computed fields as columns.
  const ok = await a.call(memberA, 'PATCH', `views/${view.id}/`, {
    filter: {
      or: [
        { field: 'workflow_status', op: 'eq', value: 'completed' },
        { field: 'company.name', op: 'starts_with', value: 'a' },
      ],
    },
    sort: [{ field: 'due_at', direction: 'desc' }],
    columns: ['title', 'effective_status', 'company.name'],
  });
  t.equal(ok.statusCode, 200, ok.body);
});

t.test('workspace API keys: workspace views only', async (t) => {
  const keyOf = async (capabilities: string[]) =>
    json<{ key: string }>(await a.call(adminA, 'POST', 'api-keys/', { name: capabilities.join('+'), capabilities })).key;
  const byKey = (key: string, method: 'GET' | 'POST', path: string, payload?: object) =>
    app.inject({ method, url: `/api/v1/organizations/${a.id}/${path}`, headers: { authorization: `Bearer ${key}` }, payload });
  const manager = await keyOf(['VIEW_CRM', 'MANAGE_CRM']);
  const personal = await byKey(manager, 'POST', 'views/', { name: 'k', object: 'companies', visibility: 'personal' });
  t.equal(personal.statusCode, 400);
  t.ok(json(personal).errors.visibility);
  const shared = await byKey(manager, 'POST', 'views/', { name: 'k', object: 'companies', visibility: 'workspace' });
  t.equal(shared.statusCode, 201);
  t.equal(json<View>(shared).created_by, null);
  const reader = await keyOf(['VIEW_CRM']);
  t.equal((await byKey(reader, 'POST', 'views/', { name: 'k2', object: 'companies', visibility: 'workspace' })).statusCode, 403);
  const mine = await created<View>(a.call(memberA, 'POST', 'views/', { name: 'mine', object: 'companies', visibility: 'personal' }));
  t.equal((await byKey(reader, 'GET', `views/${mine.id}/`)).statusCode, 404, "a key sees no member's personal view");
  const listed = json<View[]>(await byKey(reader, 'GET', 'views/?limit=200'));
  t.ok(listed.some((view) => view.id === json<View>(shared).id));
  t.notOk(listed.some((view) => view.visibility === 'personal'));
});

t.test('the list pages newest first and keeps one object on request', async (t) => {
  const user = await createUser(app, { membership: { organizationId: a.id, role: 'viewer' } });
  for (const [i, object] of ['companies', 'contacts', 'companies', 'tasks', 'companies'].entries()) {
    await created(a.call(user, 'POST', 'views/', { name: `p${i}`, object, visibility: 'personal' }));
  }
  const pages: string[][] = [];
  let url: string | undefined = 'views/?limit=2&object=companies';
  while (url) {
    const res = await a.call(user, 'GET', url);
    const rows = json<View[]>(res).filter((view) => view.visibility === 'personal');
    pages.push(rows.map((view) => view.name));
    const next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1];
    url = next?.replace(`/api/v1/organizations/${a.id}/`, '');
  }
  t.same(pages.flat(), ['p4', 'p2', 'p0'], 'only companies views, newest first, across pages');
  t.equal((await a.call(user, 'GET', 'views/?object=notes')).statusCode, 400);
});

t.test('tenancy: another workspace never sees, changes or lists a view', async (t) => {
  const view = await created<View>(a.call(memberA, 'POST', 'views/', { name: 'A only', object: 'companies', visibility: 'workspace' }));
  t.equal((await b.call(memberB, 'GET', `views/${view.id}/`)).statusCode, 404, "B's member in B's workspace");
  t.equal((await b.call(memberB, 'PATCH', `views/${view.id}/`, { name: 'taken' })).statusCode, 404);
  t.equal((await b.call(memberB, 'DELETE', `views/${view.id}/`)).statusCode, 404);
  t.notOk(json<View[]>(await b.call(memberB, 'GET', 'views/')).some((row) => row.id === view.id));
  t.equal((await a.call(memberB, 'GET', 'views/')).statusCode, 404, "B's member in A's workspace");
  t.equal((await a.call(memberA, 'GET', 'views/not-a-uuid/')).statusCode, 404, 'a malformed id is a 404');
  t.equal(json<View>(await a.call(memberA, 'GET', `views/${view.id}/`)).name, 'A only');
});

t.test("a removed member's personal views stay, seen by nobody; workspace views stay for everyone", async (t) => {
  const leaving = await createUser(app, { membership: { organizationId: a.id, role: 'member' } });
  const personal = await created<View>(a.call(leaving, 'POST', 'views/', { name: 'p', object: 'companies', visibility: 'personal' }));
  const shared = await created<View>(a.call(leaving, 'POST', 'views/', { name: 's', object: 'companies', visibility: 'workspace' }));
  await app.db.membership.delete({ where: { organizationId_userId: { organizationId: a.id, userId: leaving.id } } });
  t.equal((await a.call(adminA, 'GET', `views/${shared.id}/`)).statusCode, 200);
  t.equal(json<View>(await a.call(adminA, 'GET', `views/${shared.id}/`)).created_by, leaving.id);
  t.equal((await a.call(adminA, 'GET', `views/${personal.id}/`)).statusCode, 404);
  t.equal((await a.call(adminA, 'PATCH', `views/${shared.id}/`, { name: 'kept' })).statusCode, 200, 'a workspace view stays editable');
});

t.test('a workspace keeps at most 500 views', async (t) => {
  const { id } = await app.db.organization.create({ data: { name: 'full', slug: 'full' } });
  const owner = await createUser(app, { membership: { organizationId: id, role: 'owner' } });
  const existing = await app.db.savedView.count({ where: { organizationId: id } });
  await app.db.savedView.createMany({
    data: Array.from({ length: 500 - existing }, (_, i) => ({
      organizationId: id,
      name: `v${i}`,
      object: 'companies',
      visibility: 'workspace',
    })),
  });
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${id}/views/`,
    headers: owner.headers,
    payload: { name: 'one more', object: 'companies', visibility: 'personal' },
  });
  t.equal(res.statusCode, 400);
  t.equal(json(res).code, 'view_limit_reached');
});
