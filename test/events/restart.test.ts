// Two instances on one database: a stream on one sees events written through the other, the stream limit holds across
// both, and a stream whose instance restarts resumes with Last-Event-ID on the new one with every missed event once.
import t from 'tap';
import { buildApp, type App } from '../../src/app.js';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { openStream, type SseStream } from './sse-client.js';

const { app: b } = await buildTestApp(t, { EVENT_STREAMS_PER_WORKSPACE: '2' });
const { admin, organizationId } = await setupInstallation(b);
const api = `/api/v1/organizations/${organizationId}`;
const feed = `${api}/events/`;
const createCompany = async (name: string) => {
  const res = await b.inject({ method: 'POST', url: `${api}/companies/`, headers: admin.headers, payload: { name } });
  if (res.statusCode !== 201) throw new Error(res.body);
};
const nameOf = (event: { data: Record<string, unknown> }) => (event.data.data as { name: string }).name;

/** Another instance of the same installation (same config, same database), listening on a port of its own. */
async function startInstance(): Promise<{ app: App; origin: string }> {
  const app = await buildApp(b.config, { logStream: { write: () => {} } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { app, origin: `http://127.0.0.1:${port}` };
}
const streams: SseStream[] = [];
t.teardown(() => {
  for (const s of streams) s.close();
});

t.test('events written through one instance reach a stream on another; the limit counts both', async (t) => {
  const a = await startInstance();
  t.teardown(() => a.app.close());
  await b.listen({ port: 0, host: '127.0.0.1' });
  const { port } = b.server.address() as { port: number };
  const onA = await openStream(a.origin, feed, admin.headers);
  const onB = await openStream(`http://127.0.0.1:${port}`, feed, admin.headers);
  streams.push(onA, onB);
  t.same([onA.status, onB.status], [200, 200]);
  const third = await openStream(a.origin, feed, admin.headers);
  t.equal(third.status, 429, 'the second instance sees the first one’s stream');
  await createCompany('Across');
  t.equal(nameOf((await onA.waitFor(1))[0]!), 'Across');
  t.equal(nameOf((await onB.waitFor(1))[0]!), 'Across');
  onA.close();
  onB.close();
  const deadline = Date.now() + 5_000;
  while ((await b.db.eventStream.count()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.equal(await b.db.eventStream.count(), 0, 'slots freed');
});

t.test('a restart of the stream’s instance: the client resumes on the new one with every missed event once', async (t) => {
  const first = await startInstance();
  const before = await openStream(first.origin, feed, admin.headers);
  streams.push(before);
  for (const name of ['R1', 'R2', 'R3']) await createCompany(name);
  const seen = await before.waitFor(3);
  // Written while the instance stops and before it is back.
  const writing = (async () => {
    for (const name of ['M1', 'M2', 'M3', 'M4']) await createCompany(name);
  })();
  await first.app.close();
  await before.ended;
  t.pass('the stopping instance ended its stream');
  await writing;
  for (const name of ['M5', 'M6']) await createCompany(name);
  const restarted = await startInstance();
  t.teardown(() => restarted.app.close());
  const lastId = before.events.at(-1)?.id as string;
  const resumed = await openStream(restarted.origin, feed, { ...admin.headers, 'last-event-id': lastId });
  streams.push(resumed);
  t.equal(resumed.status, 200);
  await createCompany('After');
  // What the old stream got before it ended (at least R1-R3), then the rest on the new one.
  await resumed.waitFor(10 - before.events.length);
  await new Promise((r) => setTimeout(r, 500));
  const all = [...before.events, ...resumed.events];
  t.ok(seen.length === 3 && before.events.length >= 3);
  t.same(all.map(nameOf), ['R1', 'R2', 'R3', 'M1', 'M2', 'M3', 'M4', 'M5', 'M6', 'After'], 'every event, in order');
  t.equal(new Set(all.map((e) => e.id)).size, all.length, 'each once');
});
