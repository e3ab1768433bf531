// The run dispatcher as two instances see it: woken by the write's NOTIFY, a burst claimed in batches and delivered
// exactly once across dispatchers and workspaces, rows another claim holds skipped, leases renewed while a run executes
// and taken over once they run out, and a run only ever executed with its own workspace's rule and context.
import pg from 'pg';
import t, { type Test } from 'tap';
import { claimRuns } from '../../src/jobs/automation-runs.js';
import { createRunDispatcher, type RunDispatcher } from '../../src/jobs/run-dispatcher.js';
import { executeRun } from '../../src/modules/automations/run-queue.js';
import { WEBHOOK_TIMEOUT_MS } from '../../src/modules/automations/webhook.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { runDepsOf } from '../helpers/jobs.js';
import { startWebhookTarget } from './webhook-target.js';

// No background workers of the app's own: each test starts the dispatchers ("instances") it needs.
const { app, databaseUrl } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' }, { backgroundWorkers: false });
const { admin, organizationId: acmeId } = await setupInstallation(app);

const api = (orgId: string) => `/api/v1/organizations/${orgId}`;
const inject = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: admin.headers, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return json(res);
};
const newOrganization = async (name: string): Promise<string> =>
  (await inject('POST', '/api/v1/organizations/', { name, owner_email: admin.email })).id;
const hookRule = async (orgId: string, url: string) =>
  (
    await inject('POST', `${api(orgId)}/automations/`, {
      name: 'hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url },
    })
  ).id as string;
const createCompany = async (orgId: string, name: string) => (await inject('POST', `${api(orgId)}/companies/`, { name })).id as string;

interface RunRow {
  id: string;
  organization_id: string;
  automation_id: string;
  event_id: string;
  status: string;
  attempts: number;
  error_message: string | null;
}
const runsOfRule = async (ruleId: string) =>
  (await app.pg.query<RunRow>(`SELECT * FROM automation_runs WHERE automation_id = $1 ORDER BY created_at, id`, [ruleId])).rows;

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const runDeps = runDepsOf(app);

/** One instance's dispatcher on the test database as the owner, as src/workers.ts starts it; closed after the test. */
function startDispatcher(
  t: Test,
  options: { concurrency?: number; leaseSeconds?: number; pollIntervalMs?: number; executed?: string[] } = {},
): RunDispatcher {
  const dispatcher = createRunDispatcher({
    connectionString: databaseUrl,
    concurrency: options.concurrency ?? 4,
    leaseSeconds: options.leaseSeconds ?? 60,
    pollIntervalMs: options.pollIntervalMs ?? 100,
    log: app.log,
    execute: (run) => {
      options.executed?.push(`${run.id}:${run.attempts}`);
      return executeRun(runDeps, run);
    },
  });
  dispatcher.start();
  t.teardown(() => dispatcher.close());
  return dispatcher;
}

t.test("a write's NOTIFY wakes the dispatcher: delivered long before its next poll", async (t) => {
  const target = await startWebhookTarget(t);
  const orgId = await newOrganization('Wake');
  await hookRule(orgId, target.url);
  startDispatcher(t, { pollIntervalMs: 3_600_000 });
  // The start's own look is over before the write.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const started = Date.now();
  await createCompany(orgId, 'Woken Ltd');
  await target.waitForRequests(1, 5_000);
  t.ok(Date.now() - started < 5_000, `delivered ${Date.now() - started} ms after the create, with an hour to the next poll`);
  const { rows } = await app.pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker.jobs`);
  t.equal(rows[0]!.n, 0, 'the write queued no job');
});

t.test('a burst in two workspaces, two dispatchers: every run delivered exactly once, each to its own workspace', async (t) => {
  const acmeTarget = await startWebhookTarget(t);
  const betaTarget = await startWebhookTarget(t);
  const betaId = await newOrganization('Beta');
  const acmeRule = await hookRule(acmeId, acmeTarget.url);
  const betaRule = await hookRule(betaId, betaTarget.url);
  const executed: string[] = [];
  startDispatcher(t, { executed });
  startDispatcher(t, { executed });

  const PER_WORKSPACE = 60;
  const created = { [acmeId]: new Set<string>(), [betaId]: new Set<string>() };
  await Promise.all(
    [acmeId, betaId].flatMap((orgId) =>
      Array.from({ length: PER_WORKSPACE }, async (_, i) => created[orgId]!.add(await createCompany(orgId, `Burst ${i}`))),
    ),
  );
  await acmeTarget.waitForRequests(PER_WORKSPACE, 30_000);
  await betaTarget.waitForRequests(PER_WORKSPACE, 30_000);
  await new Promise((resolve) => setTimeout(resolve, 500));

  t.equal(executed.length, 2 * PER_WORKSPACE, 'one attempt per run across both dispatchers');
  t.equal(new Set(executed).size, executed.length, 'no run claimed twice');
  for (const [orgId, target, ruleId] of [
    [acmeId, acmeTarget, acmeRule],
    [betaId, betaTarget, betaRule],
  ] as const) {
    const bodies = target.requests.map((r) => JSON.parse(r.body) as { organization_id: string; data: { id: string } });
    t.equal(bodies.length, PER_WORKSPACE, 'exactly one delivery per run');
    t.ok(
      bodies.every((b) => b.organization_id === orgId),
      "each delivery to a workspace's URL carries that workspace",
    );
    t.same(new Set(bodies.map((b) => b.data.id)), created[orgId], "each of the workspace's companies, and only those");
    const runs = await runsOfRule(ruleId);
    t.equal(runs.length, PER_WORKSPACE);
    t.ok(
      runs.every((r) => r.status === 'success' && r.attempts === 1 && r.organization_id === orgId),
      'every run success after one attempt, in its own workspace',
    );
    t.same(
      new Set(target.requests.map((r) => r.headers['webhook-id'])),
      new Set(runs.map((r) => r.event_id)),
      'webhook-id is the event id',
    );
  }
});

t.test('a run whose row another claim holds is skipped, not waited for, and taken once it is free', async (t) => {
  const target = await startWebhookTarget(t);
  const orgId = await newOrganization('Locked');
  const ruleId = await hookRule(orgId, target.url);
  for (const name of ['One', 'Two', 'Three']) await createCompany(orgId, name);
  const [held] = await runsOfRule(ruleId);
  // A second connection holds the first run's row as a claim in progress does (FOR UPDATE, transaction open).
  const other = new pg.Client({ connectionString: databaseUrl });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  await other.query('SELECT id FROM automation_runs WHERE id = $1 FOR UPDATE', [held!.id]);

  startDispatcher(t);
  await target.waitForRequests(2, 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal(target.requests.length, 2, 'the other two delivered while the row is held');
  t.match(
    (await runsOfRule(ruleId)).find((r) => r.id === held!.id),
    { status: 'queued', attempts: 0 },
    'the held run untouched',
  );

  await other.query('ROLLBACK');
  await target.waitForRequests(3, 10_000);
  t.equal(JSON.parse(target.requests[2]!.body).data.name, 'One', 'then the held run, at the next poll');
  const runs = await until('the runs to be recorded', async () => {
    const found = await runsOfRule(ruleId);
    return found.every((r) => r.status === 'success') && found;
  });
  t.same(
    runs.map((r) => r.attempts),
    [1, 1, 1],
    'each once',
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(target.requests.length, 3, 'and nothing more');
});

t.test("a live worker renews its run's lease: a run outlasting the lease is not taken over", async (t) => {
  const target = await startWebhookTarget(t);
  const orgId = await newOrganization('Renewed');
  const ruleId = await hookRule(orgId, target.url);
  // The webhook hangs until its timeout, several times the lease; a second dispatcher looks all along.
  target.respondWith.push(0);
  const executed: string[] = [];
  startDispatcher(t, { leaseSeconds: 1, executed });
  startDispatcher(t, { leaseSeconds: 1, executed });
  await createCompany(orgId, 'Slow Ltd');
  await target.waitForRequests(1);
  const [slow] = await until(
    'the timed-out attempt to be recorded',
    async () => {
      const runs = await runsOfRule(ruleId);
      return runs[0]?.status === 'queued' && runs[0]?.attempts === 1 && runs;
    },
    WEBHOOK_TIMEOUT_MS * 3,
  );
  t.match(slow, { error_message: 'Webhook timed out after 5 s.' }, 'the attempt ended by its own timeout');
  t.equal(target.requests.length, 1, `not taken over in the ${WEBHOOK_TIMEOUT_MS / 1000} s of a 1 s lease`);
  t.same(executed, [`${slow!.id}:1`], 'executed once');
});

t.test("a dead worker's run is taken over once its lease runs out; on its last attempt, it fails", async (t) => {
  const target = await startWebhookTarget(t);
  const orgId = await newOrganization('Orphans');
  const ruleId = await hookRule(orgId, target.url);
  const companyId = await createCompany(orgId, 'Orphan Ltd');
  // A worker on another connection claims the run (lease 2 s) and vanishes without recording anything.
  const dead = new pg.Client({ connectionString: databaseUrl });
  await dead.connect();
  const claimed = await claimRuns(dead, 10, 2);
  await dead.end();
  const [queued] = await runsOfRule(ruleId);
  t.same(
    claimed.map((run) => run.id),
    [queued!.id],
    'the dead worker claimed the run',
  );
  t.match(queued, { status: 'running', attempts: 1 });

  startDispatcher(t);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.equal(target.requests.length, 0, 'left to its claimant while the lease lasts');
  await target.waitForRequests(1, 10_000);
  t.equal(JSON.parse(target.requests[0]!.body).data.id, companyId, 'then taken over and delivered');
  const run = await until('the run to end', async () => {
    const [found] = await runsOfRule(ruleId);
    return found?.status === 'success' && found;
  });
  t.match(run, { attempts: 2 }, 'as its second attempt');
  t.equal(target.requests[0]!.headers['webhook-id'], run.event_id, "with the event's id, as the lost attempt had");

  // Lost on its last attempt: the next claim records the failure and sends nothing.
  await app.pg.query(`UPDATE automation_runs SET status = 'running', attempts = 3, run_at = now() WHERE id = $1`, [run.id]);
  const interrupted = await until('the interrupted run to fail', async () => {
    const [found] = await runsOfRule(ruleId);
    return found?.status === 'failed' && found;
  });
  t.match(interrupted, { attempts: 4, error_message: 'The run was interrupted too often (its worker stopped while executing it).' });
  t.equal(target.requests.length, 1, 'nothing sent');
});

t.test("a run never executes with another workspace's rule or context", async (t) => {
  const target = await startWebhookTarget(t);
  const ownId = await newOrganization('Own');
  const foreignId = await newOrganization('Foreign');
  const foreignRule = await hookRule(foreignId, target.url);
  // A run of one workspace naming another workspace's rule (written past the API, which cannot make one).
  const { rows } = await app.pg.query<{ id: string }>(
    `INSERT INTO automation_runs (id, organization_id, automation_id, trigger, payload)
     VALUES (gen_random_uuid(), $1, $2, 'company.created', $3) RETURNING id`,
    [
      ownId,
      foreignRule,
      JSON.stringify({ event: 'company.created', organization_id: ownId, data: { id: 'x' }, occurred_at: new Date().toISOString() }),
    ],
  );
  startDispatcher(t);
  const run = await until('the run to end', async () => {
    const found = (await app.pg.query<RunRow>(`SELECT * FROM automation_runs WHERE id = $1`, [rows[0]!.id])).rows[0];
    return found?.status !== 'queued' && found?.status !== 'running' && found;
  });
  t.match(
    run,
    { status: 'skipped', error_message: 'The rule was deleted before the run executed.' },
    "the other workspace's rule is not found",
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(target.requests.length, 0, "nothing sent to the other workspace's URL");
});
