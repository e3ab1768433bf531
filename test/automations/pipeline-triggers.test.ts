// The deal.stage_changed and task.completed triggers: queued with the write that causes them (never for a change that
// is not one), delivered by the automation worker to a webhook with the record and, for a deal, its previous stage.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startWebhookTarget } from './webhook-target.js';

const { app } = await buildTestApp(t, { AUTOMATION_WEBHOOK_ALLOW_PRIVATE: 'true' });
const { admin, organizationId } = await setupInstallation(app);

const call = async (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: object) => {
  const res = await app.inject({
    method,
    url: `/api/v1/organizations/${organizationId}/${path}`,
    headers: admin.headers,
    ...(payload ? { payload } : {}),
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
  return json(res);
};
const queued = (trigger: string) => app.db.automationRun.count({ where: { trigger: trigger.replace('.', '_') as never } });

t.test('stage changes and completions reach their rules; other changes queue nothing', async (t) => {
  const target = await startWebhookTarget(t);
  for (const trigger of ['deal.stage_changed', 'task.completed']) {
    await call('POST', 'automations/', {
      name: trigger,
      trigger,
      action_type: 'webhook',
      action_config: { url: `${target.url}?t=${trigger}` },
      is_active: true,
    });
  }
  const company = await call('POST', 'companies/', { name: 'Acme' });
  const deal = await call('POST', 'deals/', { company_id: company.id, title: 'Big', value: '100' });
  const task = await call('POST', 'tasks/', { company_id: company.id, title: 'Call', deal_id: deal.id });

  await call('POST', `deals/${deal.id}/move/`, { stage: 'lead', position: 0 });
  await call('PATCH', `deals/${deal.id}/`, { title: 'Bigger' });
  await call('PATCH', `tasks/${task.id}/`, { workflow_status: 'in_progress' });
  t.equal(await queued('deal.stage_changed'), 0, 'a move within the stage is no stage change');
  t.equal(await queued('task.completed'), 0, 'another status is no completion');

  await call('POST', `deals/${deal.id}/move/`, { stage: 'proposal', position: 0 });
  await call('PATCH', `tasks/${task.id}/`, { workflow_status: 'completed' });
  await call('PATCH', `tasks/${task.id}/`, { workflow_status: 'completed', notes: 'again' });
  t.equal(await queued('deal.stage_changed'), 1);
  t.equal(await queued('task.completed'), 1, 'completing a completed task is no new completion');

  const requests = await target.waitForRequests(2);
  const byTrigger = Object.fromEntries(requests.map((r) => [new URL(r.path, 'http://x').searchParams.get('t'), JSON.parse(r.body)]));
  t.match(byTrigger['deal.stage_changed'], {
    event: 'deal.stage_changed',
    organization_id: organizationId,
    data: { id: deal.id, title: 'Bigger', stage: 'proposal', previous_stage: 'lead', position: 0, value: '100.00' },
  });
  t.match(byTrigger['task.completed'], {
    event: 'task.completed',
    data: { id: task.id, workflow_status: 'completed', completed_by: admin.id, deal_id: deal.id },
  });
});
