// A flood of unauthenticated /readyz calls is answered from the pool and a cache, and leaves the API working.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const user = await createUser(app);

t.test('500 concurrent /readyz calls all answer 200 and a normal request still works', async (t) => {
  const { rows } = await app.pg.query<{ n: number }>('SELECT setting::int AS n FROM pg_settings WHERE name = $1', ['max_connections']);
  t.ok(rows[0]!.n < 500, 'more calls than the server accepts connections');
  const flood = Array.from({ length: 500 }, () => app.inject({ method: 'GET', url: '/readyz' }));
  const during = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: user.headers });
  t.equal(during.statusCode, 200, 'the API answers during the flood');
  await Promise.all(flood);
  const statuses = new Map<number, number>();
  for (const res of await Promise.all(flood)) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  t.same(Object.fromEntries(statuses), { 200: 500 }, 'every readiness call answered 200');
  const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: user.headers });
  t.equal(me.statusCode, 200, 'the API answers after the flood');
});
