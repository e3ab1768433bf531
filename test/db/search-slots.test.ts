// Search scans are bounded per process (2 per CPU): more wait in the process, and the pool stays open to every other request.
import { availableParallelism } from 'node:os';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { holdLocks } from '../helpers/locks.js';

const SCANS = 2 * availableParallelism();

t.test('the search beyond the bound waits in the process; other requests still get a connection', async (t) => {
  // More connections than scans, so the pool is not what holds the extra search back.
  const { app, databaseUrl } = await buildTestApp(t, { DATABASE_POOL_SIZE: String(SCANS + 4) });
  const { admin, organizationId } = await setupInstallation(app);
  const companies = `/api/v1/organizations/${organizationId}/companies/`;
  const created = await app.inject({ method: 'POST', url: companies, headers: admin.headers, payload: { name: 'Needle Ltd' } });
  t.equal(created.statusCode, 201);
  const search = () => app.inject({ method: 'GET', url: `${companies}?search=needle`, headers: admin.headers });

  // Every search scan blocks on the table lock once it runs.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('LOCK TABLE companies IN ACCESS EXCLUSIVE MODE');
  const searches = Array.from({ length: SCANS + 1 }, search);
  await holder.waitForLockWaiters(SCANS);
  const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: admin.headers });
  t.equal(me.statusCode, 200, 'a request that needs no scan is answered meanwhile');
  t.equal(await holder.lockWaiters(), SCANS, `${SCANS} scans reached the database, the one more waits in the process`);
  await holder.release();
  const answers = await Promise.all(searches);
  t.same(
    answers.map((res) => res.statusCode),
    Array(SCANS + 1).fill(200),
  );
  t.same(
    answers.map((res) => json<Array<{ name: string }>>(res).map((company) => company.name)),
    Array(SCANS + 1).fill(['Needle Ltd']),
    'each found the match, the waiting one too',
  );
});
