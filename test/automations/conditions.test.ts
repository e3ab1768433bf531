// Rule conditions: a query filter on the event's record (after the change; as it was on a deletion) that lets a run
// deliver or ends it `skipped` with the reason; 400s with paths; PATCH sets and clears it; company.<field>; tenancy.
import t from 'tap';
import { conditionHolds } from '../../src/modules/automations/condition.js';
import { scopeToOrganization } from '../../src/db/tenant-scope.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startWebhookTarget } from './webhook-target.js';

const target = await startWebhookTarget(t);
const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const api = (org = organizationId) => `/api/v1/organizations/${org}`;

async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, org = organizationId) {
  return app.inject({
    method,
    url: `${api(org)}${url}`,
    headers: admin.headers,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
}
async function ok(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, org = organizationId) {
  const res = await call(method, url, payload, org);
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.statusCode === 204 ? undefined : json(res);
}
const rule = (trigger: string, condition: unknown, org = organizationId, tag = trigger) =>
  ok(
    'POST',
    '/automations/',
    { name: `${trigger} if`, trigger, action_type: 'webhook', action_config: { url: `${target.url}?r=${tag}` }, condition },
    org,
  );

type Run = { id: string; status: string; error_message: string | null; payload: { data: { id: string } } };
/** The rule's runs once none is queued or running any more. */
async function settledRuns(ruleId: string, count: number, org = organizationId): Promise<Run[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const runs = (await ok('GET', `/automations/${ruleId}/runs/`, undefined, org)) as Run[];
    if (runs.length >= count && runs.every((run) => run.status !== 'queued' && run.status !== 'running')) return runs;
    if (Date.now() > deadline) throw new Error(`runs did not settle: ${JSON.stringify(runs)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const deliveredIds = (tag: string) =>
  target.requests.filter((request) => request.path.endsWith(`r=${tag}`)).map((request) => JSON.parse(request.body).data.id as string);
const SKIPPED = "The rule's condition did not hold on the event's record.";

t.test('a condition that holds delivers; one that does not ends skipped with the reason and delivers nothing', async (t) => {
  const customers = await rule('company.updated', { field: 'lifecycle_stage', op: 'eq', value: 'customer' });
  t.same(customers.condition, { field: 'lifecycle_stage', op: 'eq', value: 'customer' }, 'the rule shows its condition');
  const company = await ok('POST', '/companies/', { name: 'Initech', lifecycle_stage: 'lead' });
  await ok('PATCH', `/companies/${company.id}/`, { city: 'Austin' });
  await ok('PATCH', `/companies/${company.id}/`, { lifecycle_stage: 'customer' });
  const runs = await settledRuns(customers.id, 2);
  const [became, stillLead] = runs;
  t.match(became, { status: 'success', error_message: null });
  t.match(stillLead, { status: 'skipped', error_message: SKIPPED });
  t.same(deliveredIds('company.updated'), [company.id], 'one delivery: the change that made it a customer');
});

t.test('the condition is evaluated on the record of the event, not on a later state', async (t) => {
  const big = await rule('company.created', {
    and: [
      { field: 'name', op: 'starts_with', value: 'big' },
      { field: 'city', op: 'is_not_empty' },
    ],
  });
  const bigCo = await ok('POST', '/companies/', { name: 'Big Corp', city: 'Oslo' });
  const smallCo = await ok('POST', '/companies/', { name: 'Small Corp', city: 'Oslo' });
  const runs = await settledRuns(big.id, 2);
  t.same(
    runs.map((run) => [run.payload.data.id, run.status]).sort(),
    [
      [bigCo.id, 'success'],
      [smallCo.id, 'skipped'],
    ].sort(),
  );
  t.same(deliveredIds('company.created'), [bigCo.id]);
});

t.test('on *.deleted the condition holds on the record as it was', async (t) => {
  const gone = await rule('company.deleted', { field: 'lifecycle_stage', op: 'in', value: ['customer', 'inactive'] });
  const customer = await ok('POST', '/companies/', { name: 'Gone Customer', lifecycle_stage: 'customer' });
  const lead = await ok('POST', '/companies/', { name: 'Gone Lead', lifecycle_stage: 'lead' });
  await ok('DELETE', `/companies/${customer.id}/`);
  await ok('DELETE', `/companies/${lead.id}/`);
  const runs = await settledRuns(gone.id, 2);
  t.same(
    runs.map((run) => [run.payload.data.id, run.status]).sort(),
    [
      [customer.id, 'success'],
      [lead.id, 'skipped'],
    ].sort(),
  );
  t.same(deliveredIds('company.deleted'), [customer.id]);
});

t.test('company.<field> on a contact trigger reads the linked company', async (t) => {
  const ofCustomers = await rule('contact.created', { field: 'company.lifecycle_stage', op: 'eq', value: 'customer' });
  const customer = await ok('POST', '/companies/', { name: 'Customer Co', lifecycle_stage: 'customer' });
  const lead = await ok('POST', '/companies/', { name: 'Lead Co', lifecycle_stage: 'lead' });
  const atCustomer = await ok('POST', '/contacts/', { company_id: customer.id, first_name: 'Ann', last_name: 'A' });
  const atLead = await ok('POST', '/contacts/', { company_id: lead.id, first_name: 'Bob', last_name: 'B' });
  const runs = await settledRuns(ofCustomers.id, 2);
  const status = Object.fromEntries(runs.map((run) => [run.payload.data.id, run.status]));
  t.same(status, { [atCustomer.id]: 'success', [atLead.id]: 'skipped' });
  t.same(deliveredIds('contact.created'), [atCustomer.id]);
});

t.test('malformed conditions answer 400 with the path of each problem, and nothing is saved', async (t) => {
  const before = await app.db.automation.count();
  const cases: [string, unknown, string][] = [
    ['company.created', { and: [{ field: 'nope', op: 'eq', value: 'x' }] }, 'condition.and.0.field'],
    ['company.created', { field: 'lifecycle_stage', op: 'eq', value: 'emperor' }, 'condition.value'],
    ['company.created', { field: 'name', op: 'gt', value: 'a' }, 'condition.op'],
    ['company.created', { or: [] }, 'condition.or'],
    ['company.created', 'lifecycle_stage = customer', 'condition'],
    ['company.created', { field: 'company.name', op: 'eq', value: 'x' }, 'condition.field'],
    ['contact.created', { not: { field: 'company.nope', op: 'is_empty' } }, 'condition.not.field'],
    ['deal.stage_changed', { field: 'first_name', op: 'eq', value: 'x' }, 'condition.field'],
    ['import.finished', { field: 'id', op: 'is_not_empty' }, 'condition'],
    ['note.created', { field: 'id', op: 'is_not_empty' }, 'condition'],
  ];
  for (const [trigger, condition, path] of cases) {
    const res = await call('POST', '/automations/', {
      name: 'bad',
      trigger,
      action_type: 'webhook',
      action_config: { url: target.url },
      condition,
    });
    t.equal(res.statusCode, 400, `${trigger} ${JSON.stringify(condition)}`);
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.ok(json(res).errors?.[path], `errors["${path}"] in ${res.body}`);
  }
  t.equal(await app.db.automation.count(), before, 'no rule saved');
  const valid = await call('POST', '/automations/', {
    name: 'deal',
    trigger: 'deal.stage_changed',
    action_type: 'webhook',
    action_config: { url: target.url },
    condition: {
      and: [
        { field: 'value', op: 'gte', value: '1000.50' },
        { field: 'company.country', op: 'eq', value: 'NO' },
      ],
    },
  });
  t.equal(valid.statusCode, 201, valid.body);
});

t.test('PATCH sets, keeps and clears (null) the condition; a new trigger must fit the kept one', async (t) => {
  const plain = await rule('company.updated', undefined, organizationId, 'patched');
  t.equal(plain.condition, null, 'none by default');
  const condition = { field: 'email', op: 'contains', value: '@example.com' };
  const set = await ok('PATCH', `/automations/${plain.id}/`, { condition });
  t.same(set.condition, condition);
  t.same((await ok('PATCH', `/automations/${plain.id}/`, { name: 'renamed' })).condition, condition, 'kept when absent');
  const bad = await call('PATCH', `/automations/${plain.id}/`, { condition: { field: 'city', op: 'eq' } });
  t.equal(bad.statusCode, 400);
  t.ok(json(bad).errors['condition.value']);
  const toImport = await call('PATCH', `/automations/${plain.id}/`, { trigger: 'import.finished' });
  t.equal(toImport.statusCode, 400, 'the kept condition does not fit import.finished');
  t.ok(json(toImport).errors.condition);
  const toContact = await call('PATCH', `/automations/${plain.id}/`, { trigger: 'contact.updated' });
  t.equal(toContact.statusCode, 200, 'contacts have an email too');
  t.same((await ok('GET', `/automations/${plain.id}/`)).condition, condition);
  const cityOnContact = await call('PATCH', `/automations/${plain.id}/`, { condition: { field: 'city', op: 'eq', value: 'Oslo' } });
  t.equal(cityOnContact.statusCode, 400, 'contacts have no city');
  t.ok(json(cityOnContact).errors['condition.field']);
  const cleared = await ok('PATCH', `/automations/${plain.id}/`, { condition: null, trigger: 'import.finished' });
  t.equal(cleared.condition, null);
  t.equal(cleared.trigger, 'import.finished');
  t.equal((await ok('GET', `/automations/${plain.id}/`)).condition, null);
});

t.test('tenancy: a condition reads only its own workspace', async (t) => {
  const otherId = json(
    await app.inject({
      method: 'POST',
      url: '/api/v1/organizations/',
      headers: admin.headers,
      payload: { name: 'Other', owner_email: admin.email },
    }),
  ).id as string;
  const foreignCustomer = await ok('POST', '/companies/', { name: 'Foreign', lifecycle_stage: 'customer' }, otherId);
  // An event whose record names another workspace's company (it cannot happen through the API) sees no company.
  const verdict = await conditionHolds(
    scopeToOrganization(app.db, organizationId),
    { organizationId, name: 'contact.created', data: { id: foreignCustomer.id, company_id: foreignCustomer.id } },
    { field: 'company.lifecycle_stage', op: 'eq', value: 'customer' },
  );
  t.same(verdict, { holds: false, reason: SKIPPED });
  const own = await conditionHolds(
    scopeToOrganization(app.db, otherId),
    { organizationId: otherId, name: 'contact.created', data: { id: foreignCustomer.id, company_id: foreignCustomer.id } },
    { field: 'company.lifecycle_stage', op: 'eq', value: 'customer' },
  );
  t.same(own, { holds: true }, 'in its own workspace the same company is found');

  // Another workspace's rule with the same condition is not run for this workspace's events, and vice versa.
  const theirs = await rule('company.created', { field: 'name', op: 'eq', value: 'Twin' }, otherId, 'tenancy');
  const twin = await ok('POST', '/companies/', { name: 'Twin' });
  const theirTwin = await ok('POST', '/companies/', { name: 'Twin' }, otherId);
  const runs = await settledRuns(theirs.id, 1, otherId);
  t.same(
    runs.map((run) => run.payload.data.id),
    [theirTwin.id],
  );
  t.notOk(deliveredIds('tenancy').includes(twin.id));
  t.equal((await call('GET', `/automations/${theirs.id}/`)).statusCode, 404, "another workspace's rule is not reachable");
  t.equal((await call('PATCH', `/automations/${theirs.id}/`, { condition: null })).statusCode, 404);
});

t.test("custom.<key> in a condition: checked like a query, evaluated on the snapshot's custom_fields", async (t) => {
  const tier = await ok('POST', '/custom-fields/', {
    object: 'company',
    key: 'tier',
    label: 'Tier',
    type: 'select',
    options: [
      { value: 'gold', label: 'Gold' },
      { value: 'silver', label: 'Silver' },
    ],
  });
  const gold = await rule('company.created', { field: 'custom.tier', op: 'eq', value: 'gold' }, organizationId, 'custom-tier');
  const goldCo = await ok('POST', '/companies/', { name: 'Gold Co', custom_fields: { tier: 'gold' } });
  const silverCo = await ok('POST', '/companies/', { name: 'Silver Co', custom_fields: { tier: 'silver' } });
  const noneCo = await ok('POST', '/companies/', { name: 'Plain Co' });
  const runs = await settledRuns(gold.id, 3);
  t.same(Object.fromEntries(runs.map((run) => [run.payload.data.id, [run.status, run.error_message]])), {
    [goldCo.id]: ['success', null],
    [silverCo.id]: ['skipped', SKIPPED],
    [noneCo.id]: ['skipped', SKIPPED],
  });
  t.same(deliveredIds('custom-tier'), [goldCo.id], 'delivered only where the custom select holds');

  // On a contact, the linked company's custom field.
  const ofGold = await rule(
    'contact.created',
    { field: 'company.custom.tier', op: 'in', value: ['gold'] },
    organizationId,
    'custom-company',
  );
  const atGold = await ok('POST', '/contacts/', { company_id: goldCo.id, first_name: 'Gil', last_name: 'G' });
  const atSilver = await ok('POST', '/contacts/', { company_id: silverCo.id, first_name: 'Sil', last_name: 'S' });
  const contactRuns = await settledRuns(ofGold.id, 2);
  t.same(Object.fromEntries(contactRuns.map((run) => [run.payload.data.id, run.status])), {
    [atGold.id]: 'success',
    [atSilver.id]: 'skipped',
  });

  // An unknown key, a value the field does not take, an op its type does not take: the query language's 400s.
  for (const [condition, path] of [
    [{ field: 'custom.nope', op: 'eq', value: 'x' }, 'field'],
    [{ field: 'custom.tier', op: 'eq', value: 'bronze' }, 'value'],
    [{ field: 'custom.tier', op: 'gt', value: 'gold' }, 'op'],
  ] as const) {
    const res = await call('POST', '/automations/', {
      name: 'bad custom',
      trigger: 'company.updated',
      action_type: 'webhook',
      action_config: { url: target.url },
      condition,
    });
    const query = await call('POST', '/companies/query/', { filter: condition });
    t.equal(res.statusCode, 400, JSON.stringify(condition));
    t.equal(query.statusCode, 400);
    t.same(json(res).errors[`condition.${path}`], json(query).errors[`filter.${path}`], `the query's message at condition.${path}`);
  }

  // A field archived after the rule was saved: the run is skipped with the reason.
  await ok('DELETE', `/custom-fields/${tier.id}/`);
  const afterArchive = await ok('POST', '/companies/', { name: 'Late Co' });
  const later = await settledRuns(gold.id, 4);
  const late = later.find((run) => run.payload.data.id === afterArchive.id);
  t.equal(late?.status, 'skipped');
  t.match(late?.error_message, /no longer fits the company\.created record: condition\.field/);
});
