// The change feed as a list: every triggered event logged (with or without a rule), oldest first, paged by `after`
// with Link rel=next, 400 for a malformed cursor and 410 cursor_expired for one no longer kept, capabilities and
// workspace isolation, and webhook deliveries carrying the event's id.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { purgeEvents } from '../../src/modules/events/retention.js';
import { startWebhookTarget } from '../automations/webhook-target.js';
import { whenSynced } from '../helpers/sync.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const viewer = await createUser(app, { membership: { organizationId, role: 'viewer' } });
const outsider = await createUser(app);
const api = `/api/v1/organizations/${organizationId}`;
const feed = `${api}/events/`;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (method: Method, url: string, payload?: object, headers: Record<string, string> = admin.headers) =>
  app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
const page = async (url: string, headers = admin.headers) => {
  const res = await call('GET', url, undefined, headers);
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return { items: json(res) as { id: string; event: string; data: Record<string, unknown> }[], link: String(res.headers.link ?? '') };
};
const nextOf = (link: string) => /^<([^>]+)>; rel="next"$/.exec(link)?.[1];

t.test('every event a trigger names is logged, with no rule at all, oldest first, paged by after', async (t) => {
  t.same((await page(feed)).items, [], 'nothing yet');
  const company = json(await call('POST', `${api}/companies/`, { name: 'Feed Co' }));
  await call('PATCH', `${api}/companies/${company.id}/`, { name: 'Feed Co 2' });
  const contact = json(await call('POST', `${api}/contacts/`, { company_id: company.id, first_name: 'Ada', last_name: 'Feed' }));
  await call('DELETE', `${api}/contacts/${contact.id}/`);
  const deal = json(await call('POST', `${api}/deals/`, { company_id: company.id, title: 'Deal' }));
  await call('PATCH', `${api}/deals/${deal.id}/`, { stage: 'qualified' });
  const task = json(await call('POST', `${api}/tasks/`, { company_id: company.id, title: 'Call' }));
  await call('PATCH', `${api}/tasks/${task.id}/`, { workflow_status: 'completed' });

  // The feed hands an event out once no older transaction is open in the cluster, which other test files share.
  const all = (
    await whenSynced(
      () => page(`${feed}?limit=200`),
      (answer) => answer.items.length >= 6,
    )
  ).items;
  t.same(
    all.map((e) => e.event),
    ['company.created', 'company.updated', 'contact.created', 'contact.deleted', 'deal.stage_changed', 'task.completed'],
  );
  t.match(all[1], { organization_id: organizationId, data: { id: company.id, name: 'Feed Co 2' } });
  t.match(all[3], { data: { id: contact.id, first_name: 'Ada' } }, 'a deletion carries the record as it was');
  t.equal(all[5]?.data.id, task.id);

  const first = await page(`${feed}?limit=4`);
  t.same(first.items, all.slice(0, 4));
  const next = nextOf(first.link);
  t.ok(next, 'Link rel=next');
  t.match(next, `after=${all[3]?.id}`);
  const second = await page(next as string);
  t.same(second.items, all.slice(4));
  const caughtUp = await page(nextOf(second.link) as string);
  t.same(caughtUp.items, [], 'caught up: an empty page that still links on');
  t.match(caughtUp.link, `after=${all[5]?.id}`, 'the link stays at the last event');
  await call('POST', `${api}/companies/`, { name: 'Later Co' });
  t.same(
    (
      await whenSynced(
        () => page(nextOf(caughtUp.link) as string),
        (answer) => answer.items.length > 0,
      )
    ).items.map((e) => e.event),
    ['company.created'],
    'polling the link finds the next',
  );
});

t.test('a cursor: malformed 400, unknown or no longer kept 410 cursor_expired', async (t) => {
  const bad = await call('GET', `${feed}?after=not-an-id`);
  t.equal(bad.statusCode, 400);
  t.equal(bad.headers['content-type'], 'application/problem+json; charset=utf-8');
  const unknown = await call('GET', `${feed}?after=00000000-0000-4000-8000-000000000000`);
  t.equal(unknown.statusCode, 410);
  t.equal(json(unknown).code, 'cursor_expired');

  const [oldest] = (await page(feed)).items;
  t.equal((await call('GET', `${feed}?after=${oldest?.id}`)).statusCode, 200);
  // Eight days old: past the 7 days kept, and the hourly job removes it.
  await app.db.$executeRaw`UPDATE crm_events SET created_at = now() - interval '8 days' WHERE id = ${oldest?.id}::uuid`;
  await purgeEvents(app.db);
  const expired = await call('GET', `${feed}?after=${oldest?.id}`);
  t.equal(expired.statusCode, 410);
  t.equal(json(expired).code, 'cursor_expired');
  t.notOk(
    (await page(feed)).items.some((e) => e.id === oldest?.id),
    'gone from the list',
  );
});

t.test("capabilities and isolation: VIEW_CRM reads (keys too), another workspace's events never appear", async (t) => {
  t.equal((await call('GET', feed, undefined, viewer.headers)).statusCode, 200);
  const key = json(await call('POST', `${api}/api-keys/`, { name: 'reader', capabilities: ['VIEW_CRM'] })).key as string;
  t.equal((await call('GET', feed, undefined, { authorization: `Bearer ${key}` })).statusCode, 200);
  t.equal((await call('GET', feed, undefined, outsider.headers)).statusCode, 404);
  t.equal((await call('GET', feed, undefined, {})).statusCode, 401);

  const other = json(await call('POST', '/api/v1/organizations/', { name: 'Other', owner_email: admin.email }));
  json(await call('POST', `/api/v1/organizations/${other.id}/companies/`, { name: 'Secret Co' }));
  const mine = (await page(`${feed}?limit=200`)).items;
  t.notOk(
    mine.some((e) => e.data.name === 'Secret Co'),
    'not in this feed',
  );
  const theirs = (
    await whenSynced(
      () => page(`/api/v1/organizations/${other.id}/events/`),
      (answer) => answer.items.length > 0,
    )
  ).items;
  t.same(
    theirs.map((e) => e.data.name),
    ['Secret Co'],
  );
  const foreignCursor = await call('GET', `${feed}?after=${theirs[0]?.id}`);
  t.equal(foreignCursor.statusCode, 410, "another workspace's event is no cursor here");
});

t.test("a webhook delivery carries the event's id as webhook-id", async (t) => {
  const target = await startWebhookTarget(t);
  const rule = json(
    await call('POST', `${api}/automations/`, {
      name: 'hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: target.url },
    }),
  );
  await call('POST', `${api}/companies/`, { name: 'Hooked Co' });
  const deadline = Date.now() + 10_000;
  while (target.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const hooked = (answer: Awaited<ReturnType<typeof page>>) => answer.items.find((e) => e.data.name === 'Hooked Co');
  const event = hooked(
    await whenSynced(
      () => page(`${feed}?limit=200`),
      (answer) => hooked(answer) !== undefined,
    ),
  );
  t.ok(event);
  t.equal(target.requests[0]?.headers['webhook-id'], event?.id);
  const [run] = json(await call('GET', `${api}/automations/${rule.id}/runs/`));
  t.equal(run.event_id, event?.id);
  const { id: _id, ...payload } = event as Record<string, unknown>;
  t.same(JSON.parse(target.requests[0]?.body ?? '{}'), payload, 'the feed item is the webhook body with its id');
});
