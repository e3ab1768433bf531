// `make demo` as an operator runs it: the demo workspace on DATABASE_URL, idempotent, usable at once through the API,
// and refused in production.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { projectRoot } from '../../src/lib/project-root.js';
import { DEMO } from '../../src/modules/installation/demo-data.js';
import { createTestDatabase } from '../helpers/database.js';

const run = promisify(execFile);
const database = await createTestDatabase();
t.teardown(() => database.drop());

const demo = (env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'scripts', 'demo.ts')], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: database.url, NODE_ENV: 'development', ...env },
  });

t.test('refused in production, creating nothing', async (t) => {
  const refused = await demo({ NODE_ENV: 'production' }).then(
    () => null,
    (error: { code: number; stderr: string }) => error,
  );
  t.equal(refused?.code, 2);
  t.match(refused?.stderr, /refuses to run with NODE_ENV=production/);
  const app = await buildApp(
    loadConfig({ NODE_ENV: 'test', DATABASE_URL: database.url, JWT_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent' }),
    { backgroundWorkers: false },
  );
  t.teardown(() => app.close());
  t.equal(await app.db.user.count(), 0);
});

t.test('creates the demo workspace once, usable through the API', async (t) => {
  const first = await demo({});
  t.match(first.stdout, /created the demo user, the workspace, 12 companies, 24 contacts, 9 deals, 8 tasks/);
  t.match(first.stdout, new RegExp(`"username": "${DEMO.username}", "password": "${DEMO.password}"`));
  const second = await demo({});
  t.match(second.stdout, /already there: nothing created/);

  const app = await buildApp(
    loadConfig({ NODE_ENV: 'test', DATABASE_URL: database.url, JWT_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent' }),
    { backgroundWorkers: false },
  );
  t.teardown(() => app.close());
  await app.ready();
  const token = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    payload: { username: DEMO.username, password: DEMO.password },
  });
  t.equal(token.statusCode, 200);
  const headers = { authorization: `Bearer ${token.json().access}` };
  const [workspace] = (await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers })).json().organizations;
  t.equal(workspace.slug, 'demo');
  t.equal(workspace.current_user_role, 'owner');
  const companies = (
    await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/companies/?limit=200`, headers })
  ).json();
  t.equal(companies.length, 12);
  t.equal(companies[0].name, 'Vandelay Industries', 'newest first, in a fixed order');
  const contacts = (await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/contacts/?limit=200`, headers })).json();
  t.equal(contacts.length, 24);
  t.match(companies[0].customer_code, /^CUS-\d{5}$/, 'created through the service: customer codes');
  t.equal(new Set(companies.map((c: { customer_code: string }) => c.customer_code)).size, 12);
  const deals = (await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/deals/?limit=200`, headers })).json();
  t.equal(deals.length, 9);
  const pipeline = (await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/deals/pipeline/`, headers })).json();
  t.equal(
    pipeline.reduce((sum: number, stage: { count: number }) => sum + stage.count, 0),
    9,
    'every deal is in the pipeline summary',
  );
  const myTasks = (
    await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/tasks/?assigned_to=me&limit=200`, headers })
  ).json();
  t.equal(myTasks.length, 8, "the demo user's tasks");
  const activity = (
    await app.inject({ method: 'GET', url: `/api/v1/organizations/${workspace.id}/companies/${companies[0].id}/activity/`, headers })
  ).json();
  t.ok(
    activity.some((entry: { kind: string; actor: { name: string } | null }) => entry.kind === 'created'),
    'the timeline holds the creation',
  );
  t.equal(await app.db.user.count(), 1, 'one user after two runs');
  t.equal(await app.db.organization.count(), 1);
});
