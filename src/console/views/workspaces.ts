// The workspaces list and one workspace's page (members, record counts, shared identities, API keys, imports).
import { html } from '../html.js';
import type { ConsoleWorkspaceService } from '../services/workspaces.js';
import { layout, type Viewer } from './layout.js';
import { actionButton, dataTable, doneNotice, pager, select, yesNo } from './widgets.js';

type WorkspacePage = Awaited<ReturnType<ConsoleWorkspaceService['list']>>;
type WorkspaceDetail = NonNullable<Awaited<ReturnType<ConsoleWorkspaceService['detail']>>>;

const statusName = (s: string) => (s === 'pending_owner' ? 'pending handoff' : s);

export function workspacesPage(
  user: Viewer,
  filter: { search: string; status: string; page: number },
  { rows, hasNext }: WorkspacePage,
): string {
  const { search, status } = filter;
  return layout(
    { title: 'Workspaces', user },
    html`
<form method="get" action="/admin/organizations/">
<label for="search">Search</label> <input id="search" name="search" type="search" value="${search}">
${select('status', 'Status', status, [
  ['', 'any'],
  ['active', 'active'],
  ['pending_owner', 'pending handoff'],
  ['cancelled', 'cancelled'],
])}
<button type="submit">Filter</button></form>
${dataTable(['Name', 'Slug', 'Status', 'Kind', 'Owner', 'Members', 'Created'], rows, (o) => [
  html`<a href="/admin/organizations/${o.id}/">${o.name}</a>`,
  o.slug,
  statusName(o.status),
  o.isPersonal ? 'personal' : 'shared',
  o.memberships.map((m) => m.user.username).join(', ') || (o.ownerEmail ?? ''),
  String(o._count.memberships),
  o.createdAt,
])}
${pager('/admin/organizations/', { search, status }, filter.page, hasNext)}`,
  );
}

const keyState = (k: { revoked_at: string | null; expires_at: string | null }) =>
  k.revoked_at !== null
    ? `revoked ${k.revoked_at}`
    : k.expires_at !== null && Date.parse(k.expires_at) <= Date.now()
      ? 'expired'
      : 'active';

export function workspacePage(user: Viewer, notice: string, o: WorkspaceDetail): string {
  const { shared, keys } = o;
  const csrf = user.csrf;
  return layout(
    { title: `Workspace ${o.name}`, user },
    html`
${doneNotice(notice)}
<dl>
<dt>Name</dt><dd>${o.name}</dd>
<dt>Slug</dt><dd>${o.slug}</dd>
<dt>Status</dt><dd>${o.status === 'pending_owner' ? 'pending handoff' : o.status}</dd>
<dt>Kind</dt><dd>${o.isPersonal ? 'personal' : 'shared'}</dd><dt>Created</dt><dd>${o.createdAt}</dd>
<dt>Requires two-factor sign-in</dt><dd>${yesNo(o.requireTwoFactor)}</dd></dl>
${
  o.status === 'pending_owner'
    ? html`<h2>Pending handoff</h2><dl>
<dt>Owner email</dt><dd>${o.ownerEmail ?? ''}</dd>
<dt>Creator</dt><dd>${o.createdBy?.username ?? 'deleted user'}</dd>
</dl>
${actionButton(`/admin/organizations/${o.id}/resend-owner-invitation/`, 'Resend owner invitation', csrf)}
${actionButton(`/admin/organizations/${o.id}/cancel/`, 'Cancel workspace', csrf)}`
    : ''
}
<h2>Members</h2>
<table><thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Two-factor</th></tr></thead><tbody>
${o.memberships.map(
  (m) =>
    html`<tr><td><a href="/admin/users/${m.user.id}/">${m.user.username}</a></td><td>${m.role}</td><td>${m.user.twoFactorEnabledAt ? 'on' : 'off'}</td></tr>`,
)}
</tbody></table>
<h2>Records (counts only)</h2>
<table><thead><tr><th scope="col">Kind</th><th scope="col">Count</th></tr></thead><tbody>
<tr><th scope="row">Companies</th><td>${String(o._count.companies)}</td></tr>
<tr><th scope="row">Contacts</th><td>${String(o._count.contacts)}</td></tr>
<tr><th scope="row">Deals</th><td>${String(o._count.deals)}</td></tr>
<tr><th scope="row">Tasks</th><td>${String(o._count.tasks)}</td></tr>
<tr><th scope="row">Automations</th><td><a href="/admin/organizations/${o.id}/automations/">${String(o._count.automations)}</a></td></tr>
<tr><th scope="row">Automation runs</th><td>${String(o._count.runs)}</td></tr>
</tbody></table>
<h2>Companies that shared a tax id or email before duplicates were refused</h2>
${
  shared.length === 0
    ? html`<p>None.</p>`
    : html`<table><thead><tr><th scope="col">Shared field</th><th scope="col">Companies</th><th scope="col">Customer codes, oldest first</th></tr></thead><tbody>
${shared.map((g) => html`<tr><td>${g.field}</td><td>${String(g.companies)}</td><td>${g.codes.map((c) => c ?? '(none)').join(', ')}</td></tr>`)}
</tbody></table>`
}
<h2>API keys</h2>
${
  keys.length === 0
    ? html`<p>None.</p>`
    : dataTable(['Name', 'Prefix', 'Capabilities', 'Created by', 'Created', 'Last used', 'Expires', 'State', 'Action'], keys, (k) => [
        k.name,
        html`<code>${k.prefix}…</code>`,
        k.capabilities.join(', '),
        k.created_by_username ?? (k.created_by ? 'deleted user' : ''),
        k.created_at,
        k.last_used_at ?? 'never',
        k.expires_at ?? 'never',
        keyState(k),
        k.revoked_at === null ? actionButton(`/admin/organizations/${o.id}/api-keys/${k.id}/revoke/`, 'Revoke', csrf) : '',
      ])
}
<h2>Imports (latest 20)</h2>
<table><thead><tr><th scope="col">Started</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Rows</th><th scope="col">Processed</th><th scope="col">Created</th><th scope="col">Updated</th><th scope="col">Failed</th></tr></thead><tbody>
${o.imports.map(
  (i) =>
    html`<tr><td>${i.createdAt.toISOString()}</td><td>${i.kind}</td><td>${i.status}</td><td>${String(i.totalRows)}</td><td>${String(i.processedRows)}</td><td>${String(i.created)}</td><td>${String(i.updated)}</td><td>${String(i.failedRows)}</td></tr>`,
)}
</tbody></table>`,
  );
}
