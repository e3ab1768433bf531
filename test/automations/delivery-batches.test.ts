// Deliveries in batches: a burst of events is delivered exactly once each (webhook-id = the event's id, runs success)
// over kept connections, and the runs of one batch are started and recorded by single statements.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { coalesce } from '../../src/jobs/coalesce.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const api = `/api/v1/organizations/${organizationId}`;

t.test('a burst is delivered once per event, signed by its event id, over fewer connections than deliveries', async (t) => {
  const received: Array<{ id: string; webhookId: string }> = [];
  let connections = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ id: JSON.parse(Buffer.concat(chunks).toString()).data.id, webhookId: String(request.headers['webhook-id']) });
      response.writeHead(200).end('ok');
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const rule = await app.inject({
    method: 'POST',
    url: `${api}/automations/`,
    headers: admin.headers,
    payload: { name: 'burst', trigger: 'company.created', action_type: 'webhook', action_config: { url } },
  });
  t.equal(rule.statusCode, 201);

  const COUNT = 40;
  const created = await Promise.all(
    Array.from({ length: COUNT }, (_, i) =>
      app.inject({ method: 'POST', url: `${api}/companies/`, headers: admin.headers, payload: { name: `Burst ${i}` } }).then(json),
    ),
  );
  const deadline = Date.now() + 15_000;
  while (received.length < COUNT && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(received.length, COUNT, 'each event delivered once');
  t.same(new Set(received.map((r) => r.id)), new Set(created.map((c) => c.id)));
  const runs = await app.db.automationRun.findMany({ where: { automationId: json(rule).id } });
  t.equal(runs.length, COUNT);
  t.ok(
    runs.every((run) => run.status === 'success' && run.attempts === 1 && run.finishedAt !== null),
    'every run success after one attempt',
  );
  const eventOf = new Map(runs.map((run) => [(run.payload as { data: { id: string } }).data.id, run.eventId]));
  t.ok(
    received.every((r) => eventOf.get(r.id) === r.webhookId),
    'webhook-id is the event id',
  );
  t.ok(connections < COUNT, `kept connections: ${connections} for ${COUNT} deliveries`);
});

t.test('coalesce: calls of one turn go into one batch, answered in order; a failing batch rejects each caller', async (t) => {
  const batches: number[][] = [];
  const double = coalesce(async (items: number[]) => {
    batches.push(items);
    return items.map((n) => n * 2);
  }, 3);
  t.same(await Promise.all([1, 2, 3, 4, 5].map(double)), [2, 4, 6, 8, 10]);
  t.same(batches, [
    [1, 2, 3],
    [4, 5],
  ]);
  t.same(await double(7), 14, 'a later call gets a batch of its own');
  const failing = coalesce(async (_items: number[]) => {
    throw new Error('database gone');
  });
  const results = await Promise.allSettled([failing(1), failing(2)]);
  t.same(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
});
