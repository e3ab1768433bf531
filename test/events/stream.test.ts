// The change feed as Server-Sent Events over a real connection: events arrive as they commit (id, event, data), resume
// after Last-Event-ID or ?after, never another workspace's; tickets open a stream once and expire; the per-workspace
// stream limit answers 429 past it and frees a slot when a stream closes; bad cursors are refused before streaming.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { openStream, type SseStream } from './sse-client.js';

const { app, logs } = await buildTestApp(t, { EVENT_STREAMS_PER_WORKSPACE: '3' });
const { admin, organizationId } = await setupInstallation(app);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as { port: number };
const origin = `http://127.0.0.1:${port}`;
const api = `/api/v1/organizations/${organizationId}`;
const feed = `${api}/events/`;
const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, headers: Record<string, string> = admin.headers) =>
  app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
const createCompany = async (name: string, orgApi = api) => json(await call('POST', `${orgApi}/companies/`, { name })) as { id: string };
const other = json(await call('POST', '/api/v1/organizations/', { name: 'Other', owner_email: admin.email })) as { id: string };

/** Streams opened by a test, closed at its end (each holds one of the workspace's slots). */
const opened: SseStream[] = [];
async function stream(path: string, headers: Record<string, string> = admin.headers) {
  const s = await openStream(origin, path, headers);
  opened.push(s);
  return s;
}
t.afterEach(async () => {
  for (const s of opened.splice(0)) s.close();
  // The server frees the slots as it sees the connections close.
  const deadline = Date.now() + 5_000;
  while ((await app.db.eventStream.count()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
});

t.test('a stream receives each event as it commits, with id, event and data; never another workspace', async (t) => {
  const s = await stream(feed);
  t.equal(s.status, 200);
  t.match(s.headers['content-type'], /^text\/event-stream/);
  t.equal(s.headers['cache-control'], 'no-store');
  await createCompany('Elsewhere Co', `/api/v1/organizations/${other.id}`);
  const company = await createCompany('Streamed Co');
  await call('PATCH', `${api}/companies/${company.id}/`, { name: 'Streamed Co 2' });
  const [created, updated] = await s.waitFor(2);
  t.match(created, {
    event: 'company.created',
    data: { event: 'company.created', organization_id: organizationId, data: { name: 'Streamed Co' } },
  });
  t.match(updated, { event: 'company.updated', data: { data: { name: 'Streamed Co 2' } } });
  t.equal(created?.data.id, created?.id, 'data carries the id too');
  const listed = json(await call('GET', `${feed}?limit=200`)) as { id: string }[];
  t.same(
    s.events.map((e) => e.id),
    listed.slice(-2).map((e) => e.id),
    'the same ids as the list',
  );
  await new Promise((r) => setTimeout(r, 300));
  t.equal(s.events.length, 2, 'each once; the other workspace never');
});

t.test('resuming after Last-Event-ID or ?after hands out every later event once', async (t) => {
  const before = json(await call('GET', `${feed}?limit=200`)) as { id: string }[];
  const last = before.at(-1)?.id as string;
  await createCompany('Missed 1');
  await createCompany('Missed 2');
  const byHeader = await stream(feed, { ...admin.headers, 'last-event-id': last });
  const byQuery = await stream(`${feed}?after=${last}`);
  for (const s of [byHeader, byQuery]) {
    const got = await s.waitFor(2);
    t.same(
      got.map((e) => (e.data.data as { name: string }).name),
      ['Missed 1', 'Missed 2'],
    );
  }
  await createCompany('Live');
  t.same((await byHeader.waitFor(3)).map((e) => (e.data.data as { name: string }).name).at(-1), 'Live');
});

t.test('bad cursors are refused before streaming: 400 malformed, 410 cursor_expired', async (t) => {
  const malformed = await stream(feed, { ...admin.headers, 'last-event-id': 'garbage' });
  t.equal(malformed.status, 400);
  t.match(JSON.parse(malformed.body), { code: 'validation_failed', errors: { 'Last-Event-ID': [String] } });
  const unknown = await stream(`${feed}?after=00000000-0000-4000-8000-000000000000`);
  t.equal(unknown.status, 410);
  t.equal(JSON.parse(unknown.body).code, 'cursor_expired');
  t.equal(await app.db.eventStream.count(), 0, 'no slot taken');
});

t.test('a ticket opens one stream without Authorization, once, within its minute; never logged', async (t) => {
  const created = await call('POST', `${feed}tickets/`);
  t.equal(created.statusCode, 201);
  const { ticket, expires_at } = json(created) as { ticket: string; expires_at: string };
  t.ok(Math.abs(Date.parse(expires_at) - Date.now() - 60_000) < 5_000, 'valid 60 seconds');
  const viaTicket = await stream(`${feed}?ticket=${encodeURIComponent(ticket)}`, {});
  t.equal(viaTicket.status, 200);
  await createCompany('Ticketed Co');
  const [ticketed] = await viaTicket.waitFor(1);
  t.equal((ticketed?.data.data as { name: string } | undefined)?.name, 'Ticketed Co');

  const again = await stream(`${feed}?ticket=${encodeURIComponent(ticket)}`, {});
  t.equal(again.status, 401, 'single use');
  t.equal(JSON.parse(again.body).code, 'ticket_not_valid');
  t.equal((await stream(`${feed}?ticket=crm_stream_unknown`, {})).status, 401);

  const late = json(await call('POST', `${feed}tickets/`)) as { ticket: string };
  await app.db.$executeRaw`UPDATE event_stream_tickets SET expires_at = now() - interval '1 second'`;
  t.equal((await stream(`${feed}?ticket=${encodeURIComponent(late.ticket)}`, {})).status, 401, 'expired');

  const foreign = json(await call('POST', `/api/v1/organizations/${other.id}/events/tickets/`)) as { ticket: string };
  t.equal((await stream(`${feed}?ticket=${encodeURIComponent(foreign.ticket)}`, {})).status, 401, "another workspace's ticket");

  const stored = await app.db.eventStreamTicket.findMany();
  t.notOk(
    stored.some((row) => row.tokenHash === ticket),
    'only its hash is stored',
  );
  t.notOk(
    logs.some((line) => line.includes(ticket) || line.includes(late.ticket)),
    'no ticket in the log',
  );
});

t.test('past EVENT_STREAMS_PER_WORKSPACE: 429; a closed stream frees its slot', async (t) => {
  const three = [await stream(feed), await stream(feed), await stream(feed)];
  t.same(
    three.map((s) => s.status),
    [200, 200, 200],
  );
  const fourth = await stream(feed);
  t.equal(fourth.status, 429);
  t.equal(JSON.parse(fourth.body).code, 'event_streams_exhausted');
  const otherStream = await stream(`/api/v1/organizations/${other.id}/events/`);
  t.equal(otherStream.status, 200, 'the limit is per workspace');
  three[0]?.close();
  const deadline = Date.now() + 5_000;
  while ((await app.db.eventStream.count({ where: { organizationId } })) > 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal((await stream(feed)).status, 200, 'a slot again');
});

t.test('a comment line keeps an idle stream alive', async (t) => {
  const s = await stream(feed);
  const deadline = Date.now() + 15_000;
  while (!s.comments.includes('keep-alive') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.ok(s.comments.includes('keep-alive'), 'within 15 seconds');
});
