// Request budgets with REDIS_URL: counted in Redis, shared by every server process, failing open while Redis is away.
import t from 'tap';
import { Redis } from 'ioredis';
import { buildTestApp } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { startTestRedis } from '../helpers/redis.js';

const companies = (organizationId: string) => `/api/v1/organizations/${organizationId}/companies/`;

t.test('with REDIS_URL the budgets are counted in Redis, where every server process shares them', async (t) => {
  const redisServer = await startTestRedis(t);
  if (!redisServer) return;
  const { app } = await buildTestApp(t, { REDIS_URL: redisServer.url, RATE_LIMIT_WORKSPACE_PER_MINUTE: '3' });
  const { admin: owner, organizationId } = await setupInstallation(app);
  const colleague = await createUser(app, { membership: { organizationId, role: 'member' } });
  const get = (by = owner) => app.inject({ method: 'GET', url: companies(organizationId), headers: by.headers });
  for (let n = 0; n < 3; n += 1) t.equal((await get()).statusCode, 200);
  const refused = await get();
  t.equal(refused.statusCode, 429);
  t.ok(Number(refused.headers['retry-after']) >= 1);
  t.match(refused.headers.ratelimit, /^"workspace";r=0;/);
  const client = new Redis(redisServer.url);
  const keys = await client.keys('crm-rate-limit:*');
  t.ok(
    keys.some((name) => name.includes(`budget|workspace|${organizationId}`)),
    `keys: ${keys.join(', ')}`,
  );
  // The count is Redis's, not the process's: emptied there, the workspace is served again (to a colleague: the refused
  // caller itself this process refuses at once until the window it exhausted ends).
  await client.flushall();
  await client.quit();
  const again = await get(colleague);
  t.equal(again.statusCode, 200, 'served once Redis forgot the count');
  t.match(again.headers.ratelimit, /^"workspace";r=2;/);
  t.equal((await get()).statusCode, 429, 'the refused caller until its window ends');
  // Redis down: the budget fails open (served uncounted), unlike the sign-in guards.
  await redisServer.stop();
  t.equal((await get(colleague)).statusCode, 200, 'served while the counters are unreachable');
  // Back before the app closes: its Redis client quits cleanly.
  await redisServer.start();
});
