// Fuzzes every operation of the OpenAPI document as five callers (an API key among them) over two workspaces (FUZZ_RUNS requests; `make fuzz`:
// 10,000), then sends each of them every shape of request the schemas do not describe (deep, wide, duplicate keys, ...).
import t from 'tap';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { formatCounts, fuzz, fuzzShapes } from './openapi-fuzzer.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
// Each request with two checksums of every table: minutes on a busy 2-core machine for make test's 400 runs and the
// shapes; `make fuzz`'s 10,000 take longer (over 15 minutes beside other work), so the bound grows with the runs.
t.setTimeout(Math.max(900_000, RUNS * 360));
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

// No background workers: a table may change only because of the request under test.
const { app, databaseUrl } = await buildTestApp(
  t,
  {
    // `make fuzz` runs for half an hour: tokens of the default 15 minutes would turn its second half into 401s.
    ACCESS_TOKEN_TTL: '86400',
    RATE_LIMIT_INVITATIONS_PER_DAY: '100000',
    RATE_LIMIT_TEST_SENDS_PER_HOUR: '100000',
    RATE_LIMIT_PROVISIONING_PER_DAY: '100000',
    RATE_LIMIT_PASSWORD_RESET_PER_HOUR: '100000',
    RATE_LIMIT_TOKEN_PER_MINUTE: '100000',
  },
  { backgroundWorkers: false },
);
const { admin, organizationId: orgA } = await setupInstallation(app);
const viewer = await createUser(app, { membership: { organizationId: orgA, role: 'viewer' } });
const outsider = await createUser(app);
const post = async (url: string, headers: Record<string, string>, payload: object) => {
  const res = await app.inject({ method: 'POST', url, headers, payload });
  if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return json(res) as { id: string };
};
const orgB = (await post('/api/v1/organizations/personal/', bearer(outsider.access), {})).id;
const scenery = async (org: string, headers: Record<string, string>) => {
  const company = (await post(`/api/v1/organizations/${org}/companies/`, headers, { name: 'Seed Co', email: 'seed@example.test' })).id;
  const contact = (
    await post(`/api/v1/organizations/${org}/contacts/`, headers, { company_id: company, first_name: 'Ada', last_name: 'Seed' })
  ).id;
  const automation = (
    await post(`/api/v1/organizations/${org}/automations/`, headers, {
      name: 'Seed rule',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'https://example.com/hook' },
    })
  ).id;
  return { company, contact, automation };
};
const a = await scenery(orgA, admin.headers);
const b = await scenery(orgB, outsider.headers);
const membership = (await app.db.membership.findFirstOrThrow({ where: { organizationId: orgA, userId: viewer.id } })).id;
const idsOfA = [orgA, a.company, a.contact, a.automation];
/** A workspace API key of A with every capability a key can hold: it reaches A's CRM operations and no other. */
const keyOfA = (
  (await post(`/api/v1/organizations/${orgA}/api-keys/`, admin.headers, {
    name: 'Fuzz',
    capabilities: ['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS'],
  })) as { key?: string }
).key;
const idsOfB = [orgB, b.company, b.contact, b.automation];
const pathValues = {
  organization_id: [orgA, orgB],
  company_id: [a.company, b.company],
  contact_id: [a.contact, b.contact],
  automation_id: [a.automation, b.automation],
  membership_id: [membership],
  invitation_id: ['00000000-0000-4000-8000-000000000000'],
  account_id: ['00000000-0000-4000-8000-000000000001'],
  token: ['not-a-token', 'A'.repeat(43)],
  uidb64: ['MQ', 'not base64'],
};

t.test(`${RUNS} generated requests: no 5xx, only declared answers, no write on a 4xx, no other workspace's ids`, async (t) => {
  const report = await fuzz(
    app,
    databaseUrl,
    {
      callers: [
        { name: 'anonymous', authorization: undefined, foreignIds: [...idsOfA, ...idsOfB] },
        // The installation administrator: installation-wide answers (the data export) list every workspace, B's included.
        { name: 'owner of A', authorization: admin.headers.authorization, foreignIds: idsOfB, foreignWorkspaceIds: [orgB] },
        { name: 'viewer of A', authorization: viewer.headers.authorization, foreignIds: idsOfB },
        { name: 'outsider (owner of B)', authorization: outsider.headers.authorization, foreignIds: idsOfA },
        { name: 'API key of A', authorization: `Bearer ${keyOfA}`, foreignIds: idsOfB },
      ],
      pathValues,
    },
    RUNS,
    SEED,
  );
  t.comment(`seed ${SEED}: ${report.requests} requests over ${report.counts.size} operations`);
  for (const line of formatCounts(report)) t.comment(line);
  for (const finding of report.findings.slice(0, 20)) {
    t.fail(`${finding.operation} as ${finding.caller}: ${finding.problem}`, {
      request: finding.request,
      status: finding.status,
      body: finding.body,
    });
  }
  t.equal(report.findings.length, 0, `${report.findings.length} findings`);
  t.ok(report.requests >= RUNS, `${report.requests} requests sent`);
});

t.test('every operation, every request shape the schemas do not describe: below 500, problem+json, no write on a 4xx', async (t) => {
  const heapBefore = process.memoryUsage().heapUsed;
  const owner = { name: 'owner of A', authorization: admin.headers.authorization, foreignIds: idsOfB, foreignWorkspaceIds: [orgB] };
  const report = await fuzzShapes(app, databaseUrl, { callers: [owner], pathValues }, owner);
  t.comment(`${report.requests} requests: ${report.shapes} shapes × ${report.counts.size} operations`);
  for (const line of formatCounts(report)) t.comment(line);
  for (const finding of report.findings.slice(0, 20)) {
    t.fail(`${finding.operation}: ${finding.problem}`, {
      request: { ...finding.request, payload: undefined },
      status: finding.status,
      body: finding.body,
    });
  }
  t.equal(report.findings.length, 0, `${report.findings.length} findings`);
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200, 'the app still answers');
  const growthMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  // Bodies of up to 1 MiB, 1,342 of them, without a forced collection: garbage counts too. A leak would pass 1 GB.
  t.ok(growthMb < 1024, `heap grew ${growthMb.toFixed(0)} MB over the run (bound: 1 GB)`);
});
