// The OpenAPI `webhooks` section: every trigger event has its delivery described (headers, named body schema), and a real delivery of each event validates against it.
import t from 'tap';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { multipartForm } from '../helpers/multipart.js';
import { startWebhookTarget } from './webhook-target.js';

const target = await startWebhookTarget(t);
const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);
const api = `/api/v1/organizations/${organizationId}`;

type Operation = {
  operationId: string;
  tags: string[];
  parameters: Array<{ name: string; in: string; required: boolean; deprecated?: boolean; description: string }>;
  requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
  responses: Record<string, unknown>;
};
const document = json<{
  webhooks: Record<string, { post: Operation }>;
  components: { schemas: Record<string, { enum?: string[] }> };
}>(await app.inject({ method: 'GET', url: '/openapi.json' }));
const TRIGGERS = document.components.schemas.AutomationTrigger?.enum ?? [];

async function call(method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const res = await app.inject({ method, url: `${api}${url}`, headers: admin.headers, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.body}`);
  return res.statusCode === 204 ? null : json(res);
}

t.test(
  'every trigger event has a webhook entry: POST, named body schema, Standard Webhooks headers, the deprecated one dated',
  async (t) => {
    t.ok(TRIGGERS.length >= 9, 'the trigger enum is read from the document');
    t.same(Object.keys(document.webhooks).sort(), [...TRIGGERS].sort(), 'one entry per trigger, no other');
    for (const event of TRIGGERS) {
      const operation = document.webhooks[event]?.post;
      if (!operation) {
        t.fail(`no webhook for ${event}`);
        continue;
      }
      t.same(operation.tags, ['webhooks'], event);
      const ref = operation.requestBody.content['application/json'].schema.$ref;
      const component = ref.replace('#/components/schemas/', '');
      t.ok(document.components.schemas[component], `${event}: its body is the named component ${component}`);
      const headers = new Map(operation.parameters.map((p) => [p.name, p]));
      for (const name of ['webhook-id', 'webhook-timestamp']) t.equal(headers.get(name)?.required, true, `${event}: ${name}`);
      t.equal(headers.get('webhook-signature')?.required, false, 'absent for a rule without a secret');
      t.match(headers.get('webhook-signature')?.description, /v1,/);
      t.equal(headers.get('X-Webhook-Signature')?.deprecated, true, 'the legacy signature is deprecated');
      t.match(headers.get('X-Webhook-Signature')?.description, /until 2027-06-01/, 'with its end date');
      t.ok(operation.responses['2XX'], 'what counts as received');
    }
    const operationIds = TRIGGERS.map((event) => document.webhooks[event]?.post.operationId);
    t.equal(new Set(operationIds).size, TRIGGERS.length, 'unique operationIds');
  },
);

t.test('a real delivery of each event verifies (standardwebhooks) and validates against its documented schema', async (t) => {
  const secrets = new Map<string, string>();
  for (const trigger of TRIGGERS) {
    const rule = await call('POST', '/automations/', {
      name: `${trigger} hook`,
      trigger,
      action_type: 'webhook',
      action_config: { url: `${target.url}?event=${trigger}`, generate_secret: true },
    });
    secrets.set(trigger, rule.action_config.secret);
  }
  // One change of each kind.
  const company = await call('POST', '/companies/', { name: 'Initech', lifecycle_stage: 'customer' });
  await call('PATCH', `/companies/${company.id}/`, { industry: 'Software' });
  const contact = await call('POST', '/contacts/', { company_id: company.id, first_name: 'Peter', last_name: 'Gibbons' });
  await call('PATCH', `/contacts/${contact.id}/`, { job_title: 'Engineer' });
  const deal = await call('POST', '/deals/', { title: 'Renewal', company_id: company.id });
  await call('POST', `/deals/${deal.id}/move/`, { stage: 'qualified', position: 0 });
  await call('POST', '/tasks/', { title: 'Call', company_id: company.id, workflow_status: 'completed' });
  await call('POST', '/notes/', { body: 'Called Peter', targets: [{ type: 'contact', id: contact.id }] });
  const { payload, contentType } = multipartForm({ kind: 'companies', file: 'name\nImported Co\n' });
  const imported = await app.inject({
    method: 'POST',
    url: `${api}/imports/`,
    headers: { ...admin.headers, 'content-type': contentType },
    payload,
  });
  t.equal(imported.statusCode, 202, imported.body);
  await call('DELETE', `/contacts/${contact.id}/`);
  const doomed = await call('POST', '/companies/', { name: 'Doomed Ltd' });
  await call('DELETE', `/companies/${doomed.id}/`);

  // Some changes deliver to more than one rule (an import's rows are no events, but a move is also an update): wait
  // until each event has arrived.
  const deliveryOf = (event: string) => target.requests.find((r) => r.path.endsWith(`?event=${event}`));
  while (!TRIGGERS.every(deliveryOf)) await target.waitForRequests(target.requests.length + 1, 30_000);
  const ajv = addFormats.default(new Ajv({ strict: false, allErrors: true }));
  ajv.addSchema({ $id: 'openapi', components: document.components });
  for (const event of TRIGGERS) {
    const delivery = deliveryOf(event);
    if (!delivery) {
      t.fail(`no delivery of ${event}`);
      continue;
    }
    const body = new Webhook(secrets.get(event)!).verify(delivery.body, {
      'webhook-id': String(delivery.headers['webhook-id']),
      'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
      'webhook-signature': String(delivery.headers['webhook-signature']),
    }) as { event: string };
    t.equal(body.event, event);
    const ref = document.webhooks[event]!.post.requestBody.content['application/json'].schema.$ref;
    const validate = ajv.getSchema(`openapi${ref}`)!;
    t.ok(validate(body), `${event}: ${JSON.stringify(validate.errors)}`);
    // And the documented schema is not vacuous: a body of another event does not pass it.
    const other = event.startsWith('company.') ? 'contact.created' : 'company.created';
    const wrong = { ...(body as object), event: other };
    t.notOk(validate(wrong), `${event}: a ${other} body is refused`);
  }
});
