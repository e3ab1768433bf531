// Deals through HTTP: fields and exact money, references of the same workspace (else 400), capabilities, isolation,
// idempotent create, filters, archive/restore, the kanban move (dense positions, concurrent moves forced to queue
// behind a stage lock held from a second connection), the pipeline summary and API keys.
import t from 'tap';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { holdLocks } from '../helpers/locks.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';
import { stageLockKey } from '../../src/modules/deals/board.js';

const { app, databaseUrl } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const globex = await created(a.call(memberA, 'POST', 'companies/', { name: 'Globex' }));
const foreign = await created(b.call(memberB, 'POST', 'companies/', { name: 'Foreign' }));
const foreignContact = await created(b.call(memberB, 'POST', 'contacts/', { company_id: foreign.id, first_name: 'F', last_name: 'G' }));
const ada = await created(a.call(memberA, 'POST', 'contacts/', { company_id: acme.id, first_name: 'Ada', last_name: 'L' }));

const newDeal = (body: Record<string, unknown>) =>
  created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'Deal', ...body }));
const allDeals = async (query = 'archived=all') => {
  const res = await a.call(viewerA, 'GET', `deals/?limit=200&${query}`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return json<Array<Record<string, any>>>(res);
};
/** Per stage, the positions of the active deals in order: must be 0, 1, 2, … */
const boardPositions = async () => {
  const board: Record<string, number[]> = {};
  for (const deal of await allDeals('archived=active')) board[deal.stage] = [...(board[deal.stage] ?? []), deal.position];
  for (const positions of Object.values(board)) positions.sort((x, y) => x - y);
  return board;
};
const dense = (positions: number[]) => positions.every((p, i) => p === i);

t.test('create answers the Deal with exact money, defaults and the next place of its stage', async (t) => {
  const deal = await newDeal({
    title: 'Renewal',
    value: '1240',
    tax_rate: '24',
    amount_includes_tax: true,
    contact_id: ada.id,
    assigned_to: viewerA.id,
  });
  t.match(deal, {
    title: 'Renewal',
    company_id: acme.id,
    contact_id: ada.id,
    assigned_to: viewerA.id,
    value: '1240.00',
    currency: 'EUR',
    tax_rate: '24.00',
    amount_includes_tax: true,
    net_value: '1000.00',
    tax_value: '240.00',
    gross_value: '1240.00',
    probability: 0,
    stage: 'lead',
    expected_close_date: null,
    lost_reason: null,
    archived_at: null,
  });
  t.same(Object.keys(deal).sort(), [
    'amount_includes_tax',
    'archived_at',
    'assigned_to',
    'company_id',
    'contact_id',
    'created_at',
    'currency',
    'custom_fields',
    'expected_close_date',
    'gross_value',
    'id',
    'lost_reason',
    'net_value',
    'notes',
    'position',
    'probability',
    'stage',
    'tax_rate',
    'tax_value',
    'title',
    'updated_at',
    'value',
  ]);
  t.same(json(await a.call(viewerA, 'GET', `deals/${deal.id}/`)), deal);
  // Half-up to cents: 0.05 × 50 % = 0.025 → 0.03; 10.00 gross at 7 % → net 9.345… → 9.35, tax 0.65.
  t.match(await newDeal({ value: '0.05', tax_rate: '50' }), { net_value: '0.05', tax_value: '0.03', gross_value: '0.08' });
  t.match(await newDeal({ value: '10', tax_rate: '7', amount_includes_tax: true }), {
    net_value: '9.35',
    tax_value: '0.65',
    gross_value: '10.00',
  });
  t.match(
    await newDeal({ value: '999999999999.99', tax_rate: '100', currency: 'JPY', expected_close_date: '2026-12-31', probability: 100 }),
    {
      gross_value: '1999999999999.98',
      currency: 'JPY',
      expected_close_date: '2026-12-31',
    },
  );
  const lost = await newDeal({ stage: 'lost', lost_reason: 'Budget' });
  t.match(lost, { stage: 'lost', lost_reason: 'Budget', position: 0 });
});

t.test('bad input and references outside the workspace answer 400 on the field, writing nothing', async (t) => {
  const before = await app.db.deal.count();
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a JSON number as value', { value: 12.5 }, 'value'],
    ['three decimal places', { value: '1.005' }, 'value'],
    ['a negative value', { value: '-1' }, 'value'],
    ['tax over 100', { tax_rate: '100.01' }, 'tax_rate'],
    ['probability over 100', { probability: 101 }, 'probability'],
    ['an unknown currency', { currency: 'ABC' }, 'currency'],
    ['a lower-case currency', { currency: 'eur' }, 'currency'],
    ['an unknown stage', { stage: 'closed' }, 'stage'],
    ['lost without a reason', { stage: 'lost' }, 'lost_reason'],
    ['a company of another workspace', { company_id: foreign.id }, 'company_id'],
    ['a contact of another workspace', { contact_id: foreignContact.id }, 'contact_id'],
    ['a user of another workspace', { assigned_to: memberB.id }, 'assigned_to'],
  ];
  for (const [label, body, field] of cases) {
    const res = await a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'X', ...body });
    t.equal(res.statusCode, 400, label);
    t.ok(json(res).errors?.[field], `${label}: ${res.body}`);
  }
  t.equal(await app.db.deal.count(), before);
});

t.test('viewers read but cannot write (403); another workspace sees 404 everywhere', async (t) => {
  const deal = await newDeal({ title: 'Guarded' });
  t.equal((await a.call(viewerA, 'POST', 'deals/', { company_id: acme.id, title: 'V' })).statusCode, 403);
  t.equal((await a.call(viewerA, 'PATCH', `deals/${deal.id}/`, { title: 'V' })).statusCode, 403);
  t.equal((await a.call(viewerA, 'POST', `deals/${deal.id}/move/`, { stage: 'won', position: 0 })).statusCode, 403);
  t.equal((await a.call(viewerA, 'DELETE', `deals/${deal.id}/`)).statusCode, 403);
  t.equal((await a.call(viewerA, 'POST', `deals/${deal.id}/archive/`)).statusCode, 403);
  for (const [method, path, body] of [
    ['GET', `deals/${deal.id}/`, undefined],
    ['PATCH', `deals/${deal.id}/`, { title: 'B' }],
    ['POST', `deals/${deal.id}/move/`, { stage: 'won', position: 0 }],
    ['POST', `deals/${deal.id}/archive/`, undefined],
    ['DELETE', `deals/${deal.id}/`, undefined],
    ['GET', 'deals/not-a-uuid/', undefined],
  ] as const) {
    const ws = path.includes('not-a-uuid') ? a : b;
    const user = ws === a ? memberA : memberB;
    t.equal((await ws.call(user, method, path, body)).statusCode, 404, `${method} ${path}`);
  }
  t.notOk((await b.call(memberB, 'GET', 'deals/?archived=all')).body.includes(deal.id));
  t.match(json(await a.call(viewerA, 'GET', `deals/${deal.id}/`)), { title: 'Guarded' });
});

t.test('an Idempotency-Key retry of a create answers the first deal and creates no second', async (t) => {
  const send = () =>
    app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${a.id}/deals/`,
      headers: { ...memberA.headers, 'idempotency-key': 'deal-retry-1' },
      payload: { company_id: acme.id, title: 'Once' },
    });
  const first = await send();
  const second = await send();
  t.equal(first.statusCode, 201);
  t.equal(second.statusCode, 201);
  t.equal(json(second).id, json(first).id);
  t.equal(await app.db.deal.count({ where: { title: 'Once' } }), 1);
});

t.test('PATCH changes fields; a changed stage goes last in the new stage and the old one closes its gap', async (t) => {
  const deal = await newDeal({ title: 'Patchable', company_id: globex.id });
  const patched = json(
    await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { value: '50.5', tax_rate: '10', notes: 'n', contact_id: null }),
  );
  t.match(patched, { value: '50.50', net_value: '50.50', tax_value: '5.05', gross_value: '55.55', notes: 'n' });
  t.equal((await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { stage: 'lost' })).statusCode, 400, 'lost needs a reason');
  const moved = json(await a.call(memberA, 'PATCH', `deals/${deal.id}/`, { stage: 'negotiation' }));
  t.match(moved, { stage: 'negotiation' });
  const board = await boardPositions();
  for (const [stage, positions] of Object.entries(board)) t.ok(dense(positions), `${stage}: ${positions}`);
  t.equal(moved.position, board.negotiation!.length - 1);
});

t.test('list filters: stage, company_id, assigned_to and archived; archive and restore', async (t) => {
  const mine = await newDeal({ title: 'Filtered', company_id: globex.id, assigned_to: memberA.id, stage: 'proposal' });
  const titles = async (query: string) => (await allDeals(query)).map((d) => d.title);
  t.ok((await titles(`stage=proposal&company_id=${globex.id}&assigned_to=${memberA.id}`)).includes('Filtered'));
  t.notOk((await titles('stage=won')).includes('Filtered'));
  t.notOk((await titles(`company_id=${acme.id}`)).includes('Filtered'));
  const archived = json(await a.call(memberA, 'POST', `deals/${mine.id}/archive/`));
  t.match(archived, { archived_at: String, position: null });
  t.notOk((await titles('')).includes('Filtered'), 'gone from the default list');
  t.ok((await titles('archived=archived')).includes('Filtered'));
  t.ok((await titles('archived=all')).includes('Filtered'));
  t.equal((await a.call(memberA, 'POST', `deals/${mine.id}/move/`, { stage: 'won', position: 0 })).statusCode, 400);
  t.equal((await a.call(viewerA, 'GET', 'deals/?archived=maybe')).statusCode, 400);
  const restored = json(await a.call(memberA, 'POST', `deals/${mine.id}/restore/`));
  t.match(restored, { archived_at: null, stage: 'proposal' });
  t.equal(restored.position, (await boardPositions()).proposal!.length - 1, 'restored last in its stage');
});

t.test('moves keep each stage dense: within a stage, across stages, past the end, and lost needs a reason', async (t) => {
  const deals = [];
  for (let i = 0; i < 4; i += 1) deals.push(await newDeal({ title: `Q${i}`, stage: 'qualified' }));
  const move = (id: string, body: Record<string, unknown>) => a.call(memberA, 'POST', `deals/${id}/move/`, body);
  const order = async (stage: string) => (await allDeals(`stage=${stage}`)).sort((x, y) => x.position - y.position).map((d) => d.title);
  t.same(await order('qualified'), ['Q0', 'Q1', 'Q2', 'Q3']);
  t.match(json(await move(deals[3]!.id, { stage: 'qualified', position: 0 })), { position: 0 });
  t.same(await order('qualified'), ['Q3', 'Q0', 'Q1', 'Q2']);
  await move(deals[3]!.id, { stage: 'qualified', position: 2 });
  t.same(await order('qualified'), ['Q0', 'Q1', 'Q3', 'Q2']);
  t.match(json(await move(deals[0]!.id, { stage: 'won', position: 99 })), { stage: 'won' });
  t.same(await order('qualified'), ['Q1', 'Q3', 'Q2']);
  const lost = await move(deals[1]!.id, { stage: 'lost', position: 0 });
  t.equal(lost.statusCode, 400);
  t.ok(json(lost).errors.lost_reason);
  t.match(json(await move(deals[1]!.id, { stage: 'lost', position: 0, lost_reason: 'Went elsewhere' })), { stage: 'lost', position: 0 });
  t.equal((await a.call(memberA, 'DELETE', `deals/${deals[3]!.id}/`)).statusCode, 204);
  t.same(await order('qualified'), ['Q2']);
  for (const [stage, positions] of Object.entries(await boardPositions())) t.ok(dense(positions), `${stage}: ${positions}`);
  t.equal((await move(deals[2]!.id, { stage: 'won', position: -1 })).statusCode, 400);
});

t.test('concurrent moves queue behind the stage lock and leave every stage dense', async (t) => {
  const movers = [];
  for (let i = 0; i < 6; i += 1) movers.push(await newDeal({ title: `C${i}`, stage: i % 2 ? 'proposal' : 'negotiation' }));
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT pg_advisory_xact_lock($1)', [stageLockKey(a.id, 'won').toString()]);
  let settled = 0;
  const moves = movers.map((deal) =>
    a.call(memberA, 'POST', `deals/${deal.id}/move/`, { stage: 'won', position: 0 }).finally(() => {
      settled += 1;
    }),
  );
  await holder.waitForLockWaiters(1, () => settled > 0);
  t.equal(settled, 0, 'no move finished while the stage was locked');
  await holder.release();
  for (const res of await Promise.all(moves)) t.equal(res.statusCode, 200, res.body);
  const board = await boardPositions();
  for (const [stage, positions] of Object.entries(board)) t.ok(dense(positions), `${stage}: ${positions}`);
  const won = (await allDeals('stage=won')).filter((d) => d.title.startsWith('C'));
  t.equal(won.length, 6);
});

t.test('the pipeline counts active deals per stage and sums net and gross per currency', async (t) => {
  const ws = await app.db.organization.create({ data: { name: 'pipe', slug: 'pipe' } });
  const owner = await createUser(app, { membership: { organizationId: ws.id, role: 'member' } });
  const call = (method: 'GET' | 'POST', path: string, payload?: unknown) =>
    app.inject({
      method,
      url: `/api/v1/organizations/${ws.id}/${path}`,
      headers: owner.headers,
      ...(payload ? { payload: payload as object } : {}),
    });
  const company = json(await call('POST', 'companies/', { name: 'P' }));
  const add = async (body: Record<string, unknown>) => json(await call('POST', 'deals/', { company_id: company.id, title: 'p', ...body }));
  await add({ value: '100', tax_rate: '24' });
  await add({ value: '0.10', tax_rate: '24' });
  await add({ value: '50', currency: 'USD' });
  await add({ value: '10', stage: 'won' });
  const gone = await add({ value: '1000' });
  await call('POST', `deals/${gone.id}/archive/`);
  const res = await call('GET', 'deals/pipeline/');
  t.equal(res.statusCode, 200);
  t.same(json(res), [
    {
      stage: 'lead',
      count: 3,
      totals: [
        { currency: 'EUR', net_value: '100.10', gross_value: '124.12' },
        { currency: 'USD', net_value: '50.00', gross_value: '50.00' },
      ],
    },
    { stage: 'qualified', count: 0, totals: [] },
    { stage: 'proposal', count: 0, totals: [] },
    { stage: 'negotiation', count: 0, totals: [] },
    { stage: 'won', count: 1, totals: [{ currency: 'EUR', net_value: '10.00', gross_value: '10.00' }] },
    { stage: 'lost', count: 0, totals: [] },
  ]);
  // The kept totals follow every kind of change: they equal the sums of the active deals the list answers.
  const listed = json<Array<Record<string, any>>>(await call('GET', 'deals/?limit=200'));
  await call('POST', `deals/${listed[0]!.id}/move/`, { stage: 'proposal', position: 0 });
  await app.inject({
    method: 'PATCH',
    url: `/api/v1/organizations/${ws.id}/deals/${listed[1]!.id}/`,
    headers: owner.headers,
    payload: { value: '33.33', currency: 'GBP', amount_includes_tax: true },
  });
  await app.inject({ method: 'DELETE', url: `/api/v1/organizations/${ws.id}/deals/${listed[2]!.id}/`, headers: owner.headers });
  await call('POST', `deals/${gone.id}/restore/`);
  const cents = (text: string) => BigInt(text.replace('.', ''));
  const expected = new Map<string, { count: number; net: bigint; gross: bigint }>();
  for (const deal of json<Array<Record<string, any>>>(await call('GET', 'deals/?limit=200'))) {
    const key = `${deal.stage} ${deal.currency}`;
    const sum = expected.get(key) ?? { count: 0, net: 0n, gross: 0n };
    expected.set(key, { count: sum.count + 1, net: sum.net + cents(deal.net_value), gross: sum.gross + cents(deal.gross_value) });
  }
  const kept = new Map<string, { count: number; net: bigint; gross: bigint }>();
  for (const stage of json<Array<{ stage: string; totals: Array<{ currency: string; net_value: string; gross_value: string }> }>>(
    await call('GET', 'deals/pipeline/'),
  )) {
    for (const total of stage.totals) {
      kept.set(`${stage.stage} ${total.currency}`, { count: 0, net: cents(total.net_value), gross: cents(total.gross_value) });
    }
  }
  t.same(
    [...kept].map(([key, { net, gross }]) => [key, net, gross]).sort(),
    [...expected].map(([key, { net, gross }]) => [key, net, gross]).sort(),
  );
});

t.test('workspace API keys reach the deal routes within their capabilities', async (t) => {
  const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
  const newKey = async (capabilities: string[]) => {
    const res = await a.call(admin, 'POST', 'api-keys/', { name: capabilities.join('+'), capabilities });
    if (res.statusCode !== 201) throw new Error(res.body);
    return json<{ key: string }>(res).key;
  };
  const [writer, reader] = [await newKey(['VIEW_CRM', 'MANAGE_CRM']), await newKey(['VIEW_CRM'])];
  const url = `/api/v1/organizations/${a.id}/deals/`;
  const made = await app.inject({ method: 'POST', url, headers: bearer(writer), payload: { company_id: acme.id, title: 'Keyed' } });
  t.equal(made.statusCode, 201, made.body);
  t.equal((await app.inject({ method: 'GET', url: `${url}pipeline/`, headers: bearer(reader) })).statusCode, 200);
  t.equal(
    (await app.inject({ method: 'POST', url, headers: bearer(reader), payload: { company_id: acme.id, title: 'No' } })).statusCode,
    403,
  );
});
