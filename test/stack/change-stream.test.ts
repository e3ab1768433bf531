// A change stream through the whole stack (`make stack`: HAProxy, two instances, PgBouncer in transaction mode, the
// direct URL for LISTEN): events written through either instance arrive, and across a rolling restart of both
// instances the client, reconnecting with Last-Event-ID, receives every event exactly once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startStack } from '../../scripts/stack/stack.js';
import { openStream, type SseEvent } from '../events/sse-client.js';

// Several processes start here (databases, PgBouncer, HAProxy, instances): room for a slow, loaded machine.
t.setTimeout(600_000);

const dir = await mkdtemp(path.join(tmpdir(), 'crm-stream-stack-test-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const stack = await startStack({ dir, instances: 2, env: { RATE_LIMIT_WORKSPACE_PER_MINUTE: '1000000000' } });
t.teardown(stack.stop);

const api = async (method: string, url: string, body?: unknown, access?: string) => {
  const res = await fetch(`${stack.origin}/api/v1${url}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(access ? { authorization: `Bearer ${access}` } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json().catch(() => undefined) };
};
const setup = await api('POST', '/setup/', {
  setup_token: stack.setupToken,
  username: 'admin',
  email: 'admin@example.test',
  password: 'a long stack password',
  organization_name: 'Acme',
  organization_slug: 'acme',
});
if (setup.status !== 201) throw new Error(`setup failed: ${JSON.stringify(setup)}`);
const { access } = (await api('POST', '/auth/token/', { username: 'admin', password: 'a long stack password' })).body as { access: string };
const organizationId = ((await api('GET', '/auth/me/', undefined, access)).body as { organizations: Array<{ id: string }> })
  .organizations[0]?.id;
const feed = `/api/v1/organizations/${organizationId}/events/`;

/** A client as EventSource behaves: on every end or refusal it reconnects after a moment, with Last-Event-ID. */
function followingClient() {
  const received: SseEvent[] = [];
  let running = true;
  let connections = 0;
  const done = (async () => {
    while (running) {
      const lastId = received.at(-1)?.id;
      const headers: Record<string, string> = { authorization: `Bearer ${access}`, ...(lastId ? { 'last-event-id': lastId } : {}) };
      try {
        const stream = await openStream(stack.origin, feed, headers);
        if (stream.status === 200) {
          connections += 1;
          const copy = setInterval(() => received.push(...stream.events.splice(0)), 10);
          while (running && !(await Promise.race([stream.ended.then(() => true), sleep(100).then(() => false)]))) {}
          clearInterval(copy);
          received.push(...stream.events.splice(0));
          stream.close();
        }
      } catch {
        // The load balancer had no instance for a moment: retry.
      }
      await sleep(200);
    }
  })();
  const stop = async () => {
    running = false;
    await done;
  };
  return { received, connections: () => connections, stop };
}

t.test('a stream through HAProxy survives a rolling restart of both instances: every event once, in order', async (t) => {
  const client = followingClient();
  await sleep(1_000);
  let written = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      const res = await api('POST', `/organizations/${organizationId}/companies/`, { name: `S${written}` }, access);
      if (res.status === 201) written += 1;
      await sleep(50);
    }
  })();
  for (const instance of stack.instances) {
    t.equal(await instance.stop(), 0, `${instance.name} drained and exited 0`);
    await instance.start();
    await stack.waitUntilServing(instance.name);
  }
  writing = false;
  await writer;
  const deadline = Date.now() + 20_000;
  while (client.received.length < written && Date.now() < deadline) await sleep(100);
  await sleep(500);
  await client.stop();
  const names = client.received.map((e) => (e.data.data as { name: string }).name);
  t.ok(written > 20, `${written} events written`);
  t.same(
    names,
    Array.from({ length: written }, (_, i) => `S${i}`),
    'every event once, in order',
  );
  t.ok(client.connections() >= 2, `the client reconnected (${client.connections()} connections)`);
});
