// Automations cannot turn the installation's SMTP into a relay: members-only through the fallback, hourly cap per workspace.
import t, { type Test } from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';

async function scenery(t: Test, env: Record<string, string> = {}) {
  const mailbox = await startMailbox(t);
  const { app } = await buildTestApp(t, env);
  const { admin, organizationId } = await setupInstallation(app, mailbox);
  const mate = await createUser(app, { email: 'mate@example.test', membership: { organizationId, role: 'member' } });
  const api = `/api/v1/organizations/${organizationId}`;
  const call = async (method: 'GET' | 'POST', path: string, payload?: object) =>
    json(await app.inject({ method, url: `${api}${path}`, headers: admin.headers, ...(payload ? { payload } : {}) }));
  const rule = (name: string, to: string[]) =>
    call('POST', '/automations/', {
      name,
      trigger: 'company.created',
      action_type: 'send_email',
      action_config: { to, subject: name, body: 'Hello.' },
    });
  /** Polls the rule's runs until `count` of them are finished (the worker polls every 200 ms in tests). */
  async function finishedRuns(ruleId: string, count: number): Promise<Array<{ status: string; error_message: string | null }>> {
    for (;;) {
      const runs = (await call('GET', `/automations/${ruleId}/runs/`)) as Array<{ status: string; error_message: string | null }>;
      if (runs.filter((r) => r.status !== 'queued' && r.status !== 'running').length >= count) return runs;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { app, mailbox, mate, call, rule, finishedRuns };
}

t.test('through the installation fallback, automations may only mail the workspace members', async (t) => {
  const { mailbox, mate, call, rule, finishedRuns } = await scenery(t);
  const relay = await rule('Relay', ['stranger@example.test', mate.email]);
  const team = await rule('Team', [mate.email]);
  await call('POST', '/companies/', { name: 'Initech' });
  const [refused] = await finishedRuns(relay.id, 1);
  t.equal(refused!.status, 'skipped', 'a rule mailing a non-member is skipped');
  t.match(refused!.error_message, /only email its members \(1 recipient\(s\) are not members\)/);
  const [sent] = await finishedRuns(team.id, 1);
  t.equal(sent!.status, 'success', 'a rule mailing members is sent');
  await mailbox.waitFor((m) => m.subject === 'Team');
  t.equal(mailbox.messages.filter((m) => m.to.includes('stranger@example.test')).length, 0, 'nothing reached the stranger');

  const tested = await call('POST', `/automations/${relay.id}/test/`, {});
  t.equal(tested.status, 'skipped', 'test runs obey the policy too');

  // With its own email account, the workspace sends through it to whomever it likes.
  const own = await startMailbox(t, { username: 'own-user', password: 'own-secret-Pw44' });
  await call('POST', '/email-accounts/', own.smtpConfig({ name: 'Own', is_default: true }));
  const ownRun = await call('POST', `/automations/${relay.id}/test/`, {});
  t.equal(ownRun.status, 'success');
  t.equal((await own.waitForTo('stranger@example.test')).authUser, 'own-user');
});

t.test('a workspace sends at most AUTOMATION_EMAILS_PER_HOUR automation emails per hour', async (t) => {
  const { mailbox, mate, call, rule, finishedRuns } = await scenery(t, { AUTOMATION_EMAILS_PER_HOUR: '2' });
  const team = await rule('Capped', [mate.email]);
  for (const name of ['One', 'Two', 'Three']) await call('POST', '/companies/', { name });
  const runs = await finishedRuns(team.id, 3);
  t.same(runs.map((r) => r.status).sort(), ['skipped', 'success', 'success'], 'two sent, the third skipped');
  t.match(runs.find((r) => r.status === 'skipped')!.error_message, /limit of 2 automation emails per hour/);
  await mailbox.waitFor((m) => m.subject === 'Capped' && mailbox.messages.filter((x) => x.subject === 'Capped').length === 2);
  t.equal((await call('POST', `/automations/${team.id}/test/`, {})).status, 'skipped', 'test runs count against the same cap');
});
