// Companies: create, read, partial update and delete, the bodies, bad input, capabilities per role and the
// automation event written in the same transaction.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { rejectsBadBodies } from '../auth/bad-input.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const COMPANY_KEYS = [
  'address_line_1',
  'address_line_2',
  'archived_at',
  'assigned_to',
  'assigned_to_name',
  'city',
  'country',
  'created_at',
  'custom_fields',
  'customer_code',
  'email',
  'id',
  'industry',
  'lifecycle_stage',
  'name',
  'notes',
  'phone_number',
  'postal_code',
  'tax_id',
  'updated_at',
  'website',
];
const companyCount = (organizationId: string) => app.db.company.count({ where: { organizationId } });

t.test('create answers 201 with the Company body, defaults included, stored in the path organization', async (t) => {
  const res = await a.call(memberA, 'POST', 'companies/', { name: 'Acme' });
  t.equal(res.statusCode, 201);
  const body = json(res);
  t.same(Object.keys(body).sort(), COMPANY_KEYS);
  t.match(body, { name: 'Acme', email: null, phone_number: null, website: null, lifecycle_stage: 'lead' });
  t.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const row = await app.db.company.findUniqueOrThrow({ where: { id: body.id } });
  t.equal(row.organizationId, a.id);

  const full = await created(
    a.call(memberA, 'POST', 'companies/', {
      name: 'Globex',
      email: 'hello@globex.example',
      phone_number: '+1 555 0100',
      website: 'https://globex.example',
      lifecycle_stage: 'customer',
    }),
  );
  const read = await a.call(viewerA, 'GET', `companies/${full.id}/`);
  t.equal(read.statusCode, 200);
  t.same(json(read), full, 'GET answers the same body');
  t.match(full, {
    email: 'hello@globex.example',
    phone_number: '+1 555 0100',
    website: 'https://globex.example',
    lifecycle_stage: 'customer',
  });
});

t.test('a new id is a UUID version 7 that starts with its creation time in milliseconds (crm_new_id)', async (t) => {
  const before = Date.now();
  const body = await created(a.call(memberA, 'POST', 'companies/', { name: 'Time-ordered' }));
  const after = Date.now();
  t.match(body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'version 7, RFC 9562 variant');
  const millis = Number.parseInt(body.id.replace(/-/g, '').slice(0, 12), 16);
  // The database's clock is this machine's; a second of slack for rounding and scheduling.
  t.ok(millis >= before - 1000 && millis <= after + 1000, `id time ${millis} within the request (${before}..${after})`);
  const second = await created(a.call(memberA, 'POST', 'companies/', { name: 'Time-ordered, later' }));
  t.ok(Number.parseInt(second.id.replace(/-/g, '').slice(0, 12), 16) >= millis, 'a later record never has an earlier time');
});

t.test('organization and organization_id in a create body are ignored: the tenant comes from the path', async (t) => {
  const beforeB = await companyCount(b.id);
  const body = await created(a.call(memberA, 'POST', 'companies/', { name: 'Sneaky', organization: b.id, organization_id: b.id }));
  t.equal((await app.db.company.findUniqueOrThrow({ where: { id: body.id } })).organizationId, a.id);
  t.equal(await companyCount(b.id), beforeB, 'nothing written to the other organization');
  t.equal((await b.call(memberB, 'GET', `companies/${body.id}/`)).statusCode, 404);
});

t.test('bad create bodies answer 400 problem+json and write nothing', async (t) => {
  const before = await companyCount(a.id);
  await rejectsBadBodies(
    t,
    app,
    { method: 'POST', url: `/api/v1/organizations/${a.id}/companies/`, headers: memberA.headers },
    { name: 'Valid' },
    ['name', 'email', 'phone_number', 'website', 'lifecycle_stage'],
  );
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing name', { email: 'x@example.test' }, 'name'],
    ['empty name', { name: '' }, 'name'],
    ['name of 256 characters', { name: 'n'.repeat(256) }, 'name'],
    ['invalid email', { name: 'X', email: 'not-an-email' }, 'email'],
    ['phone_number of 51 characters', { name: 'X', phone_number: '1'.repeat(51) }, 'phone_number'],
    ['website of 2049 characters', { name: 'X', website: `https://${'w'.repeat(2041)}` }, 'website'],
    ['unknown lifecycle_stage', { name: 'X', lifecycle_stage: 'churned' }, 'lifecycle_stage'],
    ['null name', { name: null }, 'name'],
  ];
  for (const [label, payload, field] of cases) {
    const res = await a.call(memberA, 'POST', 'companies/', payload);
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: errors.${field}`);
  }
  const text = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${a.id}/companies/`,
    headers: { ...memberA.headers, 'content-type': 'text/plain' },
    payload: 'name=Acme',
  });
  t.equal(text.statusCode, 415);
  const missing = await app.inject({ method: 'POST', url: `/api/v1/organizations/${a.id}/companies/`, headers: memberA.headers });
  t.equal(missing.statusCode, 400, 'no body at all');
  t.equal(await companyCount(a.id), before, 'nothing written');
});

t.test('PATCH changes only the given fields and validates like create', async (t) => {
  const company = await created(
    a.call(memberA, 'POST', 'companies/', { name: 'Initech', email: 'info@initech.example', website: 'initech.example' }),
  );
  await new Promise((resolve) => setTimeout(resolve, 5));
  const res = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { lifecycle_stage: 'prospect', email: null });
  t.equal(res.statusCode, 200);
  const patched = json(res);
  t.same({ ...patched, updated_at: company.updated_at }, { ...company, lifecycle_stage: 'prospect', email: null });
  t.ok(patched.updated_at > company.updated_at, 'updated_at moves');

  const empty = await a.call(memberA, 'PATCH', `companies/${company.id}/`, {});
  t.equal(empty.statusCode, 200);
  t.same(json(empty), patched, 'an empty body changes nothing');

  const url = `/api/v1/organizations/${a.id}/companies/${company.id}/`;
  await rejectsBadBodies(t, app, { method: 'PATCH', url, headers: memberA.headers }, {}, [
    'name',
    'email',
    'phone_number',
    'website',
    'lifecycle_stage',
  ]);
  for (const [label, payload, field] of [
    ['empty name', { name: '' }, 'name'],
    ['null name', { name: null }, 'name'],
    ['organization is not ignored on PATCH', { organization: b.id }, 'organization'],
    ['organization_id is not ignored on PATCH', { organization_id: b.id }, 'organization_id'],
  ] as const) {
    const bad = await a.call(memberA, 'PATCH', `companies/${company.id}/`, payload);
    t.equal(bad.statusCode, 400, label);
    t.ok(json(bad).errors?.[field], `${label}: errors.${field}`);
  }
  t.same(json(await a.call(memberA, 'GET', `companies/${company.id}/`)), patched, 'failed PATCHes changed nothing');
});

t.test("DELETE answers 204 and takes the company's contacts with it", async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Doomed' }));
  const keep = await created(a.call(memberA, 'POST', 'companies/', { name: 'Kept' }));
  await created(a.call(memberA, 'POST', 'contacts/', { company_id: company.id, first_name: 'Ann', last_name: 'Lee' }));
  await created(a.call(memberA, 'POST', 'contacts/', { company_id: keep.id, first_name: 'Bo', last_name: 'Ray' }));

  const res = await a.call(memberA, 'DELETE', `companies/${company.id}/`);
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal((await a.call(memberA, 'GET', `companies/${company.id}/`)).statusCode, 404);
  t.equal(await app.db.contact.count({ where: { companyId: company.id } }), 0, 'its contacts are gone');
  t.equal(await app.db.contact.count({ where: { companyId: keep.id } }), 1, 'other contacts stay');
  t.equal((await a.call(memberA, 'DELETE', `companies/${company.id}/`)).statusCode, 404, 'a second DELETE: 404');
});

t.test('unknown and malformed ids answer 404 on every record endpoint', async (t) => {
  for (const id of ['8d6f1c3e-0000-4000-8000-000000000000', 'not-a-uuid', '1']) {
    for (const [method, payload] of [['GET'], ['PATCH', { name: 'X' }], ['DELETE']] as const) {
      const res = await a.call(memberA, method, `companies/${id}/`, payload);
      t.equal(res.statusCode, 404, `${method} ${id}`);
      t.equal(json(res).code, 'company_not_found');
    }
  }
});

t.test('capabilities: a viewer reads but cannot write, a member writes, strangers get 404, anonymous 401', async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Guarded' }));
  t.equal((await a.call(viewerA, 'GET', 'companies/')).statusCode, 200);
  t.equal((await a.call(viewerA, 'GET', `companies/${company.id}/`)).statusCode, 200);
  const before = await companyCount(a.id);
  for (const [method, path, payload] of [
    ['POST', 'companies/', { name: 'Nope' }],
    ['PATCH', `companies/${company.id}/`, { name: 'Nope' }],
    ['DELETE', `companies/${company.id}/`, undefined],
  ] as const) {
    const res = await a.call(viewerA, method, path, payload);
    t.equal(res.statusCode, 403, `viewer ${method}`);
    t.equal(json(res).code, 'permission_denied');
  }
  t.equal(await companyCount(a.id), before);
  t.equal(json(await a.call(memberA, 'GET', `companies/${company.id}/`)).name, 'Guarded', 'unchanged');

  for (const [method, path] of [
    ['GET', 'companies/'],
    ['POST', 'companies/'],
    ['GET', `companies/${company.id}/`],
  ] as const) {
    const res = await a.call(memberB, method, path, method === 'POST' ? { name: 'X' } : undefined);
    t.equal(res.statusCode, 404, `member of another workspace: ${method} ${path}`);
  }
  const anonymous = await app.inject({ method: 'GET', url: `/api/v1/organizations/${a.id}/companies/` });
  t.equal(anonymous.statusCode, 401);
});

t.test('create and update dispatch company.created / company.updated in the same transaction', async (t) => {
  await app.db.automation.createMany({
    data: (['company_created', 'company_updated'] as const).map((trigger) => ({
      organizationId: a.id,
      name: trigger,
      trigger,
      actionType: 'webhook' as const,
      actionConfig: { url: 'http://127.0.0.1:9/' },
    })),
  });
  const runs = () => app.db.automationRun.count({ where: { organizationId: a.id } });
  const before = await runs();
  t.equal((await a.call(memberA, 'POST', 'companies/', { name: 'X', bogus: 1 })).statusCode, 400);
  t.equal(await runs(), before, 'a rejected create dispatches nothing');
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Evented' }));
  const afterCreate = await app.db.automationRun.findMany({ where: { organizationId: a.id }, orderBy: { createdAt: 'desc' }, take: 1 });
  t.equal(afterCreate[0]?.trigger, 'company_created');
  t.match(afterCreate[0]?.payload, { event: 'company.created', data: company });
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { name: 'Evented 2' });
  const total = await runs();
  t.equal(total, before + 2);
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, {});
  t.equal(await runs(), total, 'an empty PATCH dispatches nothing');
  await app.db.automation.updateMany({ where: { organizationId: a.id }, data: { isActive: false } });
});
