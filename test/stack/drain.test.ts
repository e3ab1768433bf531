// SIGTERM behind a load balancer: for SHUTDOWN_DELAY_MS (half a second at least) the process keeps serving but fails
// readiness and closes keep-alive connections by its answers, then stops accepting and exits 0; a repeated SIGTERM
// does not cut the drain short.
import { once } from 'node:events';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.js';
import { killGroup, startServer } from '../helpers/server.js';

const database = await createTestDatabase();
t.teardown(() => database.drop());

/** The server on this file's database, with `env` besides. */
const start = (env: Record<string, string>) =>
  startServer({ DATABASE_URL: database.url, JWT_SECRET: 'drain-test-jwt-secret-0123456789-abcdefgh', ...env });

t.test('readiness fails first, then the process drains and exits 0', async (t) => {
  const server = await start({ SHUTDOWN_DELAY_MS: '5000' });
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

t.test('without a delay, a kept-alive connection is ended by an answer, not reset under the next request', async (t) => {
  const server = await start({ LOG_LEVEL: 'info' });
  t.teardown(() => killGroup(server));
  const { port } = new URL(server.origin);
  const socket = connect(Number(port), '127.0.0.1');
  t.teardown(() => socket.destroy());
  // A reset socket fails the assertions below, not the test process.
  socket.on('error', () => {});
  let received = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (received += chunk));
  const ended = once(socket, 'close');
  const answer = async (count: number) => {
    const deadline = Date.now() + 10_000;
    while ((received.match(/\r\n\r\n/g) ?? []).length < count && Date.now() < deadline && !socket.destroyed) await sleep(5);
    return received;
  };
  socket.write('GET /healthz HTTP/1.1\r\nHost: drain\r\n\r\n');
  t.match(await answer(1), /^HTTP\/1\.1 200 /, 'the connection is kept alive');
  t.notMatch(received, /connection: close/i);
  const exited = once(server.child, 'exit');
  process.kill(-server.child.pid!, 'SIGTERM');
  // The process says when it handles the signal; the kept-alive connection has been idle all along, which is the
  // moment a server that closes idle connections at once would have reset it.
  const signalledAt = Date.now();
  while (!server.output().includes('shutting down') && Date.now() - signalledAt < 5_000) await sleep(2);
  t.match(server.output(), /shutting down: draining/, 'the signal is handled');
  socket.write('GET /healthz HTTP/1.1\r\nHost: drain\r\n\r\n');
  const all = await answer(2);
  const second = all.slice(all.indexOf('HTTP/1.1 ', 1));
  t.match(second, /^HTTP\/1\.1 200 /, 'the request on the idle connection is answered');
  t.match(second, /\r\nconnection: close\r\n/i, 'with Connection: close');
  await ended;
  const [code] = await exited;
  t.equal(code, 0, 'then the process drains and exits 0');
});
