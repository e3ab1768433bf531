// Request budgets per workspace and per API key through HTTP: the IETF RateLimit headers, 429 problem+json with Retry-After, CORS, neighbours unaffected.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation, type SignedIn } from '../helpers/fixtures.js';
import type { App } from '../../src/app.js';
import { holdLocks } from '../helpers/locks.js';

const companies = (organizationId: string) => `/api/v1/organizations/${organizationId}/companies/`;

async function newKey(app: App, owner: SignedIn, organizationId: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/api-keys/`,
    headers: owner.headers,
    payload: { name: 'sync', capabilities: ['VIEW_CRM'] },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return json<{ key: string }>(res).key;
}

t.test('a workspace over its budget gets 429 with the headers; another workspace is served', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_WORKSPACE_PER_MINUTE: '5', RATE_LIMIT_API_KEY_PER_MINUTE: '1000' });
  const { admin: owner, organizationId } = await setupInstallation(app);
  const other = await app.db.organization.create({ data: { name: 'Neighbour', slug: 'neighbour' } });
  const neighbour = await createUser(app, { membership: { organizationId: other.id, role: 'member' } });
  const get = (by: SignedIn, orgId: string) =>
    app.inject({ method: 'GET', url: companies(orgId), headers: { ...by.headers, origin: 'http://app.example.test' } });
  for (let n = 1; n <= 5; n += 1) {
    const res = await get(owner, organizationId);
    t.equal(res.statusCode, 200, `request ${n} is within the budget`);
    t.equal(res.headers['ratelimit-policy'], '"workspace";q=5;w=60');
    t.match(res.headers.ratelimit, new RegExp(`^"workspace";r=${5 - n};t=\\d+$`));
  }
  const refused = await get(owner, organizationId);
  t.equal(refused.statusCode, 429);
  t.match(refused.headers['content-type'], /^application\/problem\+json/);
  t.match(json(refused), { status: 429, code: 'request_budget_exceeded', detail: /workspace request budget/ });
  const retryAfter = Number(refused.headers['retry-after']);
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  t.match(refused.headers.ratelimit, /^"workspace";r=0;t=\d+$/);
  const exposed = String(refused.headers['access-control-expose-headers']).toLowerCase().split(/,\s*/);
  for (const name of ['retry-after', 'ratelimit', 'ratelimit-policy']) t.ok(exposed.includes(name), `CORS exposes ${name}`);
  // Another member of the same workspace shares its budget; another workspace has its own.
  const colleague = await createUser(app, { membership: { organizationId, role: 'member' } });
  t.equal((await get(colleague, organizationId)).statusCode, 429, 'the budget is the workspace’s, not the user’s');
  const served = await get(neighbour, other.id);
  t.equal(served.statusCode, 200, 'the neighbour is served');
  t.match(served.headers.ratelimit, /^"workspace";r=4;t=\d+$/);
  // Unauthenticated or foreign callers cannot spend a workspace's budget: they are refused before it is charged.
  t.equal((await get(neighbour, organizationId)).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: companies(other.id) })).statusCode, 401);
  t.match((await get(neighbour, other.id)).headers.ratelimit, /^"workspace";r=3;/);
  // Routes outside a workspace are not budgeted.
  const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: owner.headers });
  t.equal(me.statusCode, 200);
  t.notOk(me.headers.ratelimit);
});

t.test('an API key has its own budget on top of its workspace’s', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_WORKSPACE_PER_MINUTE: '10', RATE_LIMIT_API_KEY_PER_MINUTE: '3' });
  const { admin: owner, organizationId } = await setupInstallation(app);
  const key = await newKey(app, owner, organizationId);
  const withKey = () => app.inject({ method: 'GET', url: companies(organizationId), headers: { authorization: `Bearer ${key}` } });
  for (let n = 1; n <= 3; n += 1) {
    const res = await withKey();
    t.equal(res.statusCode, 200);
    t.equal(res.headers['ratelimit-policy'], '"workspace";q=10;w=60, "api-key";q=3;w=60');
    // The key's creation was the workspace's first request.
    t.match(res.headers.ratelimit, new RegExp(`^"workspace";r=${10 - 1 - n};t=\\d+, "api-key";r=${3 - n};t=\\d+$`));
  }
  const refused = await withKey();
  t.equal(refused.statusCode, 429);
  t.match(json(refused), { code: 'request_budget_exceeded', detail: /api-key request budget/ });
  t.ok(Number(refused.headers['retry-after']) >= 1);
  t.match(refused.headers.ratelimit, /"api-key";r=0;/);
  // The key creation and the key’s requests (the refused one too) counted against the workspace: 5 of 10 are spent.
  const person = await app.inject({ method: 'GET', url: companies(organizationId), headers: owner.headers });
  t.equal(person.statusCode, 200, 'people of the workspace are still served');
  t.match(person.headers.ratelimit, /^"workspace";r=4;t=\d+$/);
});

t.test('a caller refused a moment ago is refused again before any database work; others still go through authentication', async (t) => {
  const { app, databaseUrl } = await buildTestApp(t, { RATE_LIMIT_WORKSPACE_PER_MINUTE: '3', RATE_LIMIT_API_KEY_PER_MINUTE: '1000' });
  const { admin: owner, organizationId } = await setupInstallation(app);
  const key = await newKey(app, owner, organizationId); // the first request of the workspace's 3
  const get = (headers: Record<string, string>) => app.inject({ method: 'GET', url: companies(organizationId), headers });
  const byKey = { authorization: `Bearer ${key}` };
  for (let n = 0; n < 2; n += 1) t.equal((await get(owner.headers)).statusCode, 200);
  t.equal((await get(owner.headers)).statusCode, 429, 'over the budget: authenticated, charged, refused');
  t.equal((await get(byKey)).statusCode, 429, 'the key shares the workspace budget');
  // The membership and key lookups would now wait for this lock: the remembered callers are refused without them.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('LOCK TABLE memberships, api_keys IN ACCESS EXCLUSIVE MODE');
  for (const headers of [owner.headers, byKey]) {
    const again = await get(headers);
    t.equal(again.statusCode, 429);
    t.match(json(again), { code: 'request_budget_exceeded' });
    const wait = Number(again.headers['retry-after']);
    t.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    t.match(again.headers['ratelimit-policy'], /^"workspace";q=3;w=60/);
    t.match(again.headers.ratelimit, /^"workspace";r=0;t=\d+$/);
  }
  t.equal(await holder.lockWaiters(), 0, 'no request waited for the database');
  await holder.release();
  // A stranger is never refused from that memory: without a valid credential it is a 401, as before.
  t.equal((await get({ authorization: 'Bearer not-a-token' })).statusCode, 401);
  t.equal((await get({})).statusCode, 401);
  const stranger = await createUser(app);
  t.equal((await get(stranger.headers)).statusCode, 404, 'a non-member still learns nothing but 404');
});
