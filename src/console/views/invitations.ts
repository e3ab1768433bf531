// The workspace invitations page and the installation administrators page.
import type { InstallationAdminService } from '../../modules/installation-admins/service.js';
import { html } from '../html.js';
import { INVITATION_STATUSES, type ConsoleInvitationService } from '../services/invitations.js';
import { layout, type Viewer } from './layout.js';
import { actionButton, dataTable, doneNotice, pager, select } from './widgets.js';

type InvitationPage = Awaited<ReturnType<ConsoleInvitationService['list']>>;
type AdminOverview = Awaited<ReturnType<InstallationAdminService['overview']>>;

export function invitationsPage(
  user: Viewer,
  notice: string,
  filter: { status: string; page: number },
  { rows, hasNext }: InvitationPage,
): string {
  const { status } = filter;
  return layout(
    { title: 'Invitations', user },
    html`
${doneNotice(notice)}
<form method="get" action="/admin/invitations/">
${select('status', 'Status', status, [['', 'any'], ...INVITATION_STATUSES.map((s): [string, string] => [s, s])])}
<button type="submit">Filter</button></form>
${dataTable(['Workspace', 'Email', 'Role', 'Status', 'Invited by', 'Expires', 'Action'], rows, (i) => [
  i.organization.name,
  i.email,
  i.role,
  i.status,
  i.invitedBy?.username ?? '',
  i.expiresAt,
  i.status === 'pending' && i.role !== 'owner' ? actionButton(`/admin/invitations/${i.id}/revoke/`, 'Revoke', user.csrf) : '',
])}
${pager('/admin/invitations/', { status }, filter.page, hasNext)}`,
  );
}

export function installationAdminsPage(user: Viewer, notice: string, { administrators, invitations }: AdminOverview): string {
  return layout(
    { title: 'Installation admins', user },
    html`
${doneNotice(notice)}
<h2>Administrators</h2>
<table><thead><tr><th scope="col">Username</th><th scope="col">Email</th></tr></thead><tbody>
${administrators.map((a) => html`<tr><td>${a.username}</td><td>${a.email}</td></tr>`)}
</tbody></table>
<h2>Pending invitations</h2>
<table><thead><tr><th scope="col">Email</th><th scope="col">Expires</th></tr></thead><tbody>
${invitations.map((i) => html`<tr><td>${i.email}</td><td>${i.expires_at}</td></tr>`)}
</tbody></table>
<h2>Invite an administrator</h2>
<form method="post" action="/admin/installation-admins/invite/"><input type="hidden" name="_csrf" value="${user.csrf}">
<p><label for="email">Email</label> <input id="email" name="email" type="email" autocomplete="off" required maxlength="254">
<button type="submit">Invite</button></p>
</form>`,
  );
}
