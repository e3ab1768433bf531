// Batches against concurrent writes and the request budget: a batch update and a single update carrying the same
// version, forced to wait on the same row lock, end with exactly one written and the other 412; a batch counts as its
// operations in the workspace's budget, and a batch over it is refused whole.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { holdLocks, track } from '../helpers/locks.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

t.test('a batch update and a single update with the same If-Match: exactly one succeeds, the other answers 412', async (t) => {
  const { app, databaseUrl } = await buildTestApp(t);
  const { a, memberA } = await crmWorkspaces(app);
  for (const atomic of [false, true]) {
    const company = await created(a.call(memberA, 'POST', 'companies/', { name: `Raced ${atomic}` }));
    const etag = `"${Date.parse(company.updated_at).toString(36)}"`;
    const holder = await holdLocks(t, databaseUrl);
    await holder.query('SELECT 1 FROM companies WHERE id = $1 FOR UPDATE', [company.id]);
    const url = `/api/v1/organizations/${a.id}/companies/`;
    const viaBatch = track(
      app.inject({
        method: 'POST',
        url: `${url}batch/`,
        headers: memberA.headers,
        payload: { atomic, operations: [{ op: 'update', id: company.id, data: { city: 'Batch' }, if_match: etag }] },
      }),
    );
    const single = track(
      app.inject({
        method: 'PATCH',
        url: `${url}${company.id}/`,
        headers: { ...memberA.headers, 'if-match': etag },
        payload: { city: 'Single' },
      }),
    );
    // Both writes are waiting on the held row before either can go on.
    await holder.waitForLockWaiters(2, () => viaBatch.settled() || single.settled());
    t.notOk(viaBatch.settled() || single.settled(), 'both wait on the lock');
    await holder.release();
    const [batchRes, singleRes] = await Promise.all([viaBatch.promise, single.promise]);
    const batchStatus = atomic ? batchRes.statusCode : json(batchRes).results[0].status;
    const statuses = [batchStatus, singleRes.statusCode].sort();
    t.same(statuses, [200, 412], `atomic ${atomic}: one written, one refused`);
    const stored = json(await a.call(memberA, 'GET', `companies/${company.id}/`));
    t.equal(stored.city, batchStatus === 200 ? 'Batch' : 'Single', 'the winner is what is stored');
    const updates = await app.db.crmActivity.count({ where: { companyId: company.id, kind: 'updated' } });
    t.equal(updates, 1, 'one timeline entry: the loser wrote nothing');
  }
});

t.test('a batch counts as its operations in the workspace budget; one over it is refused whole', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_WORKSPACE_PER_MINUTE: '10', RATE_LIMIT_API_KEY_PER_MINUTE: '1000' });
  const { a, memberA } = await crmWorkspaces(app);
  const ops = (n: number, prefix: string) => ({
    operations: Array.from({ length: n }, (_, i) => ({ op: 'create', data: { name: `${prefix}${i}` } })),
  });
  const first = await a.call(memberA, 'POST', 'companies/batch/', ops(4, 'first'));
  t.equal(first.statusCode, 200, first.body);
  t.match(first.headers.ratelimit, /^"workspace";r=6;t=\d+$/, 'four operations, four requests');
  const list = await a.call(memberA, 'GET', 'companies/');
  t.match(list.headers.ratelimit, /^"workspace";r=5;/, 'a single request counts one');
  const over = await a.call(memberA, 'POST', 'companies/batch/', ops(6, 'over'));
  t.equal(over.statusCode, 429, over.body);
  t.match(json(over), { code: 'request_budget_exceeded' });
  t.equal(await app.db.company.count({ where: { organizationId: a.id, name: { startsWith: 'over' } } }), 0, 'nothing of it written');
  t.equal((await a.call(memberA, 'GET', 'companies/')).statusCode, 429, 'the budget is spent');
});
