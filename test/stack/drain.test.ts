// SIGTERM behind a load balancer: for SHUTDOWN_DELAY_MS the process keeps serving but fails readiness and closes
// keep-alive connections, then stops accepting and exits 0; a repeated SIGTERM does not cut the drain short.
import { once } from 'node:events';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.js';
import { killGroup, startServer } from '../helpers/server.js';

const database = await createTestDatabase();
t.teardown(() => database.drop());

t.test('readiness fails first, then the process drains and exits 0', async (t) => {
  const server = await startServer({
    DATABASE_URL: database.url,
    JWT_SECRET: 'drain-test-jwt-secret-0123456789-abcdefgh',
    SHUTDOWN_DELAY_MS: '5000',
  });
  t.teardown(() => killGroup(server));
  // A pooled keep-alive connection the draining server has just closed may reset under the next request; a client
  // (like the load balancer) opens another, on which the server must answer.
  const get = async (path: string): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetch(`${server.origin}${path}`);
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  };
  t.equal((await fetch(`${server.origin}/readyz`)).status, 200);
  const exited = once(server.child, 'exit');
  const signalledAt = Date.now();
  process.kill(-server.child.pid!, 'SIGTERM');
  // The signal is handled within moments; poll rather than guess how long a loaded machine takes.
  let ready = await get('/readyz');
  while (ready.status === 200 && Date.now() - signalledAt < 4_000) ready = await get('/readyz');
  t.equal(ready.status, 503, 'not ready while draining');
  t.equal(((await ready.json()) as { code: string }).code, 'shutting_down');
  t.equal(ready.headers.get('connection'), 'close', 'keep-alive connections are closed');
  // A second SIGTERM to the group (a supervisor's retry, npm forwarding the one it got) must not cut the drain short.
  process.kill(-server.child.pid!, 'SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const health = await get('/healthz');
  t.equal(health.status, 200, 'still serving requests meanwhile');
  const [code] = await exited;
  t.equal(code, 0, 'exits 0');
  t.ok(Date.now() - signalledAt >= 4_900, 'after the delay');
  await t.rejects(fetch(`${server.origin}/healthz`), 'no longer listening');
});
