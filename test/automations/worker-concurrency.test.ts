// AUTOMATION_WORKER_CONCURRENCY bounds the runs one process executes at once: with 1, a webhook that does not answer
// holds the next run back until it times out, and the runs after it still go out, one at a time.
import t from 'tap';
import { WEBHOOK_TIMEOUT_MS } from '../../src/modules/automations/webhook.js';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startWebhookTarget } from './webhook-target.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true', AUTOMATION_WORKER_CONCURRENCY: '1' });
const { admin, organizationId } = await setupInstallation(app);
const api = `/api/v1/organizations/${organizationId}`;

t.test('one run at a time: the second webhook call waits for the first to end', async (t) => {
  const target = await startWebhookTarget(t);
  target.respondWith.push(0); // the first call is never answered: its run ends when the webhook times out
  for (const n of [1, 2, 3]) {
    const res = await app.inject({
      method: 'POST',
      url: `${api}/automations/`,
      headers: admin.headers,
      payload: { name: `hook ${n}`, trigger: 'company.created', action_type: 'webhook', action_config: { url: target.url } },
    });
    t.equal(res.statusCode, 201, json(res).detail);
  }
  const created = await app.inject({ method: 'POST', url: `${api}/companies/`, headers: admin.headers, payload: { name: 'Initech' } });
  t.equal(created.statusCode, 201);

  await target.waitForRequests(1);
  // Well within the timeout: with more than one run at a time, the other two calls would have arrived by now.
  await new Promise((resolve) => setTimeout(resolve, WEBHOOK_TIMEOUT_MS / 2));
  t.equal(target.requests.length, 1, 'the other runs wait while the first call hangs');
  await target.waitForRequests(3, WEBHOOK_TIMEOUT_MS * 2);
  t.equal(target.requests.length, 3, 'then the other two, each answered');
});
