// CRM events: company/contact writes queue runs of the organization's active rules in the same transaction (no job
// per run), and the run dispatcher claims and executes them (retries with backoff, several workers safe, a dead
// worker's run taken over after its lease) without ever failing or slowing the write.
import t from 'tap';
import { dispatchEvent } from '../../src/modules/automations/dispatch.js';
import { runDueRuns } from '../../src/modules/automations/run-queue.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { backoffMs, makeRunDue, runDepsOf } from '../helpers/jobs.js';
import { closedPortUrl, startWebhookTarget, type WebhookTarget } from './webhook-target.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId: acmeId } = await setupInstallation(app);

const api = (orgId: string) => `/api/v1/organizations/${orgId}`;
const inject = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: admin.headers, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return json(res);
};
const newOrganization = async (name: string): Promise<string> =>
  (await inject('POST', '/api/v1/organizations/', { name, owner_email: admin.email })).id;
const hookRule = (orgId: string, trigger: string, url: string, is_active = true) =>
  inject('POST', `${api(orgId)}/automations/`, {
    name: `${trigger} hook`,
    trigger,
    action_type: 'webhook',
    action_config: { url },
    is_active,
  });
const runsOf = (orgId: string, automationId?: string) =>
  inject('GET', `${api(orgId)}/automations/${automationId ? `${automationId}/` : ''}runs/`);

/** Polls the runs endpoint until `done` holds for the runs (new runs wake the dispatcher; retries are found within 200 ms). */
async function waitForRuns(orgId: string, done: (runs: any[]) => boolean, automationId?: string, timeoutMs = 10_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await runsOf(orgId, automationId);
    if (done(runs)) return runs;
    if (Date.now() > deadline) throw new Error(`runs did not reach the expected state: ${JSON.stringify(runs)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const bodies = (target: WebhookTarget) => target.requests.map((r) => JSON.parse(r.body));

t.test('each CRM write queues one run per active rule of its trigger; the worker executes them', async (t) => {
  const target = await startWebhookTarget(t);
  const triggers = ['company.created', 'company.updated', 'contact.created', 'contact.updated'];
  const rules = new Map<string, string>();
  for (const trigger of triggers) rules.set(trigger, (await hookRule(acmeId, trigger, `${target.url}?t=${trigger}`)).id);
  const inactive = await hookRule(acmeId, 'company.created', target.url, false);
  const otherOrg = await newOrganization('Other');
  const foreign = await hookRule(otherOrg, 'company.created', target.url);

  const company = await inject('POST', `${api(acmeId)}/companies/`, { name: 'Initech' });
  const updated = await inject('PATCH', `${api(acmeId)}/companies/${company.id}/`, { lifecycle_stage: 'customer' });
  const contact = await inject('POST', `${api(acmeId)}/contacts/`, { company_id: company.id, first_name: 'Peter', last_name: 'Gibbons' });
  const contactUpdated = await inject('PATCH', `${api(acmeId)}/contacts/${contact.id}/`, { job_title: 'Engineer' });

  const runs = await waitForRuns(acmeId, (rs) => rs.length === 4 && rs.every((r) => r.status === 'success'));
  t.same(runs.map((r) => r.trigger).sort(), [...triggers].sort(), 'one run per event');
  for (const run of runs) {
    t.equal(run.automation_id, rules.get(run.trigger), `${run.trigger}: the rule of that trigger`);
    t.match(run, { error_message: null, attempts: 1 });
    t.ok(run.finished_at);
    t.notOk('test' in run.payload, 'not a test run');
  }
  const expectedData: Record<string, unknown> = {
    'company.created': company,
    'company.updated': updated,
    'contact.created': contact,
    'contact.updated': contactUpdated,
  };
  for (const run of runs) t.same(run.payload.data, expectedData[run.trigger], `${run.trigger}: data is the record after the change`);

  await target.waitForRequests(4);
  t.equal(target.requests.length, 4, 'one delivery per run');
  for (const request of target.requests) {
    const body = JSON.parse(request.body);
    t.equal(request.path, `/hook?t=${body.event}`, `${body.event} went to its rule's URL`);
    t.equal(body.organization_id, acmeId);
    t.equal(request.headers['x-webhook-delivery'], runs.find((r) => r.trigger === body.event)!.event_id, "the event's id");
  }
  t.same(await runsOf(acmeId, inactive.id), [], 'an inactive rule gets no run');
  t.same(await runsOf(otherOrg, foreign.id), [], "another organization's rule gets no run");
  t.same(
    (await runsOf(acmeId, rules.get('company.created'))).map((r: { id: string }) => r.id),
    runs.filter((r) => r.trigger === 'company.created').map((r) => r.id),
    "the rule's own run list",
  );
});

t.test("runs are queued in the caller's transaction: a rolled-back write queues nothing", async (t) => {
  const orgId = await newOrganization('Rollback');
  const rule = await hookRule(orgId, 'company.created', await closedPortUrl());
  await t.rejects(
    app.db.$transaction(async (tx) => {
      await dispatchEvent(tx, { organizationId: orgId, name: 'company.created', data: { id: 'x' } });
      throw new Error('the CRM write failed');
    }),
  );
  t.equal(await app.db.automationRun.count({ where: { automationId: rule.id } }), 0, 'rolled back with the write');

  await app.db.$transaction((tx) => dispatchEvent(tx, { organizationId: orgId, name: 'company.created', data: { id: 'y' } }));
  const [run] = await app.db.automationRun.findMany({ where: { automationId: rule.id } });
  t.ok(run, 'committed with the write');
  t.match(run!.payload, { event: 'company.created', organization_id: orgId, data: { id: 'y' } });
  const { rows: jobs } = await app.pg.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key LIKE '%' || $1 OR payload::text LIKE '%' || $1 || '%'`,
    [run!.id],
  );
  t.equal(jobs[0]!.n, 0, 'no job queue entry: the run itself is what the dispatcher claims');
  t.equal(await app.db.automationRun.count({ where: { organizationId: orgId, trigger: 'company_updated' } }), 0);
});

t.test('a failing webhook never fails or slows the CRM write; failures are recorded', async (t) => {
  const orgId = await newOrganization('Failing');
  const target = await startWebhookTarget(t);
  const silent = await startWebhookTarget(t);
  target.respondWith.push(400);
  silent.respondWith.push(0);
  const rejecting = await hookRule(orgId, 'company.created', target.url);
  const refused = await hookRule(orgId, 'company.created', await closedPortUrl());
  const hanging = await hookRule(orgId, 'company.created', silent.url);

  const res = await app.inject({ method: 'POST', url: `${api(orgId)}/companies/`, headers: admin.headers, payload: { name: 'Hooli' } });
  t.equal(res.statusCode, 201, 'the company is created');
  await silent.waitForRequests(1);
  t.same(
    (await runsOf(orgId, hanging.id)).map((r: { status: string }) => r.status),
    ['running'],
    'answered while the webhook still hangs (it gets 5 s)',
  );

  const [failed] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'failed', rejecting.id);
  t.match(failed, { status: 'failed', error_message: 'Webhook answered HTTP 400.', attempts: 1 });
  t.ok(failed.finished_at, 'a 4xx is final');

  const [retrying] = await waitForRuns(orgId, (rs) => rs[0]?.attempts === 1 && rs[0]?.status === 'queued', refused.id);
  t.match(retrying, { error_message: 'Webhook connection refused.', finished_at: null }, 'a refused connection is retried later');
  // Once the failed attempt is recorded the run is due again exp(n) s after that attempt (graphile-worker's backoff,
  // kept), measured from the attempt's start, so a slow machine cannot make it look sooner.
  const waiting = await until('the retry to be scheduled', async () => {
    const { rows } = await app.pg.query<{ attempts: number; delay: number }>(
      `SELECT r.attempts, (extract(epoch FROM r.run_at - r.started_at) * 1000)::int AS delay
       FROM automation_runs r WHERE r.id = $1 AND r.status = 'queued'`,
      [retrying.id],
    );
    return rows[0];
  });
  const expected = backoffMs(waiting.attempts);
  t.ok(
    waiting.delay >= expected - 50 && waiting.delay < expected + 3_000,
    `attempt ${waiting.attempts + 1} due ${Math.round(expected)} ms after the failed one (${waiting.delay} ms)`,
  );

  const [timedOut] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued', hanging.id);
  t.match(timedOut, { error_message: 'Webhook timed out after 5 s.', attempts: 1 }, 'a timeout is retried later');
  t.equal(json(await app.inject({ method: 'GET', url: `${api(orgId)}/companies/`, headers: admin.headers })).length, 1);
});

t.test('transient failures are retried with backoff, up to three attempts', async (t) => {
  const orgId = await newOrganization('Retries');
  const target = await startWebhookTarget(t);
  const rule = await hookRule(orgId, 'company.created', target.url);
  // Skip the backoff wait: make the scheduled retry due now.
  const dueNow = (run: { id: string }) => makeRunDue(app.pg, run.id);

  target.respondWith.push(503);
  await inject('POST', `${api(orgId)}/companies/`, { name: 'Pied Piper' });
  await dueNow((await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued' && rs[0]?.attempts === 1, rule.id))[0]);
  const [recovered] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'success', rule.id);
  t.match(recovered, { attempts: 2, error_message: null });
  t.equal(target.requests.length, 2);
  t.equal(target.requests[0]!.headers['x-webhook-delivery'], target.requests[1]!.headers['x-webhook-delivery'], 'same delivery id');
  t.equal(target.requests[0]!.headers['webhook-id'], target.requests[1]!.headers['webhook-id'], 'same Standard Webhooks id');
  t.equal(target.requests[0]!.headers['webhook-id'], target.requests[0]!.headers['x-webhook-delivery']);

  target.respondWith.push(503, 502, 500);
  await inject('POST', `${api(orgId)}/companies/`, { name: 'Raviga' });
  for (const attempts of [1, 2]) {
    await dueNow((await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued' && rs[0]?.attempts === attempts, rule.id))[0]);
  }
  const [gaveUp] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'failed', rule.id);
  t.match(gaveUp, { attempts: 3, error_message: 'Webhook answered HTTP 500.' });
  t.ok(gaveUp.finished_at);
  t.equal(target.requests.length, 5, 'no fourth attempt');
  // Ended: out of the claim's reach, whatever its due time says.
  await app.pg.query(`UPDATE automation_runs SET run_at = now() WHERE id = $1`, [gaveUp.id]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal(target.requests.length, 5, 'and no fourth attempt followed');
});

t.test("several workers at once never execute a run twice; a dead worker's run is taken over after its lease", async (t) => {
  const orgId = await newOrganization('Busy');
  const target = await startWebhookTarget(t);
  const rule = await hookRule(orgId, 'contact.created', target.url);
  await app.db.$transaction(async (tx) => {
    for (let i = 0; i < 25; i += 1) await dispatchEvent(tx, { organizationId: orgId, name: 'contact.created', data: { i } });
    // Held back, then released to all the workers at the same moment.
    await tx.$executeRaw`UPDATE automation_runs SET run_at = now() + interval '1 minute' WHERE automation_id = ${rule.id}::uuid`;
  });
  await app.pg.query(`UPDATE automation_runs SET run_at = now() WHERE automation_id = $1`, [rule.id]);
  // Three more workers beside the app's own dispatcher, all claiming at once.
  const ran = await Promise.all([1, 2, 3].map(() => runDueRuns(app.pg, runDepsOf(app))));
  t.comment(`runs executed by the extra workers: ${ran.join(', ')}`);

  const runs = await waitForRuns(orgId, (rs) => rs.length === 25 && rs.every((r) => r.status === 'success'), rule.id);
  t.ok(
    runs.every((r) => r.attempts === 1),
    'each executed once',
  );
  const deliveries = target.requests.map((r) => r.headers['x-webhook-delivery']);
  t.equal(deliveries.length, 25, 'exactly one request per run');
  t.equal(new Set(deliveries).size, 25);
  t.same(
    bodies(target)
      .map((b) => b.data.i)
      .sort((a, b) => a - b),
    Array.from({ length: 25 }, (_, i) => i),
  );

  // A worker that died mid-run (SIGKILL): its run shows `running` with the attempt counted, and its lease (run_at) is
  // in the future. That state is made here by hand, as the claim would leave it.
  const [lost] = await app.db.$transaction(async (tx) => {
    await dispatchEvent(tx, { organizationId: orgId, name: 'contact.created', data: { i: 'lost' } });
    return tx.$queryRaw<Array<{ id: string; event_id: string }>>`
      UPDATE automation_runs SET status = 'running', attempts = 1, started_at = now(), run_at = now() + interval '1 hour'
      WHERE automation_id = ${rule.id}::uuid AND payload->'data'->>'i' = 'lost' RETURNING id, event_id`;
  });
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.match(
    (await runsOf(orgId, rule.id)).find((r: { id: string }) => r.id === lost!.id),
    { status: 'running', attempts: 1 },
    'a leased run is left to its worker',
  );
  t.equal(target.requests.length, 25, 'nothing sent meanwhile');
  // The lease runs out (its worker renews it no more), as after JOB_RECOVERY_SECONDS.
  await app.pg.query(`UPDATE automation_runs SET run_at = now() WHERE id = $1`, [lost!.id]);
  const [takenOver] = await waitForRuns(orgId, (rs) => rs.some((r) => r.id === lost!.id && r.status !== 'running'), rule.id).then((rs) =>
    rs.filter((r) => r.id === lost!.id),
  );
  t.match(takenOver, { status: 'success', attempts: 2 });
  t.equal(target.requests.length, 26, 'delivered once more');
  t.equal(target.requests[25]!.headers['x-webhook-delivery'], lost!.event_id, 'with the delivery id of the interrupted attempt');
});
