// Custom fields in the query language: `custom.<key>` filters by type (operators each type takes, 400 otherwise),
// multi_select set semantics, `company.custom.<key>` through the linked company, sorts with empty values last and
// exact keyset cursors, archived fields unknown (and the hook that tells them apart).
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { isArchivedCustomField } from '../../src/records/custom-fields/query.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, memberA, viewerA } = await crmWorkspaces(app);
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });

const define = (object: string, key: string, type: string, extra: Record<string, unknown> = {}) =>
  created(a.call(admin, 'POST', 'custom-fields/', { object, key, label: key, type, ...extra }));
const options = (...values: string[]) => values.map((value) => ({ value, label: value }));
await define('company', 'code', 'text');
await define('company', 'seats', 'number');
await define('company', 'mrr', 'decimal');
await define('company', 'renewal', 'date');
await define('company', 'signed_at', 'datetime');
await define('company', 'active', 'boolean');
await define('company', 'plan', 'select', { options: options('free', 'pro', 'enterprise') });
await define('company', 'tags', 'multi_select', { options: options('vip', 'partner', 'old') });
await define('company', 'owner', 'member');
const retired = await define('company', 'retired', 'text');

const rows = [
  {
    name: 'A',
    custom_fields: {
      code: 'Alpha',
      seats: 10,
      mrr: '10.50',
      renewal: '2027-01-01',
      active: true,
      plan: 'pro',
      tags: ['vip'],
      owner: memberA.id,
    },
  },
  {
    name: 'B',
    custom_fields: { code: 'beta', seats: 2, mrr: '10.5', renewal: '2026-06-01', active: false, plan: 'free', tags: ['vip', 'partner'] },
  },
  { name: 'C', custom_fields: { code: '', seats: 30, mrr: '99', signed_at: '2026-01-01T12:00:00Z', plan: 'enterprise', tags: [] } },
  { name: 'D', custom_fields: { retired: 'kept' } },
  { name: 'E', custom_fields: { seats: 2, plan: 'pro', tags: ['old'] } },
];
const ids: Record<string, string> = {};
for (const row of rows) ids[row.name] = (await created(a.call(memberA, 'POST', 'companies/', row))).id;
const nameOf = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]));

const query = async (body: Record<string, unknown>) => {
  const res = await a.call(viewerA, 'POST', 'companies/query/', body);
  return { res, names: res.statusCode === 200 ? json(res).results.map((r: { id: string }) => nameOf[r.id]) : [] };
};
const names = async (filter: unknown, sort?: unknown) => {
  const { res, names } = await query({ filter, ...(sort ? { sort } : {}) });
  if (res.statusCode !== 200) throw new Error(res.body);
  return sort ? names : [...names].sort();
};
const cond = (field: string, op: string, value?: unknown) => ({ field: `custom.${field}`, op, ...(value === undefined ? {} : { value }) });

t.test('filters by type', async (t) => {
  t.same(await names(cond('code', 'eq', 'Alpha')), ['A'], 'text eq is exact');
  t.same(await names(cond('code', 'contains', 'ET')), ['B'], 'contains is case-insensitive');
  t.same(await names(cond('code', 'starts_with', 'al')), ['A']);
  t.same(await names(cond('code', 'is_empty')), ['C', 'D', 'E'], "'' and absent are empty");
  t.same(await names(cond('code', 'neq', 'Alpha')), ['B', 'C', 'D', 'E'], 'neq matches the empty');
  t.same(await names(cond('seats', 'eq', 2)), ['B', 'E']);
  t.same(await names(cond('seats', 'gte', 10)), ['A', 'C']);
  t.same(await names(cond('seats', 'in', [2, 30])), ['B', 'C', 'E']);
  t.same(await names(cond('seats', 'not_in', [2])), ['A', 'C', 'D'], 'not_in matches the empty');
  t.same(await names(cond('mrr', 'eq', '10.5')), ['A', 'B'], 'decimals compare as values');
  t.same(await names(cond('mrr', 'gt', 11)), ['C']);
  t.same(await names(cond('renewal', 'lt', '2026-12-31')), ['B']);
  t.same(await names(cond('signed_at', 'gte', '2026-01-01T13:00:00+02:00')), ['C'], 'date-times compare as instants');
  t.same(await names(cond('active', 'eq', false)), ['B']);
  t.same(await names(cond('active', 'is_not_empty')), ['A', 'B']);
  t.same(await names(cond('plan', 'eq', 'pro')), ['A', 'E']);
  t.same(await names(cond('plan', 'in', ['free', 'enterprise'])), ['B', 'C']);
  t.same(await names(cond('owner', 'eq', memberA.id.toUpperCase())), ['A']);
  t.same(await names(cond('owner', 'is_empty')), ['B', 'C', 'D', 'E']);
  t.same(await names({ and: [cond('plan', 'eq', 'pro'), { not: cond('seats', 'eq', 2) }] }), ['A']);
});

t.test('multi_select: contains one option, in (any of), not_in (none of), empty as no value or []', async (t) => {
  t.same(await names(cond('tags', 'contains', 'vip')), ['A', 'B']);
  t.same(await names(cond('tags', 'in', ['partner', 'old'])), ['B', 'E']);
  t.same(await names(cond('tags', 'not_in', ['vip'])), ['C', 'D', 'E']);
  t.same(await names(cond('tags', 'is_empty')), ['C', 'D']);
  t.same(await names(cond('tags', 'is_not_empty')), ['A', 'B', 'E']);
});

t.test('operators and values a type does not take, unknown and archived fields answer 400', async (t) => {
  const bad = async (filter: unknown, at: string) => {
    const { res } = await query({ filter });
    t.equal(res.statusCode, 400, JSON.stringify(filter));
    t.ok(json(res).errors?.[at], `${at}: ${res.body}`);
  };
  await bad(cond('seats', 'contains', '1'), 'filter.op');
  await bad(cond('plan', 'lt', 'pro'), 'filter.op');
  await bad(cond('plan', 'eq', 'gold'), 'filter.value');
  await bad(cond('tags', 'eq', 'vip'), 'filter.op');
  await bad(cond('tags', 'contains', 'gold'), 'filter.value');
  await bad(cond('active', 'gt', true), 'filter.op');
  await bad(cond('seats', 'eq', '2'), 'filter.value');
  await bad(cond('renewal', 'eq', '2027-02-30'), 'filter.value');
  await bad(cond('owner', 'eq', 'x'), 'filter.value');
  await bad(cond('nope', 'eq', 'x'), 'filter.field');
  await a.call(admin, 'DELETE', `custom-fields/${retired.id}/`);
  await bad(cond('retired', 'eq', 'kept'), 'filter.field');
  const sort = await query({ sort: [{ field: 'custom.tags' }] });
  t.equal(sort.res.statusCode, 400, 'a multi_select does not sort');
  t.ok(json(sort.res).errors['sort.0.field']);
  const fields = (await app.db.customFieldDefinition.findMany({ where: { organizationId: a.id } })).map((row) => ({
    ...row,
    type: row.type as 'text',
    options: [],
    archived: row.archivedAt !== null,
    indexed: row.indexedAt !== null,
  }));
  t.ok(isArchivedCustomField('custom.retired', { own: fields }), 'the hook tells an archived field');
  t.notOk(isArchivedCustomField('custom.code', { own: fields }));
  t.notOk(isArchivedCustomField('custom.nope', { own: fields }));
});

t.test('sorts: empty values last in either direction, ties by id, cursors exact', async (t) => {
  t.same(await names(undefined, [{ field: 'custom.seats', direction: 'asc' }]).then((n) => n.slice(0, 2).sort()), ['B', 'E']);
  const asc = await names(undefined, [{ field: 'custom.seats', direction: 'asc' }]);
  t.same(asc.slice(2), ['A', 'C', 'D'], 'the empty one last');
  const desc = await names(undefined, [{ field: 'custom.seats', direction: 'desc' }]);
  t.same(desc[0], 'C');
  t.same(desc.at(-1), 'D', 'empty last descending too');
  t.same(
    await names(undefined, [{ field: 'custom.plan' }]),
    ['B', ...(await names(cond('plan', 'eq', 'pro'), [{ field: 'id' }])), 'C', 'D'],
    'a select sorts in option order',
  );
  t.same((await names(undefined, [{ field: 'custom.code' }])).slice(0, 2), ['A', 'B'], 'text in reading order, empty last');
  // One record per page: the walk answers every record exactly once, in the order of the full page.
  for (const sort of [
    [{ field: 'custom.seats' }],
    [{ field: 'custom.mrr', direction: 'desc' }],
    [{ field: 'custom.renewal' }],
    [{ field: 'custom.owner' }],
  ]) {
    const whole = await names(undefined, sort);
    const walked: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await a.call(viewerA, 'POST', 'companies/query/', { sort, limit: 1, ...(cursor ? { cursor } : {}) });
      t.equal(res.statusCode, 200, res.body);
      const page = json(res);
      walked.push(...page.results.map((r: { id: string }) => nameOf[r.id]));
      cursor = page.next_cursor ?? undefined;
    } while (cursor && walked.length < 20);
    t.same(walked, whole, JSON.stringify(sort));
  }
});

t.test('company.custom.<key> on contacts, deals and tasks', async (t) => {
  await created(a.call(memberA, 'POST', 'contacts/', { first_name: 'At', last_name: 'A', company_id: ids.A }));
  await created(a.call(memberA, 'POST', 'contacts/', { first_name: 'At', last_name: 'B', company_id: ids.B }));
  await created(a.call(memberA, 'POST', 'contacts/', { first_name: 'At', last_name: 'D', company_id: ids.D }));
  const contacts = async (filter: unknown, sort?: unknown) => {
    const res = await a.call(viewerA, 'POST', 'contacts/query/', { filter, ...(sort ? { sort } : {}) });
    t.equal(res.statusCode, 200, res.body);
    return json(res).results.map((c: { last_name: string }) => c.last_name);
  };
  t.same(await contacts({ field: 'company.custom.plan', op: 'eq', value: 'pro' }), ['A']);
  t.same(await contacts({ field: 'company.custom.tags', op: 'contains', value: 'partner' }), ['B']);
  t.same((await contacts({ field: 'company.custom.seats', op: 'is_empty' })).sort(), ['D']);
  t.same(await contacts(undefined, [{ field: 'company.custom.seats', direction: 'desc' }]), ['A', 'B', 'D']);
  const deal = await a.call(viewerA, 'POST', 'deals/query/', { filter: { field: 'company.custom.nope', op: 'eq', value: 1 } });
  t.equal(deal.statusCode, 400);
  const task = await a.call(viewerA, 'POST', 'tasks/query/', { filter: { field: 'company.custom.plan', op: 'eq', value: 'pro' } });
  t.equal(task.statusCode, 200);
});
