// The installation administrators' API through HTTP: who may call it, readiness in passing and failing configurations
// (never a secret in the answer), system information, the audit log's filters and pages, the backup status rules at
// their edges, and the data export's contents and exclusions.
import t from 'tap';
import { buildTestApp, json, TEST_EMAIL_KEY, TEST_SETUP_TOKEN } from '../helpers/app.js';
import { startMailbox } from '../helpers/mailbox.js';
import { ADMIN, createUser, setupInstallation } from '../helpers/fixtures.js';

const JWT = 'test-jwt-secret-0123456789-0123456789-abcdef';
const { app, logs } = await buildTestApp(t);
const mailbox = await startMailbox(t);
const { admin, organizationId } = await setupInstallation(app, mailbox);
const member = await createUser(app, { username: 'mia', membership: { organizationId, role: 'admin' } });

const get = (url: string, headers: Record<string, string> = admin.headers) => app.inject({ method: 'GET', url, headers });
const BASE = '/api/v1/installation';

t.test('only installation administrators reach the installation API', async (t) => {
  const routes: Array<[string, string]> = [
    ['GET', `${BASE}/production-readiness/`],
    ['GET', `${BASE}/system-information/`],
    ['GET', `${BASE}/audit-log/`],
    ['GET', `${BASE}/backup-status/`],
    ['POST', `${BASE}/backup-status/events/`],
    ['GET', `${BASE}/data-export/`],
  ];
  for (const [method, url] of routes) {
    const payload = method === 'POST' ? { kind: 'backup', status: 'success' } : undefined;
    const anonymous = await app.inject({ method: method as 'GET', url, payload });
    t.equal(anonymous.statusCode, 401, `${method} ${url} anonymous`);
    const regular = await app.inject({ method: method as 'GET', url, headers: member.headers, payload });
    t.equal(regular.statusCode, 403, `${method} ${url} as a workspace admin`);
    t.equal(json(regular).code, 'installation_admin_required');
    t.match(regular.headers['content-type'], /application\/problem\+json/);
  }
  t.equal(await app.db.backupEvent.count(), 0, 'refused events left nothing behind');
});

t.test('readiness of the test configuration: the failing checks, in the fixed order', async (t) => {
  const res = await get(`${BASE}/production-readiness/`);
  t.equal(res.statusCode, 200);
  const body = json(res);
  t.same(
    body.checks.map((c: { key: string }) => c.key),
    [
      'node_env_production',
      'jwt_secret_strong',
      'app_url_https',
      'served_over_https',
      'trust_proxy',
      'console_cookies_secure',
      'email_encryption_key',
      'installation_smtp',
      'redis_for_processes',
      'migrations_applied',
      'row_level_security',
      'metrics_not_public',
      'setup_token_removed',
    ],
  );
  const failing = body.checks.filter((c: { status: string }) => c.status === 'fail').map((c: { key: string }) => c.key);
  t.same(failing, ['node_env_production', 'app_url_https', 'served_over_https', 'console_cookies_secure', 'setup_token_removed']);
  t.equal(body.ready, false);
  t.equal(body.passed, 8);
  t.equal(body.total, 13);
  for (const secret of [JWT, TEST_SETUP_TOKEN, TEST_EMAIL_KEY, mailbox.password])
    t.notOk(res.body.includes(secret), 'no secret in the answer');

  const forwarded = json(
    await app.inject({
      method: 'GET',
      url: `${BASE}/production-readiness/`,
      headers: { ...admin.headers, 'x-forwarded-for': '203.0.113.9' },
    }),
  );
  t.equal(forwarded.checks.find((c: { key: string }) => c.key === 'trust_proxy').status, 'fail', 'forwarded headers without TRUST_PROXY');
});

t.test('readiness: a production configuration passes every check, a careless one fails every check', async (t) => {
  const production = await buildTestApp(t, {
    NODE_ENV: 'production',
    SERVICE_APP_URL: 'https://app.example.test',
    TRUST_PROXY: '127.0.0.1',
    SERVICE_SETUP_TOKEN: undefined,
    WEB_CONCURRENCY: '1',
  });
  await setupInstallationWithoutToken(production.app, mailbox);
  const root = await signInRoot(production.app);
  const res = await production.app.inject({
    method: 'GET',
    url: `${BASE}/production-readiness/`,
    headers: { ...root, 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.7' },
  });
  const body = json(res);
  t.same(
    body.checks.filter((c: { status: string }) => c.status === 'fail'),
    [],
    'nothing fails',
  );
  t.same([body.ready, body.passed, body.total], [true, 13, 13]);

  const careless = await buildTestApp(t, {
    JWT_SECRET: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    EMAIL_ENCRYPTION_KEY: undefined,
    WEB_CONCURRENCY: '3',
    METRICS_PORT: '9999',
    HOST: '0.0.0.0',
    // Workspace requests as DATABASE_URL's role, the test server's superuser.
    DATABASE_SERVING_URL: undefined,
  });
  t.ok(
    careless.logs.some((line) => line.includes('bypasses row-level security')),
    'a warning at start',
  );
  // Setup without an SMTP account, the token left set afterwards, and a migration record missing.
  const setup = await careless.app.inject({
    method: 'POST',
    url: '/api/v1/setup/',
    payload: { setup_token: TEST_SETUP_TOKEN, ...ADMIN, organization_name: 'Acme', organization_slug: 'acme' },
  });
  t.equal(setup.statusCode, 201);
  await careless.app.db.$executeRawUnsafe(
    `DELETE FROM _prisma_migrations WHERE migration_name = (SELECT max(migration_name) FROM _prisma_migrations)`,
  );
  const carelessRoot = await signInRoot(careless.app);
  const failing = json(
    await careless.app.inject({
      method: 'GET',
      url: `${BASE}/production-readiness/`,
      headers: { ...carelessRoot, 'x-forwarded-for': '198.51.100.7' },
    }),
  );
  t.same(
    failing.checks.filter((c: { status: string }) => c.status === 'pass'),
    [],
    'everything fails',
  );
  t.same([failing.ready, failing.passed], [false, 0]);
  for (const check of failing.checks) t.match(check.guidance, /[A-Z_]{4,}|migrat|SMTP/, `${check.key} says what to set`);
  t.notOk(JSON.stringify(failing).includes('aaaaaaaaaaaaaaaa'), 'the weak secret is not echoed');
});

async function setupInstallationWithoutToken(target: typeof app, box: typeof mailbox) {
  // The token is gone from this config: complete setup straight in the database, as a production install would have.
  const { hashPassword } = await import('../../src/lib/passwords.js');
  const user = await target.db.user.create({
    data: {
      username: ADMIN.username,
      email: ADMIN.email,
      passwordHash: await hashPassword(ADMIN.password),
      isStaff: true,
      isSuperuser: true,
    },
  });
  await target.db.installationState.create({ data: { id: 1, setupCompletedAt: new Date() } });
  const smtp = box.smtpConfig() as { host: string; port: number; from_email: string };
  await target.db.installationEmailAccount.create({
    data: { name: 'fallback', host: smtp.host, port: smtp.port, username: 'u', fromEmail: smtp.from_email, useTls: false },
  });
  return user;
}

async function signInRoot(target: typeof app) {
  const res = await target.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    payload: { username: ADMIN.username, password: ADMIN.password },
  });
  return { authorization: `Bearer ${json(res).access}` };
}

t.test('system information', async (t) => {
  await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/companies/`,
    headers: admin.headers,
    payload: { name: 'Initech' },
  });
  const res = await get(`${BASE}/system-information/`);
  t.equal(res.statusCode, 200);
  const info = json(res);
  t.equal(info.version, '0.1.0');
  t.equal(info.node_version, process.versions.node);
  t.match(info.postgresql_version, /^\d+(\.\d+)?/);
  t.ok(info.uptime_seconds >= 0);
  t.equal(info.process_count, 1);
  t.ok(info.database_size_bytes > 1_000_000);
  t.same(info.counts, { users: 2, workspaces: 1, companies: 1, contacts: 0, queued_jobs: info.counts.queued_jobs, failed_jobs: 0 });
  t.ok(info.commit === null || /^[0-9a-f]{40}$/.test(info.commit));
});

t.test('the audit log: filters and keyset pages', async (t) => {
  const all = json(await get(`${BASE}/audit-log/`));
  t.ok(all.length >= 1);
  t.equal(all[0].action !== undefined, true);
  t.ok(all.some((entry: { action: string }) => entry.action === 'setup.completed'));
  // Three more entries of one action, to page through.
  for (let i = 0; i < 3; i++)
    await app.inject({
      method: 'POST',
      url: `${BASE}/backup-status/events/`,
      headers: admin.headers,
      payload: { kind: 'backup', status: 'success' },
    });
  const byAction = json(await get(`${BASE}/audit-log/?action=installation.backup_event_recorded`));
  t.equal(byAction.length, 3);
  t.same(
    byAction.map((e: { actor_username: string }) => e.actor_username),
    ['admin', 'admin', 'admin'],
  );
  const first = await get(`${BASE}/audit-log/?action=installation.backup_event_recorded&limit=2`);
  const link = /<([^>]+)>; rel="next"/.exec(first.headers.link as string)?.[1];
  t.ok(link, 'a next page');
  const second = json(await get(link as string));
  t.same(
    [...json(first), ...second].map((e: { id: string }) => e.id),
    byAction.map((e: { id: string }) => e.id),
    'pages join up',
  );
  t.same(json(await get(`${BASE}/audit-log/?actor=${member.id}`)), [], 'by user id: mia did nothing audited');
  t.equal(json(await get(`${BASE}/audit-log/?actor=ADMIN&action=installation.backup_event_recorded`)).length, 3, 'by username');
  const future = new Date(Date.now() + 60_000).toISOString();
  t.same(json(await get(`${BASE}/audit-log/?since=${encodeURIComponent(future)}`)), []);
  t.equal((await get(`${BASE}/audit-log/?since=yesterday`)).statusCode, 400);
  t.equal((await get(`${BASE}/audit-log/?cursor=bogus`)).statusCode, 400);
  await app.db.backupEvent.deleteMany();
});

t.test('backup status: unknown, current, stale and failed at their edges', async (t) => {
  const status = async () => json(await get(`${BASE}/backup-status/`));
  t.same(await status(), {
    backup: { status: 'unknown', completed_at: null },
    restore_test: { status: 'unknown', completed_at: null },
    backup_max_age_hours: 26,
    restore_test_max_age_days: 8,
  });
  const post = (payload: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: `${BASE}/backup-status/events/`, headers: admin.headers, payload });
  const recorded = await post({ kind: 'backup', status: 'success' });
  t.equal(recorded.statusCode, 201);
  t.equal(json(recorded).backup.status, 'current');
  t.equal(json(recorded).restore_test.status, 'unknown');
  for (const bad of [
    { kind: 'snapshot', status: 'success' },
    { kind: 'backup' },
    { kind: 'backup', status: 'ok' },
    { kind: 'backup', status: 'success', extra: 1 },
  ]) {
    t.equal((await post(bad)).statusCode, 400, JSON.stringify(bad));
  }
  // Move the latest success to just inside, then just past, the 26 hours.
  const age = async (hours: number, kind: 'backup' | 'restore_test' = 'backup') =>
    app.db.$executeRawUnsafe(
      `UPDATE backup_events SET created_at = now() - make_interval(secs => $1) WHERE id = (SELECT id FROM backup_events WHERE kind = '${kind}' ORDER BY created_at DESC LIMIT 1)`,
      hours * 3600,
    );
  await age(26 - 1 / 60);
  t.equal((await status()).backup.status, 'current', 'a minute inside the age');
  await age(26 + 1 / 60);
  t.equal((await status()).backup.status, 'stale', 'a minute past the age');
  await post({ kind: 'backup', status: 'failure' });
  t.equal((await status()).backup.status, 'failed', 'the latest event decides');
  await post({ kind: 'backup', status: 'success' });
  t.equal((await status()).backup.status, 'current', 'a success after a failure');
  await post({ kind: 'restore_test', status: 'success' });
  await age(8 * 24 - 1 / 60, 'restore_test');
  t.equal((await status()).restore_test.status, 'current');
  await age(8 * 24 + 1 / 60, 'restore_test');
  const stale = await status();
  t.equal(stale.restore_test.status, 'stale');
  t.ok(Date.parse(stale.restore_test.completed_at) < Date.now() - 8 * 86_400_000);
});

t.test("the data export: installation records and my workspaces' CRM data, without secrets, and audited", async (t) => {
  // Another workspace the admin does not belong to, with a company that must not be exported.
  const other = await app.db.organization.create({ data: { name: 'Hidden', slug: 'hidden' } });
  await app.db.company.create({ data: { organizationId: other.id, name: 'Secret Corp' } });
  await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/automations/`,
    headers: admin.headers,
    payload: {
      name: 'hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'https://hooks.example.test/x', secret: 'webhook-secret-value-123' },
    },
  });
  // A deal and a task on my company, an archived company of mine; the hidden workspace's deal and task stay out.
  const crm = (path: string, payload?: object) =>
    app.inject({ method: 'POST', url: `/api/v1/organizations/${organizationId}/${path}`, headers: admin.headers, payload });
  const initech = await app.db.company.findFirstOrThrow({ where: { organizationId, name: 'Initech' } });
  const archived = json(await crm('companies/', { name: 'Archived Ltd' }));
  t.equal((await crm(`companies/${archived.id}/archive/`)).statusCode, 200);
  t.equal((await crm('deals/', { title: 'Export deal', company_id: initech.id, value: '10.00' })).statusCode, 201);
  t.equal((await crm('tasks/', { title: 'Export task', company_id: initech.id })).statusCode, 201);
  t.equal((await crm('notes/', { body: 'Export note', targets: [{ type: 'company', id: initech.id }] })).statusCode, 201);
  const secret = await app.db.company.findFirstOrThrow({ where: { organizationId: other.id } });
  await app.db.deal.create({ data: { organizationId: other.id, companyId: secret.id, title: 'Secret deal', position: 0 } });
  await app.db.task.create({ data: { organizationId: other.id, companyId: secret.id, title: 'Secret task' } });
  const res = await get(`${BASE}/data-export/`);
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /application\/x-ndjson/);
  t.match(res.headers['content-disposition'], /attachment; filename="installation-export-/);
  const lines = res.body
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
  t.equal(lines[0]?.type, 'export');
  t.same(lines.at(-1), { type: 'end', data: { complete: true } });
  const of = (type: string) => lines.filter((line) => line.type === type).map((line) => line.data);
  t.same(
    of('user')
      .map((u) => u.username)
      .sort(),
    ['admin', 'mia'],
  );
  t.same(
    of('workspace')
      .map((w) => w.slug)
      .sort(),
    ['acme', 'hidden'],
    'every workspace is listed',
  );
  t.equal(of('membership').length, 2);
  t.ok(of('audit_entry').length > 3);
  t.same(
    of('company')
      .map((c) => c.name)
      .sort(),
    ['Archived Ltd', 'Initech'],
    "only the admin's workspaces' CRM data, archived records included",
  );
  t.ok(of('company').every((c) => c.workspace_id === organizationId));
  t.match(of('deal'), [{ title: 'Export deal', company_id: initech.id, workspace_id: organizationId, value: '10.00' }]);
  t.equal(of('deal').length, 1, "not the other workspace's deal");
  t.match(of('task'), [{ title: 'Export task', company_id: initech.id, workspace_id: organizationId, effective_status: 'open' }]);
  t.equal(of('task').length, 1, "not the other workspace's task");
  t.match(of('note'), [{ body: 'Export note', targets: [{ type: 'company', id: initech.id }], workspace_id: organizationId }]);
  t.notOk(res.body.includes('Secret'), 'nothing of the other workspace');
  t.equal(of('automation').length, 1);
  const settings = of('installation_settings')[0] as { fallback_smtp: Record<string, unknown> };
  t.equal(settings.fallback_smtp.host, '127.0.0.1');
  for (const secret of ['webhook-secret-value-123', mailbox.password, 'password_hash', 'passwordHash', 'token_hash', '$argon2', JWT]) {
    t.notOk(res.body.includes(secret), `no ${secret.slice(0, 12)}… in the export`);
  }
  t.equal(await app.db.auditLog.count({ where: { action: 'installation.data_exported', actorUserId: admin.id } }), 1);
  t.notOk(logs.some((line) => line.includes('webhook-secret-value-123')));
});

t.test("the audit log names another workspace but not its records; my workspace's records by id", async (t) => {
  const outsider = await createUser(app, { username: 'olga' });
  const personal = await app.inject({ method: 'POST', url: '/api/v1/organizations/personal/', headers: outsider.headers, payload: {} });
  const theirs = json(personal).id as string;
  const rule = { name: 'Hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'https://example.com/h' } };
  const create = (org: string, headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: `/api/v1/organizations/${org}/automations/`, headers, payload: rule });
  const foreign = json(await create(theirs, outsider.headers)).id as string;
  const mine = json(await create(organizationId, admin.headers)).id as string;
  const entries = json(await get(`${BASE}/audit-log/?action=automation.created`)) as Array<Record<string, string | null>>;
  const foreignEntry = entries.find((entry) => entry.organization_id === theirs);
  t.equal(foreignEntry?.target_type, 'automation', 'the action in the other workspace is listed');
  t.equal(foreignEntry?.target_id, null, "but not the other workspace's record id");
  t.equal(entries.find((entry) => entry.organization_id === organizationId)?.target_id, mine, 'my workspace: the id');
  const exported = (await get(`${BASE}/data-export/`)).body;
  t.notOk(exported.includes(foreign), "nor does the data export name the other workspace's record");
  t.ok(exported.includes(mine));
});

t.test('the data export reads every page of the CRM lists: each record once, ties in created_at included', async (t) => {
  const before = (await get(`${BASE}/data-export/`)).body;
  const counted = (body: string, type: string) => body.split('\n').filter((line) => line.startsWith(`{"type":"${type}"`)).length;
  const initech = await app.db.company.findFirstOrThrow({ where: { organizationId, name: 'Initech' } });
  // Two pages and one row of a third (pages of 200), 150 of them at one instant: the next page starts by id there.
  await app.pg.query(
    `INSERT INTO companies (id, organization_id, name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'Paged ' || i, CASE WHEN i <= 150 THEN timestamptz '2026-01-01' ELSE now() - i * interval '1 s' END, now()
     FROM generate_series(1, 401) AS i`,
    [organizationId],
  );
  await app.pg.query(
    `INSERT INTO deals (id, organization_id, company_id, title, created_at, updated_at, position)
     SELECT gen_random_uuid(), $1, $2, 'Paged deal ' || i, timestamptz '2026-01-01', now(), NULL
     FROM generate_series(1, 200) AS i`,
    [organizationId, initech.id],
  );
  await app.pg.query(
    `INSERT INTO tasks (id, organization_id, company_id, title, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, 'Paged task ' || i, now() - i * interval '1 ms', now()
     FROM generate_series(1, 400) AS i`,
    [organizationId, initech.id],
  );
  const res = await get(`${BASE}/data-export/`);
  t.equal(res.statusCode, 200);
  const lines = res.body
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
  t.same(lines.at(-1), { type: 'end', data: { complete: true } });
  for (const [type, added] of [
    ['company', 401],
    ['deal', 200],
    ['task', 400],
  ] as const) {
    const ids = lines.filter((line) => line.type === type).map((line) => line.data.id);
    t.equal(ids.length, counted(before, type) + added, `${type}: every one`);
    t.equal(new Set(ids).size, ids.length, `${type}: none twice`);
  }
});
