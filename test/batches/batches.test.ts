// Batches through HTTP: every operation answered as its single request (status, record, problem), in order; 1–100
// operations; notes' three operations; tenancy per item; capabilities and API keys; atomic success and atomic failure
// leaving nothing written (no record, no timeline entry, no automation run); Idempotency-Key replays.
import t from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
const rule = await created(
  a.call(admin, 'POST', 'automations/', {
    name: 'company changes',
    trigger: 'company.updated',
    action_type: 'webhook',
    action_config: { url: 'https://hooks.example.com/crm' },
  }),
);
const creations = await created(
  a.call(admin, 'POST', 'automations/', {
    name: 'company creations',
    trigger: 'company.created',
    action_type: 'webhook',
    action_config: { url: 'https://hooks.example.com/crm' },
  }),
);
const runs = async () => app.db.automationRun.count({ where: { automationId: { in: [rule.id, creations.id] } } });
const activities = async () => app.db.crmActivity.count({ where: { organizationId: a.id } });

type Result = { index: number; status: number; record?: Record<string, any>; error?: Record<string, any> };
const batch = (path: string, payload: unknown, user = memberA, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${a.id}/${path}batch/`,
    headers: { ...user.headers, ...headers },
    payload: payload as object,
  });
const results = (res: LightMyRequestResponse): Result[] => {
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
  return json<{ results: Result[] }>(res).results;
};
/** A problem body without its request-specific `instance`. */
const withoutInstance = (body: Record<string, unknown>) => {
  const { instance: _instance, ...rest } = body;
  return rest;
};

t.test('each operation is answered as its single request would be, in order', async (t) => {
  const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
  const old = await created(a.call(memberA, 'POST', 'companies/', { name: 'Old' }));
  const doomed = await created(a.call(memberA, 'POST', 'companies/', { name: 'Doomed' }));
  const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
  const staleTag = `"${Date.parse(acme.updated_at).toString(36)}"`;
  const touched = await a.call(memberA, 'PATCH', `companies/${acme.id}/`, { industry: 'Software' });
  const runsBefore = await runs();
  const res = await batch('companies/', {
    operations: [
      { op: 'create', data: { name: 'New Co', country: 'gr' } },
      { op: 'create', data: { name: '', bogus: 1 } },
      { op: 'update', id: acme.id, data: { city: 'Athens' }, if_match: touched.headers.etag },
      { op: 'update', id: acme.id, data: { city: 'Sparta' }, if_match: staleTag },
      { op: 'update', id: foreign.id, data: { city: 'Elsewhere' } },
      { op: 'archive', id: old.id },
      { op: 'restore', id: old.id },
      { op: 'delete', id: doomed.id },
      { op: 'delete', id: 'not-a-uuid' },
      { op: 'update', data: { city: 'Nowhere' } },
    ],
  });
  const out = results(res);
  t.same(
    out.map((r) => [r.index, r.status]),
    [
      [0, 201],
      [1, 400],
      [2, 200],
      [3, 412],
      [4, 404],
      [5, 200],
      [6, 200],
      [7, 204],
      [8, 404],
      [9, 400],
    ],
  );
  t.match(out[0]!.record, { name: 'New Co', country: 'GR', customer_code: /^CUS-/ });
  const single = await a.call(memberA, 'POST', 'companies/', { name: '', bogus: 1 });
  t.same(withoutInstance(out[1]!.error!), withoutInstance(json(single)), "the single create's 400, errors included");
  t.match(out[2]!.record, { id: acme.id, city: 'Athens', industry: 'Software' });
  t.match(out[3]!.error, { status: 412, code: 'precondition_failed' });
  const foreignSingle = await a.call(memberA, 'PATCH', `companies/${foreign.id}/`, { city: 'Elsewhere' });
  t.same(withoutInstance(out[4]!.error!), withoutInstance(json(foreignSingle)), "another workspace's id: the single 404");
  t.match(out[5]!.record, { id: old.id, archived_at: String });
  t.match(out[6]!.record, { id: old.id, archived_at: null });
  t.notOk(out[7]!.record, 'a delete answers no record');
  t.match(out[9]!.error, { status: 400, errors: { id: [String] } });
  t.equal((await a.call(memberA, 'GET', `companies/${doomed.id}/`)).statusCode, 404, 'deleted');
  t.equal(json(await b.call(memberB, 'GET', `companies/${foreign.id}/`)).city, null, 'the other workspace is untouched');
  // Each write as if alone: a created and three updated events (update, archive, restore), timeline entries of each.
  t.equal((await runs()) - runsBefore, 4, 'one run per event, as single requests queue them');
  const kinds = json<Array<{ kind: string }>>(await a.call(memberA, 'GET', `companies/${old.id}/activity/`)).map((e) => e.kind);
  t.same(kinds.slice(0, 2), ['restored', 'archived'], 'archive and restore have their timeline entries');
});

t.test('an operation the database refuses (a duplicate) fails alone: the operations after it are written', async (t) => {
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Taken first', email: 'taken@batch.example' }));
  const activitiesBefore = await activities();
  const out = results(
    await batch('companies/', {
      operations: [
        { op: 'create', data: { name: 'Before the duplicate' } },
        { op: 'create', data: { name: 'The duplicate', email: 'TAKEN@batch.example' } },
        { op: 'create', data: { name: 'After the duplicate' } },
      ],
    }),
  );
  t.same(
    out.map((r) => r.status),
    [201, 400, 201],
  );
  t.ok(out[1]?.error?.errors?.email, "the single request's field error");
  const names = await app.db.company.findMany({
    where: { organizationId: a.id, name: { in: ['Before the duplicate', 'The duplicate', 'After the duplicate'] } },
  });
  t.same(names.map((c) => c.name).sort(), ['After the duplicate', 'Before the duplicate']);
  t.equal(await activities(), activitiesBefore + 2, 'a timeline entry for each written record, none for the refused one');
});

t.test('consecutive creates are written together: in order, each with its number, timeline entry and automation run', async (t) => {
  const runsBefore = await runs();
  const activitiesBefore = await activities();
  const names = Array.from({ length: 40 }, (_, i) => `Together ${String(i).padStart(2, '0')}`);
  const out = results(
    await batch('companies/', {
      operations: names.map((name, i) => ({ op: 'create', data: { name, ...(i % 2 ? { country: 'de', assigned_to: memberA.id } : {}) } })),
    }),
  );
  t.same(
    out.map((r) => [r.index, r.status, r.record?.name]),
    names.map((name, i) => [i, 201, name]),
    'each answer is its own operation, in order',
  );
  t.same(
    out.map((r) => [r.record?.country ?? null, r.record?.lifecycle_stage]),
    names.map((_, i) => [i % 2 ? 'DE' : null, 'lead']),
    'a column one operation sets and another does not takes its default there',
  );
  const codes = out.map((r) => Number(String(r.record?.customer_code).slice(4)));
  t.same(
    codes,
    codes.map((_, i) => (codes[0] as number) + i),
    'customer numbers follow the operations',
  );
  t.equal(await activities(), activitiesBefore + 40, 'a created entry on each timeline');
  t.equal(await runs(), runsBefore + 40, 'a company.created run for each');
  const stored = await app.db.company.findMany({ where: { organizationId: a.id, name: { in: names } }, select: { id: true } });
  t.same(stored.map((c) => c.id).sort(), out.map((r) => r.record?.id).sort());
});

t.test('consecutive creates one of which fails (an assignee who is no member) are answered one by one', async (t) => {
  const outsider = await createUser(app);
  const activitiesBefore = await activities();
  const out = results(
    await batch('companies/', {
      operations: [
        { op: 'create', data: { name: 'Grouped first' } },
        { op: 'create', data: { name: 'Grouped outsider', assigned_to: outsider.id } },
        { op: 'create', data: { name: 'Grouped last' } },
      ],
    }),
  );
  t.same(
    out.map((r) => r.status),
    [201, 400, 201],
  );
  t.ok(out[1]?.error?.errors?.assigned_to, "the single request's field error");
  t.equal(await activities(), activitiesBefore + 2, 'the two written, once each: nothing of the attempt together is kept');
  const atomic = await batch('companies/', {
    atomic: true,
    operations: [
      { op: 'create', data: { name: 'Atomic grouped first' } },
      { op: 'create', data: { name: 'Atomic grouped outsider', assigned_to: outsider.id } },
    ],
  });
  t.equal(atomic.statusCode, 400);
  t.ok(json(atomic).errors['operations.1.assigned_to'], 'the failing operation is named');
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: { startsWith: 'Atomic grouped' } } }), 0);
});

t.test('1–100 operations; an unknown op of the type is a 400 of the whole request', async (t) => {
  t.equal((await batch('companies/', { operations: [] })).statusCode, 400);
  const many = Array.from({ length: 101 }, (_, i) => ({ op: 'create', data: { name: `C${i}` } }));
  const tooMany = await batch('companies/', { operations: many });
  t.equal(tooMany.statusCode, 400);
  t.ok(json(tooMany).errors.operations, 'errors on operations');
  t.equal((await batch('notes/', { operations: [{ op: 'archive', id: a.id }] })).statusCode, 400, 'notes have no archive');
  t.equal((await batch('companies/', { operations: [{ op: 'create', data: {} }], extra: true })).statusCode, 400);
  const hundred = await batch('companies/', { operations: many.slice(0, 100) });
  t.equal(results(hundred).length, 100);
  t.ok(results(hundred).every((r) => r.status === 201));
});

t.test('contacts, deals, tasks and notes batch through the same kernel', async (t) => {
  const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Kernel Co' }));
  const contacts = results(
    await batch('contacts/', { operations: [{ op: 'create', data: { first_name: 'Ada', last_name: 'K', company_id: acme.id } }] }),
  );
  t.equal(contacts[0]!.status, 201);
  const deals = results(await batch('deals/', { operations: [{ op: 'create', data: { title: 'Big', company_id: acme.id } }] }));
  t.equal(deals[0]!.status, 201);
  const tasks = results(
    await batch('tasks/', {
      operations: [
        { op: 'create', data: { title: 'Call', company_id: acme.id, workflow_status: 'completed' } },
        { op: 'create', data: { title: 'Bad ref', company_id: b.id } },
      ],
    }),
  );
  t.match(
    tasks.map((r) => r.status),
    [201, 400],
  );
  t.match(tasks[0]!.record, { effective_status: 'completed', completed_by: memberA.id });
  const notes = results(
    await batch('notes/', {
      operations: [
        { op: 'create', data: { body: 'One', targets: [{ type: 'company', id: acme.id }] } },
        { op: 'create', data: { body: 'Two', targets: [{ type: 'deal', id: acme.id }] } },
      ],
    }),
  );
  t.same(
    notes.map((r) => r.status),
    [201, 400],
  );
  t.ok(notes[1]!.error!.errors['targets.0'], 'the target error as the single create answers it');
  const note = notes[0]!.record!;
  const later = results(
    await batch('notes/', {
      operations: [
        { op: 'update', id: note.id, data: { body: 'One, edited' } },
        { op: 'update', id: note.id, data: { body: 'By admin' } },
      ],
    }),
  );
  t.match(later[0]!.record, { body: 'One, edited' });
  const byOther = results(await batch('notes/', { operations: [{ op: 'delete', id: note.id }] }, admin));
  t.equal(byOther[0]!.status, 204, 'an admin deletes any note');
  const other = await createUser(app, { membership: { organizationId: a.id, role: 'member' } });
  const mine = await created(a.call(memberA, 'POST', 'notes/', { body: 'Mine', targets: [{ type: 'company', id: acme.id }] }));
  const refused = results(await batch('notes/', { operations: [{ op: 'delete', id: mine.id }] }, other));
  t.match(refused[0], { status: 403, error: { code: 'note_author_only' } });
});

t.test('viewers cannot batch; API keys need MANAGE_CRM', async (t) => {
  const op = { operations: [{ op: 'create', data: { name: 'Viewer Co' } }] };
  t.equal((await batch('companies/', op, viewerA)).statusCode, 403);
  const key = async (capabilities: string[]) =>
    json(await a.call(admin, 'POST', 'api-keys/', { name: capabilities.join('+'), capabilities })).key as string;
  const url = `/api/v1/organizations/${a.id}/companies/batch/`;
  const reader = await key(['VIEW_CRM']);
  t.equal((await app.inject({ method: 'POST', url, headers: bearer(reader), payload: op })).statusCode, 403);
  const writer = await key(['VIEW_CRM', 'MANAGE_CRM']);
  const res = await app.inject({ method: 'POST', url, headers: bearer(writer), payload: op });
  t.equal(results(res)[0]!.status, 201);
  t.equal((await b.call(memberA, 'POST', 'companies/batch/', op)).statusCode, 404, 'not a member of B');
});

t.test('atomic: all written, or nothing (no record, no timeline entry, no automation run)', async (t) => {
  const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Atomic Co' }));
  const ok = results(
    await batch('companies/', {
      atomic: true,
      operations: [
        { op: 'create', data: { name: 'Atomic New' } },
        { op: 'update', id: acme.id, data: { city: 'Athens' }, if_match: `"${Date.parse(acme.updated_at).toString(36)}"` },
        { op: 'archive', id: acme.id },
      ],
    }),
  );
  t.same(
    ok.map((r) => r.status),
    [201, 200, 200],
  );
  t.match(json(await a.call(memberA, 'GET', `companies/${acme.id}/`)), { city: 'Athens', archived_at: String });
  const kinds = json<Array<{ kind: string }>>(await a.call(memberA, 'GET', `companies/${acme.id}/activity/`)).map((e) => e.kind);
  t.same(kinds.slice(0, 2), ['archived', 'updated'], 'each write has its own timeline entry');

  const count = await app.db.company.count({ where: { organizationId: a.id } });
  const [entries, queued] = [await activities(), await runs()];
  const before = json(await a.call(memberA, 'GET', `companies/${acme.id}/`));
  const failed = await batch('companies/', {
    atomic: true,
    operations: [
      { op: 'create', data: { name: 'Never' } },
      { op: 'update', id: acme.id, data: { city: 'Sparta' } },
      { op: 'update', id: acme.id, data: { city: 'Thebes' }, if_match: `"${Date.parse(acme.updated_at).toString(36)}"` },
    ],
  });
  t.equal(failed.statusCode, 412, failed.body);
  t.match(json(failed), { code: 'precondition_failed', errors: { 'operations.2': [String] } });
  t.equal(await app.db.company.count({ where: { organizationId: a.id } }), count, 'no record created');
  t.same(json(await a.call(memberA, 'GET', `companies/${acme.id}/`)), before, 'no record changed');
  t.equal(await activities(), entries, 'no timeline entry');
  t.equal(await runs(), queued, 'no automation run, hence no webhook delivery');

  const invalid = await batch('companies/', {
    atomic: true,
    operations: [
      { op: 'create', data: { name: 'Never either' } },
      { op: 'create', data: { name: 'x', country: 'ZZ' } },
    ],
  });
  t.equal(invalid.statusCode, 400);
  t.match(json(invalid), { code: 'validation_failed', errors: { 'operations.1': [String], 'operations.1.country': [String] } });
  const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
  const missing = await batch('companies/', {
    atomic: true,
    operations: [
      { op: 'create', data: { name: 'No' } },
      { op: 'delete', id: foreign.id },
    ],
  });
  t.equal(missing.statusCode, 404, "another workspace's record is not found");
  t.match(json(missing), { errors: { 'operations.1': [String] } });
  t.equal(await app.db.company.count({ where: { organizationId: a.id } }), count, 'still nothing created');
  t.equal(await runs(), queued);
});

t.test('atomic: a duplicate and a task reference are answered as single requests, and undo the rest', async (t) => {
  const taken = await created(a.call(memberA, 'POST', 'companies/', { name: 'Dup', email: 'dup@example.test' }));
  const count = await app.db.company.count({ where: { organizationId: a.id } });
  const dup = await batch('companies/', {
    atomic: true,
    operations: [
      { op: 'create', data: { name: 'First' } },
      { op: 'create', data: { name: 'Second', email: 'DUP@example.test' } },
    ],
  });
  t.equal(dup.statusCode, 400, dup.body);
  t.ok(json(dup).errors['operations.1.email'], 'the duplicate email, as the single create answers it');
  t.equal(await app.db.company.count({ where: { organizationId: a.id } }), count);
  const tasks = await app.db.task.count({ where: { organizationId: a.id } });
  const ref = await batch('tasks/', {
    atomic: true,
    operations: [
      { op: 'create', data: { title: 'First', company_id: taken.id } },
      { op: 'create', data: { title: 'Second', company_id: b.id } },
    ],
  });
  t.equal(ref.statusCode, 400, ref.body);
  t.ok(json(ref).errors['operations.1.company_id']);
  t.equal(await app.db.task.count({ where: { organizationId: a.id } }), tasks);
  const notes = await app.db.note.count({ where: { organizationId: a.id } });
  const noteRuns = await app.db.automationRun.count({ where: { organizationId: a.id } });
  const badNote = await batch('notes/', {
    atomic: true,
    operations: [
      { op: 'create', data: { body: 'Kept?', targets: [{ type: 'company', id: taken.id }] } },
      { op: 'create', data: { body: 'Bad', targets: [{ type: 'contact', id: taken.id }] } },
    ],
  });
  t.equal(badNote.statusCode, 400);
  t.ok(json(badNote).errors['operations.1.targets.0']);
  t.equal(await app.db.note.count({ where: { organizationId: a.id } }), notes, 'no note');
  t.equal(await app.db.automationRun.count({ where: { organizationId: a.id } }), noteRuns, 'no note.created run');
});

t.test('an Idempotency-Key replays the batch answer and writes nothing twice', async (t) => {
  const payload = { operations: [{ op: 'create', data: { name: 'Once' } }] };
  const headers = { 'idempotency-key': 'batch-once-1' };
  const first = await batch('companies/', payload, memberA, headers);
  const again = await batch('companies/', payload, memberA, headers);
  t.equal(again.statusCode, 200);
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.same(json(again), json(first));
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: 'Once' } }), 1);
  const other = await batch('companies/', { operations: [{ op: 'create', data: { name: 'Other' } }] }, memberA, headers);
  t.equal(other.statusCode, 422, 'the same key with another batch');
});
