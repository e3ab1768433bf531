// With REDIS_URL, limits count in Redis; while Redis is down the brute-force guards fail closed (503), the rest fail open.
import t from 'tap';
import { Redis } from 'ioredis';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation, createUser } from '../helpers/fixtures.js';
import { startTestRedis } from '../helpers/redis.js';

const redisServer = await startTestRedis(t);
if (redisServer) {
  const { app } = await buildTestApp(t, { REDIS_URL: redisServer.url, RATE_LIMIT_TOKEN_PER_MINUTE: '3' });
  const { organizationId } = await setupInstallation(app);
  const member = await createUser(app, { membership: { organizationId, role: 'member' } });
  const wrongSignIn = (username: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/token/', payload: { username, password: 'wrong password' } });
  const provision = () =>
    app.inject({
      method: 'POST',
      url: '/api/v1/organizations/',
      headers: member.headers,
      payload: { name: 'X', owner_email: 'o@example.test' },
    });

  t.test('the counters live in Redis', async (t) => {
    for (let i = 0; i < 3; i += 1) t.equal((await wrongSignIn('mallory')).statusCode, 401);
    t.equal((await wrongSignIn('mallory')).statusCode, 429, 'the fourth attempt is limited');
    const client = new Redis(redisServer.url);
    t.teardown(() => client.quit());
    const keys = await client.keys('crm-rate-limit:*');
    t.ok(
      keys.some((key) => key.includes('token|') && key.includes('mallory')),
      `keys: ${keys.join(', ')}`,
    );
  });

  t.test('Redis down: sign-in fails closed with 503 problem+json, provisioning is served uncounted', async (t) => {
    await redisServer.stop();
    const refused = await wrongSignIn('trudy');
    t.equal(refused.statusCode, 503);
    t.match(refused.headers['content-type'], /^application\/problem\+json/);
    t.match(json(refused), { status: 503, code: 'rate_limiter_unavailable' });
    t.equal(refused.headers['retry-after'], '5');
    const served = await provision();
    t.equal(served.statusCode, 403, 'the provisioning preset fails open: the request reaches its handler');
    t.equal(
      (await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: member.headers })).statusCode,
      200,
      'unlimited routes unaffected',
    );
  });

  t.test('Redis back: the same process counts again without a restart', async (t) => {
    await redisServer.start();
    // ioredis reconnects with a backoff of up to two seconds.
    const deadline = Date.now() + 15_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await wrongSignIn('trudy')).statusCode;
      if (status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.equal(status, 401, 'sign-in answers again');
    for (let i = 0; i < 2; i += 1) t.equal((await wrongSignIn('trudy')).statusCode, 401);
    t.equal((await wrongSignIn('trudy')).statusCode, 429, 'and is limited at the count again');
  });
}
