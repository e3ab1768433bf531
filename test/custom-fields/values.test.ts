// Custom field values on records: every type's valid and invalid values, required and null rules, PATCH merging, every
// active key in answers (reads, lists, queries, writes), batches, deals and tasks, the webhook payload, the timeline's
// `custom.<key>` fields, and tenancy of values.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { columnFields, IMPORT_KIND_SPECS } from '../../src/modules/imports/import-file.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';
import { whenSynced } from '../helpers/sync.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });

const define = (object: string, key: string, type: string, extra: Record<string, unknown> = {}) =>
  created(a.call(admin, 'POST', 'custom-fields/', { object, key, label: key, type, ...extra }));
const options = (...values: string[]) => values.map((value) => ({ value, label: value.toUpperCase() }));

for (const object of ['company', 'contact', 'deal', 'task']) {
  await define(object, 'note_text', 'text');
  await define(object, 'story', 'long_text');
  await define(object, 'seats', 'number');
  await define(object, 'mrr', 'decimal');
  await define(object, 'active', 'boolean');
  await define(object, 'renewal', 'date');
  await define(object, 'signed_at', 'datetime');
  await define(object, 'billing_email', 'email');
  await define(object, 'portal', 'url');
  await define(object, 'plan', 'select', { options: options('free', 'pro') });
  await define(object, 'tags', 'multi_select', { options: options('vip', 'partner', 'old') });
  await define(object, 'owner', 'member');
}
const host = await created(a.call(memberA, 'POST', 'companies/', { name: 'Host' }));
const KEYS = ['note_text', 'story', 'seats', 'mrr', 'active', 'renewal', 'signed_at', 'billing_email', 'portal', 'plan', 'tags', 'owner'];
const EMPTY = Object.fromEntries(KEYS.map((key) => [key, null]));

const VALID: Record<string, unknown[]> = {
  note_text: ['hello', '', 'x'.repeat(1000)],
  story: ['y'.repeat(65536)],
  seats: [0, -3, 12.5, 1e21],
  mrr: ['1234.50', '-0.000001', '999999999999999'],
  active: [true, false],
  renewal: ['2027-01-31', '2024-02-29'],
  billing_email: ['billing@example.com'],
  portal: ['https://example.com/a?b=c', 'http://intranet.example'],
  plan: ['free', 'pro'],
  tags: [['vip'], ['vip', 'partner'], []],
};
const INVALID: Record<string, unknown[]> = {
  note_text: [3, 'x'.repeat(1001), 'nul\u0000', ['a'], { a: 1 }],
  story: ['y'.repeat(65537), false],
  seats: ['3', true, [1]],
  mrr: [12.5, '1.1234567', '1e5', '1234567890123456', 'abc'],
  active: ['true', 1, 0],
  renewal: ['2027-02-30', '31/01/2027', '2027-01-31T00:00:00Z', 20270131],
  signed_at: ['2027-01-31', '2027-01-31T10:00:00', 'yesterday', 5],
  billing_email: ['not-an-email', 42],
  portal: ['ftp://example.com', 'example.com', 'javascript:alert(1)'],
  plan: ['enterprise', 'PRO', ['pro'], 1],
  tags: ['vip', ['vip', 'vip'], ['gold'], [1]],
  owner: ['not-a-uuid', '00000000-0000-4000-8000-000000000000', 7],
};

t.test('every type: valid values are stored and answered as given; records carry every active key', async (t) => {
  const blank = await created(a.call(memberA, 'POST', 'companies/', { name: 'Blank' }));
  t.same(blank.custom_fields, EMPTY, 'every active key, null');
  for (const [key, values] of Object.entries(VALID)) {
    for (const value of values) {
      const res = await a.call(memberA, 'PATCH', `companies/${blank.id}/`, { custom_fields: { [key]: value } });
      t.equal(res.statusCode, 200, `${key} = ${JSON.stringify(value).slice(0, 40)}: ${res.body.slice(0, 300)}`);
      t.same(json(res).custom_fields[key], value, `${key} answered as given`);
    }
  }
  const datetime = await a.call(memberA, 'PATCH', `companies/${blank.id}/`, { custom_fields: { signed_at: '2027-01-31T10:00:00+02:00' } });
  t.equal(json(datetime).custom_fields.signed_at, '2027-01-31T08:00:00.000Z', 'a date-time is answered in UTC');
  const owner = await a.call(memberA, 'PATCH', `companies/${blank.id}/`, { custom_fields: { owner: viewerA.id.toUpperCase() } });
  t.equal(json(owner).custom_fields.owner, viewerA.id, 'a member, any case');
  const read = json(await a.call(viewerA, 'GET', `companies/${blank.id}/`));
  t.same(read.custom_fields, json(owner).custom_fields, 'the read answers what the write did');
  const listed = json<Array<{ id: string; custom_fields: unknown }>>(await a.call(viewerA, 'GET', 'companies/?limit=100'));
  t.same(listed.find((c) => c.id === blank.id)?.custom_fields, read.custom_fields, 'the list too');
  const queried = json(await a.call(viewerA, 'POST', 'companies/query/', {}));
  t.same(queried.results.find((c: { id: string }) => c.id === blank.id)?.custom_fields, read.custom_fields, 'the query too');
});

t.test('every type: invalid values answer 400 on custom_fields.<key> and write nothing', async (t) => {
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Strict', custom_fields: { seats: 1 } }));
  for (const [key, values] of Object.entries(INVALID)) {
    for (const value of values) {
      const res = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { custom_fields: { seats: 2, [key]: value } });
      t.equal(res.statusCode, 400, `${key} = ${JSON.stringify(value).slice(0, 40)}`);
      t.ok(json(res).errors?.[`custom_fields.${key}`], `${key}: ${res.body.slice(0, 200)}`);
      const create = await a.call(memberA, 'POST', 'companies/', { name: 'Never', custom_fields: { [key]: value } });
      t.equal(create.statusCode, 400, `create with ${key}`);
    }
  }
  t.equal(json(await a.call(viewerA, 'GET', `companies/${company.id}/`)).custom_fields.seats, 1, 'nothing written');
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: 'Never' } }), 0);
  const unknown = await a.call(memberA, 'POST', 'companies/', { name: 'Never', custom_fields: { nope: 1, seats: 'x' } });
  t.same(Object.keys(json(unknown).errors).sort(), ['custom_fields.nope', 'custom_fields.seats'], 'every problem at once');
  const member = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { custom_fields: { owner: memberB.id } });
  t.equal(member.statusCode, 400, "another workspace's user is no member");
  t.equal((await a.call(memberA, 'POST', 'companies/', { name: 'Never', custom_fields: ['a'] })).statusCode, 400, 'not a map');
});

t.test('PATCH merges; null clears; absent keys stay', async (t) => {
  const company = await created(
    a.call(memberA, 'POST', 'companies/', { name: 'Merge', custom_fields: { seats: 5, plan: 'pro', tags: ['vip'] } }),
  );
  const res = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { custom_fields: { seats: 6, plan: null } });
  t.equal(res.statusCode, 200);
  t.same(json(res).custom_fields, { ...EMPTY, seats: 6, tags: ['vip'] });
  const stored = await app.db.company.findUnique({ where: { id: company.id }, select: { customFields: true } });
  t.same(stored?.customFields, { seats: 6, tags: ['vip'] }, 'a cleared key is removed from the stored map');
  const other = await a.call(memberA, 'PATCH', `companies/${company.id}/`, { name: 'Merged' });
  t.same(json(other).custom_fields.seats, 6, 'a PATCH without custom_fields leaves them');
});

t.test('required fields: missing or null on create, null on PATCH answer 400; absent on PATCH is fine', async (t) => {
  const field = await define('contact', 'region', 'select', { options: options('emea', 'apac'), required: true });
  const missing = await a.call(memberA, 'POST', 'contacts/', { company_id: host.id, first_name: 'No', last_name: 'Region' });
  t.equal(missing.statusCode, 400);
  t.ok(json(missing).errors['custom_fields.region']);
  const nulled = await a.call(memberA, 'POST', 'contacts/', {
    company_id: host.id,
    first_name: 'No',
    last_name: 'Region',
    custom_fields: { region: null },
  });
  t.equal(nulled.statusCode, 400);
  t.ok(json(nulled).errors['custom_fields.region']);
  // The create without custom_fields is refused by its insert's own guard: nothing of it is written.
  t.equal(await app.db.contact.count({ where: { firstName: 'No' } }), 0, 'no refused contact was written');
  const ok = await created(
    a.call(memberA, 'POST', 'contacts/', {
      company_id: host.id,
      first_name: 'Yes',
      last_name: 'Region',
      custom_fields: { region: 'emea' },
    }),
  );
  t.equal((await a.call(memberA, 'PATCH', `contacts/${ok.id}/`, { job_title: 'CTO' })).statusCode, 200, 'absent on PATCH');
  const clear = await a.call(memberA, 'PATCH', `contacts/${ok.id}/`, { custom_fields: { region: null } });
  t.equal(clear.statusCode, 400);
  t.ok(json(clear).errors['custom_fields.region']);
  await a.call(admin, 'DELETE', `custom-fields/${field.id}/`);
  t.equal(
    (await a.call(memberA, 'POST', 'contacts/', { company_id: host.id, first_name: 'Free', last_name: 'Again' })).statusCode,
    201,
    'archived: not required',
  );
});

t.test('deals and tasks take custom fields through their own writes, merged likewise', async (t) => {
  const deal = await created(
    a.call(memberA, 'POST', 'deals/', { company_id: host.id, title: 'Big', custom_fields: { mrr: '100.00', plan: 'pro' } }),
  );
  t.same(deal.custom_fields, { ...EMPTY, mrr: '100.00', plan: 'pro' });
  const moved = await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { stage: 'qualified', custom_fields: { mrr: null, seats: 3 } });
  t.equal(moved.statusCode, 200, moved.body);
  t.same(json(moved).custom_fields, { ...EMPTY, plan: 'pro', seats: 3 });
  t.equal((await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { custom_fields: { plan: 'gold' } })).statusCode, 400);
  t.same(json(await a.call(viewerA, 'GET', `deals/${deal.id}/`)).custom_fields, json(moved).custom_fields);
  const task = await created(a.call(memberA, 'POST', 'tasks/', { company_id: host.id, title: 'Call', custom_fields: { active: true } }));
  t.equal(task.custom_fields.active, true);
  const done = await a.call(memberA, 'PATCH', `tasks/${task.id}/`, { workflow_status: 'completed', custom_fields: { tags: ['old'] } });
  t.same(json(done).custom_fields, { ...EMPTY, active: true, tags: ['old'] });
  const archived = await a.call(memberA, 'POST', `tasks/${task.id}/archive/`);
  t.same(json(archived).custom_fields, json(done).custom_fields, 'an archive answers them too');
  t.equal(
    (await a.call(memberA, 'POST', 'tasks/', { company_id: host.id, title: 'Bad', custom_fields: { active: 'yes' } })).statusCode,
    400,
  );
});

t.test('batches: each operation checks its values; atomic failures write nothing', async (t) => {
  const res = await a.call(memberA, 'POST', 'companies/batch/', {
    operations: [
      { op: 'create', data: { name: 'Batch 1', custom_fields: { seats: 1 } } },
      { op: 'create', data: { name: 'Batch 2', custom_fields: { seats: 'many' } } },
    ],
  });
  t.equal(res.statusCode, 200, res.body);
  const [first, second] = json(res).results;
  t.equal(first.status, 201);
  t.equal(first.record.custom_fields.seats, 1);
  t.equal(second.status, 400);
  t.ok(second.error.errors['custom_fields.seats']);
  const atomic = await a.call(memberA, 'POST', 'companies/batch/', {
    atomic: true,
    operations: [
      { op: 'update', id: first.record.id, data: { custom_fields: { seats: 9 } } },
      { op: 'create', data: { name: 'Batch 3', custom_fields: { plan: 'nope' } } },
    ],
  });
  t.equal(atomic.statusCode, 400);
  t.ok(json(atomic).errors['operations.1.custom_fields.plan'], atomic.body);
  t.equal(json(await a.call(viewerA, 'GET', `companies/${first.record.id}/`)).custom_fields.seats, 1, 'nothing written');
});

t.test('the webhook payload and the timeline carry custom fields', async (t) => {
  const rule = await created(
    a.call(admin, 'POST', 'automations/', {
      name: 'hook',
      trigger: 'company.updated',
      action_type: 'webhook',
      action_config: { url: 'https://hooks.example.com/crm' },
    }),
  );
  const company = await created(a.call(memberA, 'POST', 'companies/', { name: 'Hooked', custom_fields: { seats: 1 } }));
  await a.call(memberA, 'PATCH', `companies/${company.id}/`, { custom_fields: { seats: 2, plan: 'free' } });
  const runs = await app.db.automationRun.findMany({ where: { automationId: rule.id } });
  t.equal(runs.length, 1);
  const payload = runs[0]?.payload as { data: { custom_fields: unknown } } | undefined;
  t.same(payload?.data.custom_fields, { ...EMPTY, seats: 2, plan: 'free' });
  // The feed hands an event out once no older transaction is open in the cluster, which other test files share.
  type FeedEvent = { event: string; data: { id: string; custom_fields: unknown } };
  const isUpdate = (e: FeedEvent) => e.event === 'company.updated' && e.data.id === company.id;
  const events = await whenSynced(
    async () => json<FeedEvent[]>(await a.call(viewerA, 'GET', 'events/?limit=100')),
    (answer) => answer.some(isUpdate),
  );
  const updated = events.find(isUpdate);
  t.same(updated?.data.custom_fields, { ...EMPTY, seats: 2, plan: 'free' }, 'the change feed too');
  const timeline = json<Array<{ kind: string; fields: string[] }>>(await a.call(viewerA, 'GET', `companies/${company.id}/activity/`));
  t.same(timeline[0], { ...timeline[0], kind: 'updated', fields: ['custom.plan', 'custom.seats'] });
});

t.test('the CSV export adds a custom.<key> column per active field; an import without the definitions refuses them by name', async (t) => {
  const company = await created(
    a.call(memberA, 'POST', 'companies/', { name: 'Exported', custom_fields: { seats: 7, tags: ['vip', 'old'], note_text: '=SUM(A1)' } }),
  );
  const res = await a.call(viewerA, 'GET', 'companies/export/');
  t.equal(res.statusCode, 200);
  const [header, ...lines] = res.body.split('\r\n');
  const columns = header?.split(',') ?? [];
  t.same(
    columns.filter((column) => column.startsWith('custom.')),
    KEYS.map((key) => `custom.${key}`),
  );
  t.notOk(columns.includes('custom_fields'));
  const row = lines.find((line) => line.includes(company.id))?.split(',') ?? [];
  t.equal(row[columns.indexOf('custom.seats')], '7');
  t.equal(row[columns.indexOf('custom.tags')], 'vip;old', "a multi_select's values joined by ;");
  t.equal(row[columns.indexOf('custom.note_text')], "'=SUM(A1)", 'the formula guard');
  t.equal(row[columns.indexOf('custom.plan')], '', 'empty without a value');
  t.throws(() => columnFields(IMPORT_KIND_SPECS.companies, ['name', 'custom.seats'], undefined), /no custom field "seats"/);
  t.same(columnFields(IMPORT_KIND_SPECS.companies, ['name', 'custom.seats'], JSON.stringify({ 'custom.seats': null })), ['name', null]);
});

t.test("tenancy: B's records never show A's fields; A's fields never take B's values", async (t) => {
  const beta = await created(b.call(memberB, 'POST', 'companies/', { name: 'Beta' }));
  t.same(beta.custom_fields, {}, 'B has no fields');
  const res = await b.call(memberB, 'POST', 'companies/', { name: 'Beta', custom_fields: { seats: 1 } });
  t.equal(res.statusCode, 400);
  t.ok(json(res).errors['custom_fields.seats']);
});

t.test('a create is checked against the definitions as they are, whatever this process kept of them', async (t) => {
  // The process keeps a workspace's definitions from its first create with values (records/custom-fields/kept-definitions.ts).
  const kept = await define('company', 'kept_code', 'text');
  await created(a.call(memberA, 'POST', 'companies/', { name: 'Keeps', custom_fields: { kept_code: 'one' } }));
  // Another process archives the field (the row changes under this one's feet).
  await app.db.customFieldDefinition.update({ where: { id: kept.id }, data: { archivedAt: new Date() } });
  const before = await app.db.company.count({ where: { organizationId: a.id } });
  const refused = await a.call(memberA, 'POST', 'companies/', { name: 'Stale', custom_fields: { kept_code: 'two' } });
  t.equal(refused.statusCode, 400, 'the archived field is refused');
  t.match(json(refused).errors['custom_fields.kept_code'], [/archived/]);
  t.equal(await app.db.company.count({ where: { organizationId: a.id } }), before, 'nothing written');
  // And a field created elsewhere is known at once.
  await app.db.customFieldDefinition.create({
    data: { organizationId: a.id, object: 'company', key: 'elsewhere', label: 'Elsewhere', type: 'number' },
  });
  const ok = await created(a.call(memberA, 'POST', 'companies/', { name: 'Fresh', custom_fields: { elsewhere: 3 } }));
  t.equal(ok.custom_fields.elsewhere, 3);
  // A field made required elsewhere is enforced on the next create, kept definitions or not.
  await app.db.customFieldDefinition.updateMany({ where: { organizationId: a.id, key: 'elsewhere' }, data: { required: true } });
  const missing = await a.call(memberA, 'POST', 'companies/', { name: 'Missing', custom_fields: { note_text: 'x' } });
  t.equal(missing.statusCode, 400);
  t.match(json(missing).errors['custom_fields.elsewhere'], [/required/]);
  await app.db.customFieldDefinition.updateMany({ where: { organizationId: a.id, key: 'elsewhere' }, data: { required: false } });
});

t.test('a read shows the definitions as they are, whatever this process shaped its last reads by', async (t) => {
  // Reads return the stored values with the definitions' stamp; the process shapes them (db/custom-field-shape.ts).
  const shown = await define('company', 'shown_code', 'text');
  const answer = await created(a.call(memberA, 'POST', 'companies/', { name: 'Shown', custom_fields: { shown_code: 'kept' } }));
  const reads = async () => {
    const listed = json<Array<{ id: string; custom_fields: Record<string, unknown> }>>(
      await a.call(viewerA, 'GET', 'companies/?limit=100'),
    );
    const queried = json<{ results: Array<{ id: string; custom_fields: Record<string, unknown> }> }>(
      await a.call(viewerA, 'POST', 'companies/query/', { filter: { field: 'name', op: 'eq', value: 'Shown' } }),
    );
    return [
      listed.find((row) => row.id === answer.id)!.custom_fields,
      queried.results.find((row) => row.id === answer.id)!.custom_fields,
      json(await a.call(viewerA, 'GET', `companies/${answer.id}/`)).custom_fields as Record<string, unknown>,
    ];
  };
  for (const values of await reads()) {
    t.equal(values.shown_code, 'kept');
    // The keys in the order the write's answer (shaped by the database) has them: jsonb's.
    t.same(Object.keys(values), Object.keys(answer.custom_fields), 'the same keys in the same order as the write answered');
  }
  // Another process archives the field: the next reads hide its value without this process being told.
  await app.db.customFieldDefinition.update({ where: { id: shown.id }, data: { archivedAt: new Date() } });
  for (const values of await reads()) t.notOk('shown_code' in values, 'an archived field is hidden at once');
  // And restores it, and creates another: both show at once, the new one empty.
  await app.db.customFieldDefinition.update({ where: { id: shown.id }, data: { archivedAt: null } });
  await app.db.customFieldDefinition.create({
    data: { organizationId: a.id, object: 'company', key: 'shown_later', label: 'Later', type: 'number' },
  });
  for (const values of await reads()) {
    t.equal(values.shown_code, 'kept', 'a restored field shows its kept value');
    t.equal(values.shown_later, null, 'a new field shows, empty');
  }
  // A field named as an Object.prototype member, and a stored key of no definition: shown as the database shapes them.
  await define('company', 'constructor', 'number');
  await app.pg.query(`UPDATE companies SET custom_fields = custom_fields || '{"orphan_key": "x"}' WHERE id = $1`, [answer.id]);
  const { rows } = await app.pg.query<{ values: Record<string, unknown> }>(
    `SELECT crm_custom_field_template(organization_id, 'company') || (custom_fields - crm_custom_field_archived(organization_id, 'company'))
       AS values FROM companies WHERE id = $1`,
    [answer.id],
  );
  for (const values of await reads()) {
    t.equal(values.constructor, null, 'a field named constructor, empty');
    t.equal(values.orphan_key, 'x');
    t.same(Object.entries(values), Object.entries(rows[0]!.values), "the database's own shaping, in its order");
  }
  await app.db.customFieldDefinition.updateMany({
    where: { organizationId: a.id, key: { in: ['shown_later', 'constructor'] } },
    data: { archivedAt: new Date() },
  });
});
