// company.deleted and contact.deleted: a deletion queues its runs in the same statement, the worker delivers the record as it was, signed; a refused deletion queues nothing.
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startWebhookTarget } from './webhook-target.js';

const target = await startWebhookTarget(t);
const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const api = `/api/v1/organizations/${organizationId}`;

async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) {
  return app.inject({ method, url: `${api}${url}`, headers: { ...admin.headers, ...headers }, ...(payload ? { payload } : {}) });
}
async function hookRule(trigger: string): Promise<{ id: string; secret: string }> {
  const res = await call('POST', '/automations/', {
    name: `${trigger} hook`,
    trigger,
    action_type: 'webhook',
    action_config: { url: `${target.url}?t=${trigger}`, generate_secret: true },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return { id: json(res).id, secret: json(res).action_config.secret };
}
async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('deleting a contact and a company delivers contact.deleted and company.deleted with the records as they were', async (t) => {
  const companyRule = await hookRule('company.deleted');
  const contactRule = await hookRule('contact.deleted');
  const company = json(await call('POST', '/companies/', { name: 'Initech', lifecycle_stage: 'customer' }));
  const contact = json(await call('POST', '/contacts/', { company_id: company.id, first_name: 'Peter', last_name: 'Gibbons' }));
  const kept = json(await call('POST', '/contacts/', { company_id: company.id, first_name: 'Milton', last_name: 'Waddams' }));

  t.equal((await call('DELETE', `/contacts/${contact.id}/`)).statusCode, 204);
  // Queued by the deleting statement itself: the run exists as soon as the deletion has answered.
  const queued = await app.db.automationRun.findMany({ where: { automationId: contactRule.id } });
  t.equal(queued.length, 1, 'the run committed with the deletion');
  const contactDelivery = await until('contact.deleted delivery', () => target.requests.find((r) => r.path.includes('contact.deleted')));
  const contactEvent = new Webhook(contactRule.secret).verify(contactDelivery.body, {
    'webhook-id': String(contactDelivery.headers['webhook-id']),
    'webhook-timestamp': String(contactDelivery.headers['webhook-timestamp']),
    'webhook-signature': String(contactDelivery.headers['webhook-signature']),
  }) as { event: string; organization_id: string; data: Record<string, unknown> };
  t.equal(contactEvent.event, 'contact.deleted');
  t.equal(contactEvent.organization_id, organizationId);
  t.same(contactEvent.data, contact, 'the record as the API returned it before the deletion');
  t.equal(contactDelivery.headers['x-webhook-event'], 'contact.deleted');

  t.equal((await call('DELETE', `/companies/${company.id}/`)).statusCode, 204);
  const companyDelivery = await until('company.deleted delivery', () => target.requests.find((r) => r.path.includes('company.deleted')));
  const companyEvent = new Webhook(companyRule.secret).verify(companyDelivery.body, {
    'webhook-id': String(companyDelivery.headers['webhook-id']),
    'webhook-timestamp': String(companyDelivery.headers['webhook-timestamp']),
    'webhook-signature': String(companyDelivery.headers['webhook-signature']),
  }) as { event: string; data: Record<string, unknown> };
  t.equal(companyEvent.event, 'company.deleted');
  t.same(companyEvent.data, company);
  t.equal((await call('GET', `/contacts/${kept.id}/`)).statusCode, 404, 'its contacts went with it');
  const contactRuns = await app.db.automationRun.findMany({ where: { automationId: contactRule.id } });
  t.equal(contactRuns.length, 1, 'no contact.deleted for the contacts a company deletion takes along (documented)');
  const runs = json(await call('GET', `/automations/${companyRule.id}/runs/`));
  t.match(runs, [{ trigger: 'company.deleted', payload: { event: 'company.deleted', data: { id: company.id } } }]);
});

t.test('a refused deletion (412, 404) queues no run', async (t) => {
  const rule = await hookRule('company.deleted');
  const company = json(await call('POST', '/companies/', { name: 'Globex' }));
  const stale = await call('DELETE', `/companies/${company.id}/`, undefined, { 'if-match': '"2001-01-01T00:00:00.000Z"' });
  t.equal(stale.statusCode, 412);
  t.equal((await call('DELETE', '/companies/00000000-0000-4000-8000-000000000000/')).statusCode, 404);
  t.equal(await app.db.automationRun.count({ where: { automationId: rule.id } }), 0);
  t.equal((await call('GET', `/companies/${company.id}/`)).statusCode, 200, 'still there');
});
