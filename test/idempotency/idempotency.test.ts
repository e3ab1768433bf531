// Idempotency-Key on the creating POSTs: a retry gets the first answer and creates nothing; misuse answers 422/409/400.
import t from 'tap';
import pg from 'pg';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';

const mailbox = await startMailbox(t);
const { app, databaseUrl } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app, mailbox);
const org = `/api/v1/organizations/${organizationId}`;
const seedCompany = json(await app.inject({ method: 'POST', url: `${org}/companies/`, headers: admin.headers, payload: { name: 'Seed' } }))
  .id as string;
const count = async (table: string) => Number((await app.pg.query(`SELECT count(*) FROM ${table}`)).rows[0].count);

let keyCounter = 0;
const newKey = () => {
  keyCounter += 1;
  return `key-${Date.now()}-${keyCounter}`;
};
const post = (url: string, payload: object, key: string | undefined, headers = admin.headers) =>
  app.inject({ method: 'POST', url, headers: { ...headers, ...(key ? { 'idempotency-key': key } : {}) }, payload });

const kinds: Array<{ name: string; url: string; table: string; body: () => object; other: () => object }> = [
  {
    name: 'company',
    url: `${org}/companies/`,
    table: 'companies',
    body: () => ({ name: 'Acme Ltd' }),
    other: () => ({ name: 'Other Ltd' }),
  },
  {
    name: 'contact',
    url: `${org}/contacts/`,
    table: 'contacts',
    body: () => ({ company_id: seedCompany, first_name: 'Ada', last_name: 'L' }),
    other: () => ({ company_id: seedCompany, first_name: 'Bob', last_name: 'L' }),
  },
  {
    name: 'automation',
    url: `${org}/automations/`,
    table: 'automations',
    body: () => ({ name: 'Hook', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'https://example.com/h' } }),
    other: () => ({ name: 'Hook 2', trigger: 'company.created', action_type: 'webhook', action_config: { url: 'https://example.com/h' } }),
  },
  {
    name: 'invitation',
    url: `${org}/invitations/`,
    table: 'invitations',
    body: () => ({ email: 'idem@example.test', role: 'member' }),
    other: () => ({ email: 'idem2@example.test', role: 'member' }),
  },
  {
    name: 'workspace',
    url: '/api/v1/organizations/',
    table: 'organizations',
    body: () => ({ name: 'Idem Co', owner_email: 'owner@example.test' }),
    other: () => ({ name: 'Idem Two', owner_email: 'owner2@example.test' }),
  },
];

for (const kind of kinds) {
  t.test(
    `${kind.name}: a retry with the same key replays the first answer and creates nothing; another request with it → 422`,
    async (t) => {
      const key = newKey();
      const first = await post(kind.url, kind.body(), key);
      t.equal(first.statusCode, 201, first.body);
      const rows = await count(kind.table);
      const retry = await post(kind.url, kind.body(), key);
      t.equal(retry.statusCode, 201);
      t.equal(retry.headers['idempotent-replayed'], 'true');
      t.same(json(retry), json(first), 'the first answer');
      t.match(retry.headers['content-type'], /^application\/json/);
      t.equal(await count(kind.table), rows, 'nothing new');
      const misuse = await post(kind.url, kind.other(), key);
      t.equal(misuse.statusCode, 422);
      t.match(json(misuse), { code: 'idempotency_key_reused' });
      t.equal(await count(kind.table), rows, 'nothing new');
    },
  );
}

t.test('personal workspace: replayed too', async (t) => {
  const user = await createUser(app);
  const key = newKey();
  const first = await post('/api/v1/organizations/personal/', {}, key, user.headers);
  t.equal(first.statusCode, 201);
  const retry = await post('/api/v1/organizations/personal/', {}, key, user.headers);
  t.equal(retry.statusCode, 201, 'not the 409 of a second personal workspace');
  t.same(json(retry), json(first));
});

t.test('keys are per user: the same key of another user is unrelated, and never serves the first user’s answer', async (t) => {
  const other = await createUser(app, { membership: { organizationId, role: 'member' } });
  const key = newKey();
  const mine = await post(`${org}/companies/`, { name: 'Mine' }, key);
  const theirs = await post(`${org}/companies/`, { name: 'Mine' }, key, other.headers);
  t.equal(theirs.statusCode, 201);
  t.equal(theirs.headers['idempotent-replayed'], undefined);
  t.not(json(theirs).id, json(mine).id, 'a record of its own');
});

t.test('a workspace API key has a key space of its own: its retries replay, never a user’s or another key’s answer', async (t) => {
  const createKey = async (name: string) => {
    const res = await app.inject({
      method: 'POST',
      url: `${org}/api-keys/`,
      headers: admin.headers,
      payload: { name, capabilities: ['VIEW_CRM', 'MANAGE_CRM'] },
    });
    t.equal(res.statusCode, 201);
    return { id: json(res).id as string, headers: { authorization: `Bearer ${json(res).key as string}` } };
  };
  const [billing, sync] = [await createKey('Billing'), await createKey('Sync')];
  const key = newKey();
  const before = await count('companies');
  const first = await post(`${org}/companies/`, { name: 'Keyed Ltd' }, key, billing.headers);
  t.equal(first.statusCode, 201);
  const retry = await post(`${org}/companies/`, { name: 'Keyed Ltd' }, key, billing.headers);
  t.equal(retry.statusCode, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true', 'the retry of a key replays');
  t.same(json(retry), json(first));
  t.equal(await count('companies'), before + 1, 'one record for two requests');
  const changed = await post(`${org}/companies/`, { name: 'Other Ltd' }, key, billing.headers);
  t.equal(changed.statusCode, 422, 'the same Idempotency-Key for another request of the key');
  const otherKey = await post(`${org}/companies/`, { name: 'Keyed Ltd' }, key, sync.headers);
  t.equal(otherKey.headers['idempotent-replayed'], undefined, 'another API key: unrelated');
  t.not(json(otherKey).id, json(first).id);
  const person = await post(`${org}/companies/`, { name: 'Keyed Ltd' }, key);
  t.equal(person.headers['idempotent-replayed'], undefined, 'a user with the same Idempotency-Key: unrelated');
  t.not(json(person).id, json(first).id);
  t.equal(await count('api_key_idempotency_keys'), 2, 'one entry per key');
  const revoked = await app.inject({ method: 'DELETE', url: `${org}/api-keys/${billing.id}/`, headers: admin.headers });
  t.equal(revoked.statusCode, 204);
  const replayAfterRevoke = await post(`${org}/companies/`, { name: 'Keyed Ltd' }, key, billing.headers);
  t.equal(replayAfterRevoke.statusCode, 401, 'a revoked key gets no replay either');
});

t.test('without the header nothing changes; a malformed key → 400', async (t) => {
  const before = await count('companies');
  t.equal((await post(`${org}/companies/`, { name: 'No key' }, undefined)).statusCode, 201);
  t.equal((await post(`${org}/companies/`, { name: 'No key' }, undefined)).statusCode, 201);
  t.equal(await count('companies'), before + 2);
  for (const bad of ['has space', 'x'.repeat(256), 'é']) {
    const res = await post(`${org}/companies/`, { name: 'Bad key' }, bad);
    t.equal(res.statusCode, 400, JSON.stringify(bad).slice(0, 20));
    t.match(json(res), { errors: { 'idempotency-key': [String] } });
  }
  t.equal(await count('companies'), before + 2);
});

t.test('a failed first request frees the key: the retry runs again', async (t) => {
  const key = newKey();
  const foreign = '00000000-0000-4000-8000-000000000000';
  t.equal((await post(`${org}/contacts/`, { company_id: foreign, first_name: 'X', last_name: 'Y' }, key)).statusCode, 400);
  t.equal(
    (await post(`${org}/contacts/`, { company_id: foreign, first_name: 'X', last_name: 'Y' }, key)).statusCode,
    400,
    'ran again, not replayed',
  );
  t.equal(
    (await post(`${org}/contacts/`, { company_id: seedCompany, first_name: 'X', last_name: 'Y' }, key)).statusCode,
    201,
    'and the key is usable',
  );
});

t.test('after 24 hours the key is free again', async (t) => {
  const key = newKey();
  t.equal((await post(`${org}/companies/`, { name: 'Day one' }, key)).statusCode, 201);
  await app.pg.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1`, [key]);
  const later = await post(`${org}/companies/`, { name: 'Day two' }, key);
  t.equal(later.statusCode, 201);
  t.equal(json(later).name, 'Day two');
});

t.test('a duplicate while the first is still being handled → 409, and only one record', async (t) => {
  const key = newKey();
  const locker = new pg.Client({ connectionString: databaseUrl });
  await locker.connect();
  t.teardown(() => locker.end());
  // The first request's insert waits on this lock (its foreign key needs the organization row), after claiming the key.
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
  const before = await count('companies');
  const first = post(`${org}/companies/`, { name: 'Racing' }, key);
  for (let i = 0; i < 100 && (await app.pg.query('SELECT 1 FROM idempotency_keys WHERE key = $1', [key])).rowCount === 0; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const duplicate = await post(`${org}/companies/`, { name: 'Racing' }, key);
  t.equal(duplicate.statusCode, 409);
  t.match(json(duplicate), { code: 'idempotency_request_in_progress' });
  await locker.query('COMMIT');
  t.equal((await first).statusCode, 201);
  t.equal(await count('companies'), before + 1, 'one record');
  const retry = await post(`${org}/companies/`, { name: 'Racing' }, key);
  t.equal(retry.statusCode, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
});
