// The audit log page: each row's actor, action, target and workspace, with names beside ids.
import { AUDIT_ACTIONS } from '../../audit/audit-log.js';
import { html } from '../html.js';
import type { ConsoleAuditService } from '../services/audit.js';
import { layout, type Viewer } from './layout.js';
import { dataTable, pager, select } from './widgets.js';

type AuditPage = Awaited<ReturnType<ConsoleAuditService['list']>>;

/** A name beside its id (ids stay: the record of a deleted user or workspace); `gone` marks a deleted one. */
const named = (name: string | null | undefined, id: string | null, gone: boolean) =>
  html`${name ? html`<strong>${name}</strong> ` : ''}<code>${id ?? ''}</code>${gone ? ' (deleted)' : ''}`;

/** A user with their current name, a workspace API key by its name and prefix (never its secret), else the kind. */
const actorCell = (r: AuditPage['rows'][number]) =>
  r.actorType === 'user'
    ? named(r.actorName ?? r.actorUsername, r.actorUserId, r.actorName === null)
    : r.actorType === 'api_key'
      ? html`API key <strong>${r.actorApiKeyName ?? ''}</strong> <code>${r.actorApiKeyPrefix ?? ''}…</code>`
      : r.actorType;

export function auditPage(user: Viewer, filter: { actor: string; action: string; page: number }, { rows, hasNext }: AuditPage): string {
  const { actor, action } = filter;
  return layout(
    { title: 'Audit log', user },
    html`
<form method="get" action="/admin/audit/">
<label for="actor">Actor</label> <input id="actor" name="actor" value="${actor}">
${select('action', 'Action', action, [['', 'any'], ...AUDIT_ACTIONS.map((a): [string, string] => [a, a])])}
<button type="submit">Filter</button></form>
${dataTable(['Time', 'Actor', 'Action', 'Target', 'Workspace', 'Client IP'], rows, (r) => [
  r.createdAt,
  actorCell(r),
  r.action,
  html`${r.targetType} ${r.targetId ? named(r.targetName, r.targetId, r.targetName === null) : ''}`,
  r.organizationId ? named(r.workspaceName, r.organizationId, r.workspaceName === null) : '',
  r.clientIp ?? '',
])}
${pager('/admin/audit/', { actor, action }, filter.page, hasNext)}`,
  );
}
