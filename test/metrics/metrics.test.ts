// /metrics: off by default, behind METRICS_TOKEN on the API port, or open on its own METRICS_PORT listener.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const TOKEN = 'metrics-token-0123456789-0123456789-abcdef';

t.test('not served by default', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 404);
  t.match(res.headers['content-type'], /^application\/problem\+json/);
});

t.test('METRICS_TOKEN: /metrics on the API port needs the token', async (t) => {
  const { app } = await buildTestApp(t, { METRICS_TOKEN: TOKEN });
  const { admin, organizationId } = await setupInstallation(app);
  await app.inject({ method: 'GET', url: `/api/v1/organizations/${organizationId}/companies/`, headers: admin.headers });
  for (const authorization of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, admin.headers.authorization]) {
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
    t.equal(res.statusCode, 401, `refused: ${authorization?.slice(0, 14) ?? 'no header'}`);
  }
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain/);
  const body = res.body;
  t.match(
    body,
    /crm_http_requests_total\{method="GET",route="\/api\/v1\/organizations\/:organization_id\/companies\/",status="200"\} 1/,
    'per route pattern and status',
  );
  t.match(
    body,
    new RegExp(
      'crm_http_request_duration_seconds_bucket\\{le="0.005",method="GET",' +
        'route="/api/v1/organizations/:organization_id/companies/",status="200"\\}',
    ),
    'latency histogram',
  );
  t.notMatch(body, new RegExp(organizationId), 'no ids in labels');
  t.match(body, /crm_pg_pool_connections\{state="total"\} \d+/);
  t.match(body, /crm_pg_pool_connections\{state="waiting"\} 0/);
  t.match(body, /nodejs_eventloop_lag_seconds \d/);
  t.match(body, /# TYPE crm_outbox_emails gauge/);
  t.match(body, /# TYPE crm_automation_runs gauge/);
});

t.test('METRICS_PORT: a listener of its own, queue depths by status', async (t) => {
  const { app } = await buildTestApp(t, { METRICS_PORT: '0' });
  const { admin, organizationId } = await setupInstallation(app);
  await app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${organizationId}/automations/`,
    headers: admin.headers,
    payload: {
      name: 'hook',
      trigger: 'company.created',
      action_type: 'webhook',
      action_config: { url: 'https://example.invalid/hook' },
      is_active: true,
    },
  });
  await app.db.emailOutbox.create({ data: { toAddress: 'a@example.test', subject: 's', status: 'failed' } });
  const { port } = app.metricsServer!.address() as { port: number };
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  t.equal(res.status, 200);
  const body = await res.text();
  t.match(body, /crm_outbox_emails\{status="failed"\} 1/);
  t.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'not on the API port without a token');
});
