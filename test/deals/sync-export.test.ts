// Deals through the record kernel beyond their own rules: the incremental sync (a move shifts the deals after it, and
// each shifted deal is a change), the tombstones of deleted deals (a company's too), and the CSV export.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);

const acme = await created(a.call(memberA, 'POST', 'companies/', { name: 'Acme' }));
const since = (date: Date) => encodeURIComponent(date.toISOString());
/**
 * The feed hands out a change once no older transaction can still commit before it (a background worker's, say):
 * asks again until `count` entries are there, as a syncing client would.
 */
async function feedOf<T>(url: string, count: number): Promise<T[]> {
  let entries: T[] = [];
  for (let attempt = 0; attempt < 100 && entries.length < count; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    entries = json<T[]>(await a.call(viewerA, 'GET', url));
  }
  return entries;
}

t.test('updated_since hands out created and shifted deals, in the order of their changes', async (t) => {
  const start = new Date(Date.now() - 1000);
  const first = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'First', value: '10.5' }));
  const second = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'Second' }));
  const feed = await feedOf<{ id: string; value: string; position: number }>(`deals/?updated_since=${since(start)}&limit=200`, 2);
  t.same(
    feed.map((deal) => deal.id),
    [first.id, second.id],
  );
  t.match(feed[0], { value: '10.50', net_value: '10.50', currency: 'EUR', expected_close_date: null, position: 0 });
  const afterCreates = new Date();
  await new Promise((resolve) => setTimeout(resolve, 5));
  await a.call(memberA, 'POST', `deals/${second.id}/move/`, { stage: 'lead', position: 0 });
  const moved = await feedOf<{ id: string; position: number }>(`deals/?updated_since=${since(afterCreates)}&limit=200`, 2);
  t.same(
    moved.map((deal) => [deal.id, deal.position]).sort(),
    [
      [first.id, 1],
      [second.id, 0],
    ].sort(),
    'the moved deal and the one it shifted',
  );
  t.equal((await a.call(viewerA, 'GET', `deals/?updated_since=${since(start)}&stage=won`)).statusCode, 200, 'with a filter');
  t.same(json(await a.call(viewerA, 'GET', `deals/?updated_since=${since(start)}&stage=won`)), []);
});

t.test('a deleted deal, and the deals of a deleted company, leave tombstones', async (t) => {
  const start = new Date(Date.now() - 1000);
  const gone = await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'Gone' }));
  t.equal((await a.call(memberA, 'DELETE', `deals/${gone.id}/`)).statusCode, 204);
  const initech = await created(a.call(memberA, 'POST', 'companies/', { name: 'Initech' }));
  const taken = await created(a.call(memberA, 'POST', 'deals/', { company_id: initech.id, title: 'Taken along' }));
  t.equal((await a.call(memberA, 'DELETE', `companies/${initech.id}/`)).statusCode, 204);
  const deletions = await feedOf<{ record_type: string; id: string }>(`deletions/?since=${since(start)}&record_type=deal`, 2);
  t.same(deletions.map((row) => row.id).sort(), [gone.id, taken.id].sort());
});

t.test('the CSV export: the deals of the filters, money as two-place decimals', async (t) => {
  await created(a.call(memberA, 'POST', 'deals/', { company_id: acme.id, title: 'Exported', value: '99.9', stage: 'won' }));
  const res = await a.call(viewerA, 'GET', 'deals/export/?stage=won');
  t.equal(res.statusCode, 200);
  const [header, ...rows] = res.body.trim().split('\r\n');
  t.match(header, /^id,title,company_id,contact_id,assigned_to,value,currency,/);
  t.equal(rows.length, 1);
  t.match(rows[0], /,Exported,.*,99\.90,EUR,/);
  t.equal((await b.call(memberB, 'GET', 'deals/export/')).body.trim().split('\r\n').length, 1, 'another workspace: the header only');
});
