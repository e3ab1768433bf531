// Custom field definitions: create and read, the key pattern and uniqueness, immutable key and type, options of
// selects (409 option_in_use with the count), the 100-field limit, archive and restore keeping values, capabilities
// (VIEW_CRM reads, MANAGE_SETTINGS changes) and tenancy.
import t from 'tap';
import { json } from '../helpers/app.js';
import { buildTestApp } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { customFieldsLockName } from '../../src/db/organization-lock.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
const adminB = await createUser(app, { membership: { organizationId: b.id, role: 'admin' } });

const plan = await created(
  a.call(admin, 'POST', 'custom-fields/', {
    object: 'company',
    key: 'plan',
    label: 'Plan',
    type: 'select',
    options: [
      { value: 'free', label: 'Free' },
      { value: 'pro', label: 'Pro' },
      { value: 'enterprise', label: 'Enterprise' },
    ],
  }),
);

t.test('a definition is created with its defaults and read back; lists filter by object', async (t) => {
  t.match(plan, {
    id: String,
    object: 'company',
    key: 'plan',
    label: 'Plan',
    type: 'select',
    required: false,
    position: 0,
    description: null,
    archived_at: null,
    created_at: String,
    updated_at: String,
  });
  const seats = await created(a.call(admin, 'POST', 'custom-fields/', { object: 'company', key: 'seats', label: 'Seats', type: 'number' }));
  t.equal(seats.position, 1, 'after the last field');
  t.same(seats.options, []);
  await created(a.call(admin, 'POST', 'custom-fields/', { object: 'contact', key: 'seats', label: 'Seats', type: 'number' }));
  t.same(json(await a.call(viewerA, 'GET', `custom-fields/${plan.id}/`)), plan);
  const companies = json<Array<{ key: string; object: string }>>(await a.call(viewerA, 'GET', 'custom-fields/?object=company'));
  t.same(
    companies.map((field) => field.key),
    ['plan', 'seats'],
  );
  const all = json<Array<{ object: string }>>(await a.call(viewerA, 'GET', 'custom-fields/'));
  t.equal(all.length, 3);
  t.equal((await a.call(viewerA, 'GET', 'custom-fields/?object=note')).statusCode, 400, 'notes take no custom fields');
});

t.test('bad definitions answer 400: key pattern, duplicate key, options by type', async (t) => {
  const bad = async (body: Record<string, unknown>, field: string) => {
    const res = await a.call(admin, 'POST', 'custom-fields/', { object: 'company', label: 'X', type: 'text', key: 'x_field', ...body });
    t.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    t.ok(
      Object.keys(json(res).errors ?? {}).some((key) => key.startsWith(field)),
      `error on ${field}: ${res.body}`,
    );
  };
  await bad({ key: 'Plan' }, 'key');
  await bad({ key: '1plan' }, 'key');
  await bad({ key: 'a'.repeat(41) }, 'key');
  await bad({ key: 'plan' }, 'key');
  await bad({ type: 'color' }, 'type');
  await bad({ type: 'select' }, 'options');
  await bad(
    {
      type: 'select',
      options: [
        { value: 'a', label: 'A' },
        { value: 'a', label: 'A again' },
      ],
    },
    'options',
  );
  await bad({ type: 'select', options: [{ value: 'Not Valid', label: 'A' }] }, 'options');
  await bad({ type: 'text', options: [{ value: 'a', label: 'A' }] }, 'options');
  await bad({ object: 'note' }, 'object');
  const ok = await a.call(admin, 'POST', 'custom-fields/', { object: 'company', key: 'a'.repeat(40), label: 'Long key', type: 'text' });
  t.equal(ok.statusCode, 201, 'a 40-character key');
  t.equal((await a.call(admin, 'DELETE', `custom-fields/${json(ok).id}/`)).statusCode, 204);
});

t.test('key and type never change (400); label, required, position, description do', async (t) => {
  for (const body of [{ key: 'tier' }, { type: 'text' }, { key: 'plan' }, { object: 'contact' }]) {
    const res = await a.call(admin, 'PATCH', `custom-fields/${plan.id}/`, body);
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.ok(json(res).errors[Object.keys(body)[0] as string], res.body);
  }
  const res = await a.call(admin, 'PATCH', `custom-fields/${plan.id}/`, { label: 'Plan tier', description: 'Billing plan', position: 5 });
  t.equal(res.statusCode, 200, res.body);
  t.match(json(res), { key: 'plan', type: 'select', label: 'Plan tier', description: 'Billing plan', position: 5 });
});

t.test('removing an option records hold answers 409 option_in_use with the count; an unused one goes', async (t) => {
  const tags = await created(
    a.call(admin, 'POST', 'custom-fields/', {
      object: 'company',
      key: 'tags',
      label: 'Tags',
      type: 'multi_select',
      options: [
        { value: 'vip', label: 'VIP' },
        { value: 'partner', label: 'Partner' },
        { value: 'old', label: 'Old' },
      ],
    }),
  );
  for (const name of ['One', 'Two']) {
    await created(a.call(memberA, 'POST', 'companies/', { name, custom_fields: { plan: 'pro', tags: ['vip', 'partner'] } }));
  }
  const archived = await created(a.call(memberA, 'POST', 'companies/', { name: 'Three', custom_fields: { plan: 'pro' } }));
  await a.call(memberA, 'POST', `companies/${archived.id}/archive/`);
  const options = plan.options.filter((option: { value: string }) => option.value !== 'pro');
  const res = await a.call(admin, 'PATCH', `custom-fields/${plan.id}/`, { options });
  t.equal(res.statusCode, 409, res.body);
  t.equal(json(res).code, 'option_in_use');
  t.match(json(res).detail, /^3 records hold "pro"/, 'archived records count too');
  const multi = await a.call(admin, 'PATCH', `custom-fields/${tags.id}/`, { options: [{ value: 'vip', label: 'VIP' }] });
  t.equal(multi.statusCode, 409);
  t.match(json(multi).detail, /^2 records hold "partner"/);
  const unused = await a.call(admin, 'PATCH', `custom-fields/${tags.id}/`, {
    options: [
      { value: 'vip', label: 'Very important' },
      { value: 'partner', label: 'Partner' },
    ],
  });
  t.equal(unused.statusCode, 200, unused.body);
  t.same(json(unused).options, [
    { value: 'vip', label: 'Very important' },
    { value: 'partner', label: 'Partner' },
  ]);
});

t.test('archive (204) leaves answers and keeps values; restore brings them back', async (t) => {
  const field = await created(
    a.call(admin, 'POST', 'custom-fields/', { object: 'contact', key: 'nickname', label: 'Nickname', type: 'text' }),
  );
  const host = await created(a.call(memberA, 'POST', 'companies/', { name: 'Host' }));
  const ada = await created(
    a.call(memberA, 'POST', 'contacts/', {
      company_id: host.id,
      first_name: 'Ada',
      last_name: 'L',
      custom_fields: { nickname: 'Countess' },
    }),
  );
  t.equal(ada.custom_fields.nickname, 'Countess');
  t.equal((await a.call(admin, 'DELETE', `custom-fields/${field.id}/`)).statusCode, 204);
  t.equal((await a.call(admin, 'DELETE', `custom-fields/${field.id}/`)).statusCode, 204, 'again: nothing changes');
  const read = json(await a.call(viewerA, 'GET', `contacts/${ada.id}/`));
  t.notOk('nickname' in read.custom_fields, 'gone from the record');
  const listed = json<Array<{ id: string; custom_fields: object }>>(await a.call(viewerA, 'GET', 'contacts/'));
  t.notOk('nickname' in (listed.find((c) => c.id === ada.id)?.custom_fields ?? {}), 'gone from the list');
  const write = await a.call(memberA, 'PATCH', `contacts/${ada.id}/`, { custom_fields: { nickname: 'Ada' } });
  t.equal(write.statusCode, 400, 'an archived key is refused');
  t.ok(json(write).errors['custom_fields.nickname']);
  t.notOk(
    json<Array<{ key: string }>>(await a.call(viewerA, 'GET', 'custom-fields/')).some((f) => f.key === 'nickname'),
    'not listed',
  );
  t.ok(
    json<Array<{ key: string }>>(await a.call(viewerA, 'GET', 'custom-fields/?archived=archived')).some((f) => f.key === 'nickname'),
    'listed as archived',
  );
  const again = await a.call(admin, 'POST', 'custom-fields/', { object: 'contact', key: 'nickname', label: 'Again', type: 'text' });
  t.equal(again.statusCode, 400, 'the key stays taken');
  const restored = await a.call(admin, 'POST', `custom-fields/${field.id}/restore/`);
  t.equal(restored.statusCode, 200);
  t.equal(json(restored).archived_at, null);
  t.equal(json(await a.call(viewerA, 'GET', `contacts/${ada.id}/`)).custom_fields.nickname, 'Countess', 'the value came back');
});

t.test('at most 100 active fields per record type: the 101st and a restore past it answer 400', async (t) => {
  const fields = await Promise.all(
    Array.from({ length: 100 }, (_, i) =>
      app.db.customFieldDefinition.create({
        data: { organizationId: a.id, object: 'task', key: `f${i}`, label: `F${i}`, type: 'text', position: i },
      }),
    ),
  );
  const extra = await a.call(admin, 'POST', 'custom-fields/', { object: 'task', key: 'one_more', label: 'More', type: 'text' });
  t.equal(extra.statusCode, 400, extra.body);
  t.ok(json(extra).errors.object);
  t.equal((await a.call(admin, 'DELETE', `custom-fields/${fields[0]!.id}/`)).statusCode, 204);
  const now = await a.call(admin, 'POST', 'custom-fields/', { object: 'task', key: 'one_more', label: 'More', type: 'text' });
  t.equal(now.statusCode, 201, 'room after an archive');
  const restore = await a.call(admin, 'POST', `custom-fields/${fields[0]!.id}/restore/`);
  t.equal(restore.statusCode, 400, 'a restore past the limit');
  t.equal(
    (await a.call(admin, 'POST', 'custom-fields/', { object: 'deal', key: 'other_type', label: 'Other', type: 'text' })).statusCode,
    201,
    'another record type has its own limit',
  );
  await app.db.customFieldDefinition.deleteMany({ where: { organizationId: a.id, object: 'task' } });
});

t.test('two creates at 99 fields are serialised per workspace and record type: the one that waited answers 400', async (t) => {
  await app.db.customFieldDefinition.createMany({
    data: Array.from({ length: 99 }, (_, i) => ({
      organizationId: a.id,
      object: 'task',
      key: `c${i}`,
      label: `C${i}`,
      type: 'text',
      position: i,
    })),
  });
  t.teardown(() => app.db.customFieldDefinition.deleteMany({ where: { organizationId: a.id, object: 'task' } }));
  // Another connection holds the lock of A's task fields, as a concurrent create holds it between its count and insert.
  const holder = await app.pg.connect();
  t.teardown(() => holder.release());
  await holder.query('BEGIN');
  await holder.query(`SELECT set_config('app.organization_id', $1, true)`, [a.id]);
  await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [customFieldsLockName(a.id, 'task')]);
  let settled = false;
  const waiting = a.call(admin, 'POST', 'custom-fields/', { object: 'task', key: 'waiting', label: 'W', type: 'text' }).finally(() => {
    settled = true;
  });
  const waiters = async () =>
    (await holder.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rows[0]?.n;
  for (const deadline = Date.now() + 10_000; (await waiters()) !== 1; ) {
    if (Date.now() > deadline) throw new Error('the create never waited for the lock');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.notOk(settled, 'the create waits for the lock');
  // The lock stops no records write: a company of A is created (its custom fields read) meanwhile.
  t.equal((await a.call(memberA, 'POST', 'companies/', { name: 'Written while the fields are locked' })).statusCode, 201);
  t.equal(
    (await a.call(admin, 'POST', 'custom-fields/', { object: 'deal', key: 'other_lock', label: 'O', type: 'text' })).statusCode,
    201,
    'another record type has its own lock',
  );
  // The 100th field, created by the holder, commits before the waiting create counts.
  await holder.query(
    `INSERT INTO custom_field_definitions (id, organization_id, object, key, label, type, position, updated_at)
     VALUES (gen_random_uuid(), $1, 'task', 'hundredth', 'H', 'text', 99, now())`,
    [a.id],
  );
  await holder.query('COMMIT');
  const res = await waiting;
  t.equal(res.statusCode, 400, res.body);
  t.match(json(res).errors.object, [/at most 100 active custom fields/]);
  t.equal(await app.db.customFieldDefinition.count({ where: { organizationId: a.id, object: 'task', archivedAt: null } }), 100);
  await app.db.customFieldDefinition.deleteMany({ where: { organizationId: a.id, key: 'other_lock' } });
});

t.test('capabilities: viewers and members read, only MANAGE_SETTINGS changes', async (t) => {
  t.equal((await a.call(viewerA, 'GET', 'custom-fields/')).statusCode, 200);
  t.equal((await a.call(memberA, 'GET', `custom-fields/${plan.id}/`)).statusCode, 200);
  const body = { object: 'company', key: 'forbidden', label: 'No', type: 'text' };
  for (const user of [viewerA, memberA]) {
    t.equal((await a.call(user, 'POST', 'custom-fields/', body)).statusCode, 403);
    t.equal((await a.call(user, 'PATCH', `custom-fields/${plan.id}/`, { label: 'No' })).statusCode, 403);
    t.equal((await a.call(user, 'DELETE', `custom-fields/${plan.id}/`)).statusCode, 403);
    t.equal((await a.call(user, 'POST', `custom-fields/${plan.id}/restore/`)).statusCode, 403);
  }
  t.equal(await app.db.customFieldDefinition.count({ where: { key: 'forbidden' } }), 0);
});

t.test("tenancy: another workspace's fields are not found, listed or used", async (t) => {
  t.equal((await b.call(adminB, 'GET', `custom-fields/${plan.id}/`)).statusCode, 404);
  t.equal((await b.call(adminB, 'PATCH', `custom-fields/${plan.id}/`, { label: 'Stolen' })).statusCode, 404);
  t.equal((await b.call(adminB, 'DELETE', `custom-fields/${plan.id}/`)).statusCode, 404);
  t.equal((await b.call(adminB, 'POST', `custom-fields/${plan.id}/restore/`)).statusCode, 404);
  t.same(json(await b.call(memberB, 'GET', 'custom-fields/')), []);
  t.equal((await a.call(memberB, 'GET', 'custom-fields/')).statusCode, 404, 'a non-member');
  // The same key in B is B's own field, and B's companies do not show A's.
  await created(b.call(adminB, 'POST', 'custom-fields/', { object: 'company', key: 'plan', label: 'B plan', type: 'text' }));
  const beta = await created(b.call(memberB, 'POST', 'companies/', { name: 'Beta', custom_fields: { plan: 'anything' } }));
  t.same(beta.custom_fields, { plan: 'anything' });
  t.equal((await b.call(memberB, 'POST', 'companies/', { name: 'Beta 2', custom_fields: { seats: 3 } })).statusCode, 400, "A's key");
  t.equal((await a.call(admin, 'GET', 'custom-fields/bad-id/')).statusCode, 404, 'a malformed id');
});
