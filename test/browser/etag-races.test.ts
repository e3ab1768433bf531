// ETags beyond etags.test.ts: weak and listed tags, empty-body and DELETE preconditions, 404 after a delete, and an
// If-Match PATCH waiting on a row another transaction changes (forced with a held lock) answering 412 once it commits.
import t from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { bearer, buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { holdLocks } from '../helpers/locks.js';

const { app, databaseUrl } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;
const auth = bearer(admin.access);
const ETAG = /^"[0-9a-z]+"$/;

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string> = {}, payload?: object) =>
  app.inject({ method, url, headers: { ...auth, ...headers }, ...(payload ? { payload } : {}) });
const etagOf = (res: LightMyRequestResponse) => String(res.headers.etag);

const company = json(await call('POST', `${base}/companies/`, {}, { name: 'Initech' }));
const collections = [
  { name: 'companies', create: { name: 'Umbrella' }, change: { name: 'Umbrella Corp' }, other: { name: 'Umbrella Inc' } },
  {
    name: 'contacts',
    create: { company_id: company.id, first_name: 'Ada', last_name: 'Lovelace' },
    change: { first_name: 'Augusta' },
    other: { last_name: 'King' },
  },
] as const;

for (const collection of collections) {
  const url = `${base}/${collection.name}/`;

  t.test(`${collection.name}: If-None-Match compares weakly and accepts lists and *`, async (t) => {
    const item = `${url}${json(await call('POST', url, {}, collection.create)).id}/`;
    const read = await call('GET', item);
    t.match(etagOf(read), ETAG);
    for (const header of [etagOf(read), `W/${etagOf(read)}`, `"0000", ${etagOf(read)}`, '*']) {
      const cached = await call('GET', item, { 'if-none-match': header });
      t.equal(cached.statusCode, 304, `If-None-Match: ${header}`);
      t.equal(cached.body, '', 'no body');
    }
    t.equal((await call('GET', item, { 'if-none-match': '"0123"' })).statusCode, 200, 'another tag: the record');
  });

  t.test(`${collection.name}: two tabs edit one record: the second If-Match PATCH is refused with 412`, async (t) => {
    const item = `${url}${json(await call('POST', url, {}, collection.create)).id}/`;
    const seen = etagOf(await call('GET', item));
    const first = await call('PATCH', item, { 'if-match': seen }, collection.change);
    t.equal(first.statusCode, 200, 'the first tab saves');
    const before = json(await call('GET', item));
    const second = await call('PATCH', item, { 'if-match': seen }, collection.other);
    t.equal(second.statusCode, 412, 'the second tab is told');
    t.match(second.headers['content-type'], /^application\/problem\+json/);
    t.equal(json(second).code, 'precondition_failed');
    t.same(json(await call('GET', item)), before, 'nothing changed');
    t.equal(
      (await call('PATCH', item, { 'if-match': `W/${etagOf(first)}` }, collection.other)).statusCode,
      412,
      'a weak tag never matches',
    );
    t.equal((await call('PATCH', item, { 'if-match': seen }, {})).statusCode, 412, 'an empty body is checked too');
    t.equal((await call('PATCH', item, { 'if-match': etagOf(first) }, {})).statusCode, 200);
    const retried = await call('PATCH', item, { 'if-match': `"stale", ${etagOf(first)}` }, collection.other);
    t.equal(retried.statusCode, 200, 'after reading again, the list naming the current tag saves');
    t.equal((await call('PATCH', item, { 'if-match': '*' }, collection.change)).statusCode, 200, '* matches any current record');

    const current = etagOf(await call('GET', item));
    const refused = await call('DELETE', item, { 'if-match': seen });
    t.equal(refused.statusCode, 412, 'DELETE at a stale ETag is refused');
    t.equal((await call('GET', item)).statusCode, 200, 'and deletes nothing');
    t.equal((await call('DELETE', item, { 'if-match': current })).statusCode, 204, 'at the current one it deletes');
    t.equal((await call('DELETE', item, { 'if-match': current })).statusCode, 404, 'a gone record is 404, not 412');
    t.equal((await call('PATCH', item, { 'if-match': current }, collection.change)).statusCode, 404);
  });

  t.test(`${collection.name}: a write committed while an If-Match PATCH waits for the row makes it 412`, async (t) => {
    const { id } = json(await call('POST', url, {}, collection.create));
    const item = `${url}${id}/`;
    const seen = etagOf(await call('GET', item));
    const holder = await holdLocks(t, databaseUrl);
    await holder.query(`UPDATE ${collection.name} SET updated_at = now() WHERE id = $1`, [id]);
    let settled = false;
    const pending = call('PATCH', item, { 'if-match': seen }, collection.change).finally(() => (settled = true));
    // The PATCH has checked nothing yet that could pass: it waits on the row the other transaction changed.
    await holder.waitForLockWaiters(1, () => settled);
    t.notOk(settled, 'the PATCH waits for the row');
    await holder.release();
    const res = await pending;
    t.equal(res.statusCode, 412, 're-checked on the committed version: refused');
    t.not(json(await call('GET', item))[Object.keys(collection.change)[0]!], Object.values(collection.change)[0], 'not applied');
  });
}

t.test('If-Match and If-None-Match are documented on the single-record operations', async (t) => {
  const document = json(await app.inject({ method: 'GET', url: '/openapi.json' }));
  const item = document.paths[`/api/v1/organizations/{organization_id}/companies/{company_id}/`];
  const headerNames = (operation: { parameters: { in: string; name: string }[] }) =>
    operation.parameters.filter((p) => p.in === 'header').map((p) => p.name);
  t.same(headerNames(item.get), ['if-none-match']);
  t.same(headerNames(item.patch), ['if-match']);
  t.same(headerNames(item.delete), ['if-match']);
  t.ok(item.get.responses['200'].headers.ETag && item.get.responses['304'], 'ETag and 304 on GET');
  t.equal(item.patch.responses['412'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem');
});
