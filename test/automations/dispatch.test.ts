// CRM events: company/contact writes queue runs of the organization's active rules in the same transaction, and
// the worker executes them (retries with backoff, several workers safe) without ever failing or slowing the write.
import t from 'tap';
import { dispatchEvent } from '../../src/modules/automations/dispatch.js';
import { processRunBatch } from '../../src/modules/automations/run-queue.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
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

/** Polls the runs endpoint until `done` holds for the runs (the worker polls every 200 ms in tests). */
async function waitForRuns(orgId: string, done: (runs: any[]) => boolean, automationId?: string, timeoutMs = 10_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await runsOf(orgId, automationId);
    if (done(runs)) return runs;
    if (Date.now() > deadline) throw new Error(`runs did not reach the expected state: ${JSON.stringify(runs)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
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
    t.equal(request.headers['x-webhook-delivery'], runs.find((r) => r.trigger === body.event)!.id);
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
  const row = await app.db.automationRun.findUniqueOrThrow({ where: { id: retrying.id } });
  // Measured from the attempt's start, so a slow test machine cannot make it look sooner.
  const delay = row.nextAttemptAt.getTime() - row.startedAt!.getTime();
  t.ok(delay >= 8_000 && delay < 13_000, `next attempt 10 s ± 20 % after the failed one (${delay} ms)`);

  const [timedOut] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued', hanging.id);
  t.match(timedOut, { error_message: 'Webhook timed out after 5 s.', attempts: 1 }, 'a timeout is retried later');
  t.equal(json(await app.inject({ method: 'GET', url: `${api(orgId)}/companies/`, headers: admin.headers })).length, 1);
});

t.test('transient failures are retried with backoff, up to three attempts', async (t) => {
  const orgId = await newOrganization('Retries');
  const target = await startWebhookTarget(t);
  const rule = await hookRule(orgId, 'company.created', target.url);
  // Skip the backoff wait: make the scheduled retry due now.
  const dueNow = () =>
    app.db.automationRun.updateMany({ where: { automationId: rule.id, status: 'queued' }, data: { nextAttemptAt: new Date() } });

  target.respondWith.push(503);
  await inject('POST', `${api(orgId)}/companies/`, { name: 'Pied Piper' });
  await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued' && rs[0]?.attempts === 1, rule.id);
  await dueNow();
  const [recovered] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'success', rule.id);
  t.match(recovered, { attempts: 2, error_message: null });
  t.equal(target.requests.length, 2);
  t.equal(target.requests[0]!.headers['x-webhook-delivery'], target.requests[1]!.headers['x-webhook-delivery'], 'same delivery id');

  target.respondWith.push(503, 502, 500);
  await inject('POST', `${api(orgId)}/companies/`, { name: 'Raviga' });
  for (const attempts of [1, 2]) {
    await waitForRuns(orgId, (rs) => rs[0]?.status === 'queued' && rs[0]?.attempts === attempts, rule.id);
    await dueNow();
  }
  const [gaveUp] = await waitForRuns(orgId, (rs) => rs[0]?.status === 'failed', rule.id);
  t.match(gaveUp, { attempts: 3, error_message: 'Webhook answered HTTP 500.' });
  t.ok(gaveUp.finished_at);
  t.equal(target.requests.length, 5, 'no fourth attempt');
});

t.test('several workers at once never execute a run twice; a lost lease is taken over', async (t) => {
  const orgId = await newOrganization('Busy');
  const target = await startWebhookTarget(t);
  const rule = await hookRule(orgId, 'contact.created', target.url);
  const future = new Date(Date.now() + 60_000);
  await app.db.$transaction(async (tx) => {
    for (let i = 0; i < 25; i += 1) await dispatchEvent(tx, { organizationId: orgId, name: 'contact.created', data: { i } });
    // Held back, then released to all the workers at the same moment.
    await tx.automationRun.updateMany({ where: { automationId: rule.id }, data: { nextAttemptAt: future } });
  });
  await app.db.automationRun.updateMany({ where: { automationId: rule.id }, data: { nextAttemptAt: new Date() } });
  const deps = {
    db: app.db,
    encryptionKey: app.config.emailEncryptionKey,
    allowPrivateTargets: true,
    automationEmailsPerHour: 100,
    smtpAllowPrivate: true,
    log: app.log,
  };
  // Three more workers beside the app's own, all polling at once.
  const claimed = await Promise.all([1, 2, 3].map(() => processRunBatch(app.db, deps)));
  t.comment(`claimed by the extra workers: ${claimed.join(', ')}`);

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

  // A worker that died mid-run: its run stays `running` until the lease expires, then another worker takes it.
  const lost = runs[0];
  await app.db.automationRun.update({
    where: { id: lost.id },
    data: { status: 'running', finishedAt: null, lockedUntil: new Date(Date.now() - 1000) },
  });
  // The claim already shows attempt 2 (still running): wait for its outcome.
  const [takenOver] = await waitForRuns(
    orgId,
    (rs) => rs.some((r) => r.id === lost.id && r.attempts === 2 && r.status !== 'running'),
    rule.id,
  ).then((rs) => rs.filter((r) => r.id === lost.id));
  t.match(takenOver, { status: 'success', attempts: 2 });
});
