// Every operation of the document, called by every kind of caller: each answer's status is one the operation documents, and its body matches.
import t from 'tap';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { buildTestApp, bearer, json } from '../helpers/app.js';
import { consoleSession } from '../helpers/console.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import {
  type Caller,
  type FuzzReport,
  type Operation,
  SHAPES,
  SPARED,
  encodePathValue,
  formatCounts,
  operations,
  probe,
  shapeRequest,
  validValueOf,
} from '../fuzz/openapi-fuzzer.js';

t.setTimeout(900_000);
const SEED = 20261128;

const { app, logs } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_MINUTE: '100000' }, { backgroundWorkers: false });
const { admin, organizationId: orgA } = await setupInstallation(app);
const member = await createUser(app, { membership: { organizationId: orgA, role: 'member' } });
const viewer = await createUser(app, { membership: { organizationId: orgA, role: 'viewer' } });
const outsider = await createUser(app);
const created = async (url: string, headers: Record<string, string>, payload: object) => {
  const res = await app.inject({ method: 'POST', url, headers, payload });
  if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return json(res) as { id: string; key?: string };
};
const orgB = (await created('/api/v1/organizations/personal/', bearer(outsider.access), {})).id;
const crm = (org: string, path: string) => `/api/v1/organizations/${org}/${path}`;

/** A record of every type in a workspace, so that single-record operations reach their record. */
async function scenery(org: string, headers: Record<string, string>) {
  const company = (await created(crm(org, 'companies/'), headers, { name: 'Seed Co', email: 'seed@example.test' })).id;
  const contact = (await created(crm(org, 'contacts/'), headers, { company_id: company, first_name: 'Ada', last_name: 'Seed' })).id;
  const deal = (await created(crm(org, 'deals/'), headers, { company_id: company, title: 'Seed deal' })).id;
  const task = (await created(crm(org, 'tasks/'), headers, { company_id: company, title: 'Call back' })).id;
  const note = (await created(crm(org, 'notes/'), headers, { body: 'Seed note', targets: [{ type: 'company', id: company }] })).id;
  const automation = (
    await created(crm(org, 'automations/'), headers, {
      name: 'Seed rule',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'https://example.com/hook' },
    })
  ).id;
  return { company, contact, deal, task, note, automation };
}
const a = await scenery(orgA, admin.headers);
const b = await scenery(orgB, outsider.headers);
// Workspace B requires two-factor sign-in, which its owner has not turned on: every tenant operation refuses them there.
await app.db.organization.update({ where: { id: orgB }, data: { requireTwoFactor: true } });

/** Workspace A's API keys, one per set of capabilities a key can hold. */
const key = async (capabilities: string[]) =>
  `Bearer ${(await created(crm(orgA, 'api-keys/'), admin.headers, { name: capabilities.join('+'), capabilities })).key}`;
const foreignOfA = [orgB, ...Object.values(b)];
const callers: Caller[] = [
  { name: 'anonymous', authorization: undefined, foreignIds: [] },
  { name: 'an invalid access token', authorization: 'Bearer not-a-token', foreignIds: [] },
  // The installation administrator and owner of A: installation-wide answers (the data export) name every workspace.
  {
    name: 'owner of A (installation administrator)',
    authorization: admin.headers.authorization,
    foreignIds: Object.values(b),
    foreignWorkspaceIds: [orgB],
  },
  { name: 'member of A', authorization: member.headers.authorization, foreignIds: foreignOfA },
  { name: 'viewer of A', authorization: viewer.headers.authorization, foreignIds: foreignOfA },
  { name: 'outsider (owner of B)', authorization: outsider.headers.authorization, foreignIds: Object.values(a) },
  { name: 'key of A: VIEW_CRM', authorization: await key(['VIEW_CRM']), foreignIds: foreignOfA },
  { name: 'key of A: VIEW_CRM+MANAGE_CRM', authorization: await key(['VIEW_CRM', 'MANAGE_CRM']), foreignIds: foreignOfA },
  { name: 'key of A: VIEW_CRM+MANAGE_AUTOMATIONS', authorization: await key(['VIEW_CRM', 'MANAGE_AUTOMATIONS']), foreignIds: foreignOfA },
  {
    name: 'key of A: every capability',
    authorization: await key(['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS']),
    foreignIds: foreignOfA,
  },
];
// A console session's cookie opens no API operation: the API answers it as it answers an anonymous caller.
const { cookie } = await consoleSession(app);

const NONE = '00000000-0000-4000-8000-000000000000';
/** Path values of the caller's own workspace (A), then of the other (B). Keys and sessions get ids that exist nowhere. */
const pathValues = (own: boolean): Record<string, string> => {
  const records = own ? a : b;
  return {
    organization_id: own ? orgA : orgB,
    company_id: records.company,
    contact_id: records.contact,
    deal_id: records.deal,
    task_id: records.task,
    note_id: records.note,
    automation_id: records.automation,
    membership_id: NONE,
    invitation_id: NONE,
    account_id: NONE,
    import_id: NONE,
    key_id: NONE,
    session_id: NONE,
    token: 'A'.repeat(43),
    uidb64: 'MQ',
  };
};

function urlOf(operation: Operation, values: Record<string, string>): string {
  let url = operation.path;
  for (const p of operation.params.filter((param) => param.in === 'path'))
    url = url.replace(`{${p.name}}`, encodePathValue(values[p.name] ?? 'x'));
  return url;
}

/** The requests each caller sends to an operation: a valid body on its own workspace, none on the other's, a broken one. */
function requestsFor(operation: Operation, caller: Caller, index: number): InjectOptions[] {
  const auth = caller.authorization ? { authorization: caller.authorization } : {};
  const method = operation.method as InjectOptions['method'];
  const send = (url: string, body: string | undefined, headers: Record<string, string> = {}): InjectOptions => ({
    method,
    url,
    headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { payload: body } : {}),
  });
  // The spared operations would end the callers' own sessions, accounts or workspace with a valid body.
  const valid =
    operation.body && !SPARED.has(operation.id)
      ? JSON.stringify(fc.sample(validValueOf(operation.body), { numRuns: 1, seed: SEED + index })[0])
      : operation.body
        ? '{}'
        : undefined;
  return [
    send(urlOf(operation, pathValues(true)), valid),
    send(urlOf(operation, pathValues(false)), operation.body ? '{}' : undefined),
    ...(operation.body ? [send(urlOf(operation, pathValues(true)), '{"truncated":')] : []),
  ];
}

t.test('every operation × every kind of caller: only documented statuses, bodies as documented', async (t) => {
  const report: FuzzReport = { requests: 0, counts: new Map(), findings: [] };
  const ops = operations({ includeSpared: true });
  for (const [index, operation] of ops.entries()) {
    for (const caller of callers) {
      for (const request of requestsFor(operation, caller, index)) await probe(app, null, report, operation, caller, request);
    }
    const anonymous = callers[0]!;
    for (const request of requestsFor(operation, anonymous, index)) {
      await probe(
        app,
        null,
        report,
        operation,
        { ...anonymous, name: 'a console session' },
        { ...request, headers: { ...request.headers, cookie } },
      );
    }
  }
  t.comment(`${report.requests} requests over ${ops.length} operations and ${callers.length + 1} kinds of caller`);
  for (const line of formatCounts(report)) t.comment(line);
  for (const finding of report.findings)
    t.fail(`${finding.operation} as ${finding.caller}: ${finding.problem}`, {
      request: finding.request,
      status: finding.status,
      body: finding.body,
    });
  // A 500's cause is in the log, not the answer.
  for (const line of logs.filter((l) => l.includes('"level":50')).slice(0, 3)) t.comment(line.slice(0, 3000));
  t.equal(report.findings.length, 0, `${report.findings.length} findings`);
});

t.test('the request shapes the schemas do not describe, sent with a workspace API key and anonymously: documented answers', async (t) => {
  const report: FuzzReport = { requests: 0, counts: new Map(), findings: [] };
  // The cheap shapes: the fuzz test sends the deep and wide ones to every operation already.
  const shapes = SHAPES.filter((shape) => (shape.body?.length ?? 0) + (shape.query?.length ?? 0) < 1_000 && !shape.headers);
  const keyCaller = callers.find((caller) => caller.name === 'key of A: every capability')!;
  for (const operation of operations({ includeSpared: true })) {
    const url = urlOf(operation, pathValues(true));
    for (const caller of [keyCaller, callers[0]!]) {
      for (const shape of shapes) {
        await probe(app, null, report, operation, caller, shapeRequest(operation, url, caller, shape));
      }
    }
  }
  t.comment(`${report.requests} requests`);
  for (const finding of report.findings)
    t.fail(`${finding.operation} as ${finding.caller}: ${finding.problem}`, {
      request: finding.request,
      status: finding.status,
      body: finding.body,
    });
  t.equal(report.findings.length, 0, `${report.findings.length} findings`);
});
