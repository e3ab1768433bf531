// The users list and one user's page (profile, memberships, API sessions, actions).
import type { SessionService } from '../../modules/sessions/service.js';
import { html } from '../html.js';
import type { ConsoleUserService, UserFilter } from '../services/users.js';
import { layout, type Viewer } from './layout.js';
import { actionButton, dataTable, doneNotice, pager, select, yesNo } from './widgets.js';

type UserPage = Awaited<ReturnType<ConsoleUserService['list']>>;
type UserDetail = NonNullable<Awaited<ReturnType<ConsoleUserService['detail']>>>;
type ApiSessions = Awaited<ReturnType<SessionService['list']>>;

const CHOICES: [string, string][] = [
  ['', 'any'],
  ['yes', 'yes'],
  ['no', 'no'],
];

export function usersPage(user: Viewer, filter: UserFilter, { rows, hasNext }: UserPage): string {
  return layout(
    { title: 'Users', user },
    html`
<form method="get" action="/admin/users/">
<label for="search">Search</label> <input id="search" name="search" type="search" value="${filter.search}">
${select('staff', 'Staff', filter.staff, CHOICES)} ${select('active', 'Active', filter.active, CHOICES)}
<button type="submit">Filter</button>
</form>
${dataTable(['Username', 'Email', 'Staff', 'Superuser', 'Active', 'Date joined', 'Last sign-in'], rows, (u) => [
  html`<a href="/admin/users/${u.id}/">${u.username}</a>`,
  u.email,
  yesNo(u.isStaff),
  yesNo(u.isSuperuser),
  yesNo(u.isActive),
  u.dateJoined,
  u.lastLogin ?? 'never',
])}
${rows.length === 0 ? html`<p>No users match.</p>` : ''}
${pager('/admin/users/', { search: filter.search, staff: filter.staff, active: filter.active }, filter.page, hasNext)}`,
  );
}

export function userPage(viewer: Viewer, notice: string, user: UserDetail, apiSessions: ApiSessions): string {
  const base = `/admin/users/${user.id}`;
  const csrf = viewer.csrf;
  return layout(
    { title: `User ${user.username}`, user: viewer },
    html`
${doneNotice(notice)}
<h2>Profile</h2>
<dl><dt>Username</dt><dd>${user.username}</dd><dt>Email</dt><dd>${user.email}</dd><dt>Staff</dt><dd>${yesNo(user.isStaff)}</dd>
<dt>Superuser</dt><dd>${yesNo(user.isSuperuser)}</dd>
<dt>Active</dt><dd>${yesNo(user.isActive)}</dd>
<dt>Date joined</dt><dd>${user.dateJoined}</dd>
<dt>Last sign-in</dt><dd>${user.lastLogin ?? 'never'}</dd><dt>Live console sessions</dt><dd>${String(user.liveSessions)}</dd>
<dt>Two-factor sign-in</dt><dd>${user.twoFactorEnabledAt ? 'on' : 'off'}</dd></dl>
<h2>Memberships</h2>
<table><thead><tr><th scope="col">Workspace</th><th scope="col">Slug</th><th scope="col">Role</th><th scope="col">Requires two-factor</th></tr></thead><tbody>
${user.memberships.map(
  (m) =>
    html`<tr><td>${m.organization.name}</td><td>${m.organization.slug}</td><td>${m.role}</td><td>${yesNo(m.organization.requireTwoFactor)}</td></tr>`,
)}
</tbody></table>
<h2>API sessions</h2>
${dataTable(['Signed in', 'Last used', 'Client', 'Address', ''], apiSessions, (s) => [
  s.created_at,
  s.last_used_at,
  s.user_agent ?? '',
  s.client_ip ?? '',
  actionButton(`${base}/sessions/${s.id}/end/`, 'End session', csrf),
])}
<h2>Actions</h2>
${user.isActive ? actionButton(`${base}/deactivate/`, 'Deactivate', csrf) : actionButton(`${base}/reactivate/`, 'Reactivate', csrf)}
${actionButton(`${base}/sign-out-everywhere/`, 'Sign out everywhere', csrf)}
${actionButton(`${base}/send-password-reset/`, 'Send password reset', csrf)}`,
  );
}
