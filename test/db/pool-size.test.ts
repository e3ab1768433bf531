// DATABASE_POOL_SIZE bounds each pool of a server process (the owner's and the serving role's): requests beyond it wait for one, then succeed.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { holdLocks } from '../helpers/locks.js';

t.test('with 2 connections, a third request waits for one instead of opening another', async (t) => {
  const { app, databaseUrl } = await buildTestApp(t, { DATABASE_POOL_SIZE: '2' });
  const { admin, organizationId } = await setupInstallation(app);
  const list = () => app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/companies/`, headers: admin.headers });
  // Every list blocks on the table lock once it has a connection; the pool has two.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('LOCK TABLE companies IN ACCESS EXCLUSIVE MODE');
  const requests = [list(), list(), list()];
  await holder.waitForLockWaiters(2);
  // Workspace requests run on the serving role's pool (row-level security binds it).
  const pool = app.serving.pool;
  while (pool.waitingCount < 1) await new Promise((resolve) => setTimeout(resolve, 10));
  t.equal(pool.totalCount, 2, 'no third connection');
  t.equal(await holder.lockWaiters(), 2, 'two requests reached the database, the third waits in the pool');
  await holder.release();
  t.same(
    (await Promise.all(requests)).map((res) => res.statusCode),
    [200, 200, 200],
  );
});
