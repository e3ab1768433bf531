// The pages of the background work: the email outbox and the automation runs.
import { html } from '../html.js';
import { RUN_STATUSES, type ConsoleRunService } from '../services/automation-runs.js';
import type { ConsoleOutboxService } from '../services/outbox.js';
import { layout, type Viewer } from './layout.js';
import { actionButton, dataTable, doneNotice, pager, select } from './widgets.js';

type OutboxPage = Awaited<ReturnType<ConsoleOutboxService['list']>>;
type RunPage = Awaited<ReturnType<ConsoleRunService['list']>>;

export function outboxPage(user: Viewer, notice: string, filter: { status: string; page: number }, { rows, hasNext }: OutboxPage): string {
  const current = filter.status;
  return layout(
    { title: 'Email outbox', user },
    html`
${doneNotice(notice)}
<form method="get" action="/admin/outbox/">${select('status', 'Status', current, [
      ['', 'any'],
      ['pending', 'queued'],
      ['sent', 'sent'],
      ['failed', 'failed'],
    ])} <button type="submit">Filter</button></form>
${dataTable(['Kind', 'Recipient', 'Status', 'Attempts', 'Next attempt', 'Last error', 'Created', 'Action'], rows, (e) => [
  e.subject,
  e.toAddress,
  e.status === 'pending' ? 'queued' : e.status,
  String(e.attempts),
  e.status === 'pending' ? e.nextAttemptAt : '',
  e.lastError ?? '',
  e.createdAt,
  e.status === 'failed' ? actionButton(`/admin/outbox/${e.id}/retry/`, 'Retry', user.csrf) : '',
])}
${pager('/admin/outbox/', { status: current }, filter.page, hasNext)}`,
  );
}

export function runsPage(user: Viewer, filter: { status: string; page: number }, { rows, hasNext }: RunPage): string {
  const { status } = filter;
  return layout(
    { title: 'Automation runs', user },
    html`
<form method="get" action="/admin/automation-runs/">
${select('status', 'Status', status, [['', 'any'], ...RUN_STATUSES.map((s): [string, string] => [s, s])])}
<button type="submit">Filter</button></form>
${dataTable(['Workspace', 'Rule', 'Trigger', 'Status', 'Error message', 'Created', 'Finished'], rows, (r) => [
  r.organization.name,
  r.automation.name ?? '(deleted rule)',
  r.trigger,
  r.status,
  r.errorMessage ?? '',
  r.createdAt,
  r.finishedAt ?? '',
])}
${pager('/admin/automation-runs/', { status }, filter.page, hasNext)}`,
  );
}
