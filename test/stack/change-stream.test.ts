// A change stream through the whole stack (`make stack`: HAProxy, two instances, PgBouncer in transaction mode, the
// direct URL for LISTEN): events written through either instance arrive, and across a rolling restart of both
// instances the client, reconnecting with Last-Event-ID, receives every event exactly once.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startSignedInStack } from '../helpers/stack.js';
import { openStream, type SseEvent } from '../events/sse-client.js';

// Several processes start here (databases, PgBouncer, HAProxy, instances): room for a slow, loaded machine.
t.setTimeout(600_000);

const { stack, api, access, organizationId } = await startSignedInStack(t, 'stream-stack-test');
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
