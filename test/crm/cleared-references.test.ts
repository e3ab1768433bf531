// A reference cleared by a deletion elsewhere (a contact under a deal or task, a deal under a task, a user under the
// assignee of a company or contact) is a new version of the record that held it: a new ETag, If-None-Match naming the
// old one answers 200 with the cleared field, If-Match naming it is refused, and the incremental sync hands it out.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, deleteAccount, setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, headers: Record<string, string> = {}, payload?: object) =>
  app.inject({ method, url: `${base}/${path}`, headers: { ...admin.headers, ...headers }, ...(payload ? { payload } : {}) });
const created = async (res: Promise<LightMyRequestResponse>) => {
  const done = await res;
  if (done.statusCode !== 201) throw new Error(done.body);
  return json<{ id: string; updated_at: string }>(done);
};
const etagOf = async (path: string) => String((await call('GET', path)).headers.etag);

/** The record was changed under its old tag: a new tag, a full answer to the old one, a write with it refused. */
async function newVersion(t: Test, path: string, oldTag: string, field: string, change: object) {
  const res = await call('GET', path, { 'if-none-match': oldTag });
  t.equal(res.statusCode, 200, `${path}: If-None-Match with the old tag answers the record`);
  t.equal(json<Record<string, unknown>>(res)[field], null, `${path}: ${field} cleared`);
  t.not(res.headers.etag, oldTag, `${path}: a new ETag`);
  const stale = await call('PATCH', path, { 'if-match': oldTag }, change);
  t.equal(stale.statusCode, 412, `${path}: If-Match with the old tag is refused`);
}

const acme = await created(call('POST', 'companies/', {}, { name: 'Acme' }));

t.test('deleting a contact clears it on its deals and tasks, each as a new version', async (t) => {
  const contact = await created(call('POST', 'contacts/', {}, { company_id: acme.id, first_name: 'Ada', last_name: 'Lovelace' }));
  const deal = await created(call('POST', 'deals/', {}, { company_id: acme.id, contact_id: contact.id, title: 'Renewal' }));
  const task = await created(call('POST', 'tasks/', {}, { company_id: acme.id, contact_id: contact.id, title: 'Call Ada' }));
  const tags = { deal: await etagOf(`deals/${deal.id}/`), task: await etagOf(`tasks/${task.id}/`) };
  t.equal((await call('DELETE', `contacts/${contact.id}/`)).statusCode, 204);
  await newVersion(t, `deals/${deal.id}/`, tags.deal, 'contact_id', { title: 'Stale' });
  await newVersion(t, `tasks/${task.id}/`, tags.task, 'contact_id', { title: 'Stale' });
});

t.test('deleting a deal clears it on its tasks as a new version', async (t) => {
  const deal = await created(call('POST', 'deals/', {}, { company_id: acme.id, title: 'Expansion' }));
  const task = await created(call('POST', 'tasks/', {}, { company_id: acme.id, deal_id: deal.id, title: 'Send the quote' }));
  const tag = await etagOf(`tasks/${task.id}/`);
  t.equal((await call('DELETE', `deals/${deal.id}/`)).statusCode, 204);
  await newVersion(t, `tasks/${task.id}/`, tag, 'deal_id', { title: 'Stale' });
});

t.test('a deleted account clears its assignments as new versions, and the sync hands them out', async (t) => {
  const dora = await createUser(app, { username: 'dora', membership: { organizationId, role: 'member' } });
  const company = await created(call('POST', 'companies/', {}, { name: 'Initech', assigned_to: dora.id }));
  const contact = await created(
    call('POST', 'contacts/', {}, { company_id: company.id, first_name: 'Bill', last_name: 'Lumbergh', assigned_to: dora.id }),
  );
  const tags = { company: await etagOf(`companies/${company.id}/`), contact: await etagOf(`contacts/${contact.id}/`) };
  // A client that synced up to now: the cleared assignee is a change after this instant.
  const since = new Date(Math.max(Date.parse(company.updated_at), Date.parse(contact.updated_at))).toISOString();
  t.equal((await deleteAccount(app, dora)).statusCode, 204);
  await newVersion(t, `companies/${company.id}/`, tags.company, 'assigned_to', { name: 'Stale' });
  await newVersion(t, `contacts/${contact.id}/`, tags.contact, 'assigned_to', { first_name: 'Stale' });

  for (const [collection, id] of [
    ['companies', company.id],
    ['contacts', contact.id],
  ] as const) {
    // Changes are handed out once every older transaction of the cluster has ended (other test files may hold one).
    let found: Record<string, unknown> | undefined;
    for (let attempt = 0; attempt < 100 && !found; attempt++) {
      const res = await call('GET', `${collection}/?updated_since=${encodeURIComponent(since)}&limit=100`);
      found = json<Array<Record<string, unknown>>>(res).find((record) => record.id === id);
      if (!found) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.equal(found?.assigned_to, null, `${collection}: the sync after the last write hands out the cleared assignee`);
  }
});
