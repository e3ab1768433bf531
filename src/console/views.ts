// The console's HTML pages: one layout with the navigation, and one function per page; every value is escaped.
import { html, type Safe } from './html.js';

export interface PageContext {
  title: string;
  /** Signed-in username and the session's CSRF token; absent on the sign-in and error pages. */
  user?: { username: string; csrf: string };
}

const NAV: [string, string][] = [
  ['Dashboard', '/admin/'],
  ['Users', '/admin/users/'],
  ['Workspaces', '/admin/organizations/'],
  ['Invitations', '/admin/invitations/'],
  ['Installation admins', '/admin/installation-admins/'],
  ['Email outbox', '/admin/outbox/'],
  ['Automation runs', '/admin/automation-runs/'],
  ['Audit log', '/admin/audit/'],
  ['Readiness', '/admin/readiness/'],
];

export function layout(ctx: PageContext, body: Safe): string {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${ctx.title} · CRM admin</title><link rel="stylesheet" href="/admin/static/console.css"></head>
<body>
<header><strong>CRM admin</strong>${
    ctx.user
      ? html`
<nav aria-label="Console">${NAV.map(([name, href]) => html` <a href="${href}">${name}</a>`)}</nav>
<form method="post" action="/admin/logout/"><input type="hidden" name="_csrf" value="${ctx.user.csrf}">
<span>${ctx.user.username}</span> <button type="submit">Sign out</button></form>`
      : ''
  }
</header>
<main>
<h1>${ctx.title}</h1>
${body}
</main>
</body>
</html>
`.value;
}

/** A POST button carrying the CSRF token. */
export const actionButton = (action: string, label: string, csrf: string) =>
  html`<form method="post" action="${action}"><input type="hidden" name="_csrf" value="${csrf}">
<button type="submit">${label}</button></form>`;

export const yesNo = (value: boolean) => (value ? 'yes' : 'no');

export function loginPage(error: string | null, next: string, username: string): string {
  return layout(
    { title: 'Sign in' },
    html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/admin/login/">
<input type="hidden" name="next" value="${next}">
<p><label for="username">Username</label> <input id="username" name="username" autocomplete="username" required value="${username}"></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

export function errorPage(status: number, title: string, message: string, user?: PageContext['user']): string {
  return layout(
    { title, ...(user ? { user } : {}) },
    html`<p class="error">${message}</p><p>Status ${String(status)}. <a href="/admin/">Back to the dashboard</a></p>`,
  );
}

/** Previous/next links keeping the current filters. */
export function pager(base: string, params: Record<string, string>, page: number, hasNext: boolean): Safe {
  const link = (p: number) => `${base}?${new URLSearchParams({ ...params, page: String(p) }).toString()}`;
  const previous = page > 1 ? html`<a href="${link(page - 1)}" rel="prev">Previous</a> ` : '';
  const next = hasNext ? html` <a href="${link(page + 1)}" rel="next">Next</a>` : '';
  return html`<nav aria-label="Pages"><p>${previous}Page ${String(page)}${next}</p></nav>`;
}

/** A select of choices with the current one selected. */
export function select(id: string, label: string, current: string, choices: [string, string][]): Safe {
  return html`<label for="${id}">${label}</label> <select id="${id}" name="${id}">${choices.map(
    ([value, text]) => html`<option value="${value}"${current === value ? html` selected` : ''}>${text}</option>`,
  )}</select>`;
}

/** A data table: one column heading per name, then one row per item with the cells `cells` gives (values are escaped). */
export function dataTable<T>(columns: string[], items: T[], cells: (item: T) => unknown[]): Safe {
  const head = columns.map((column) => html`<th scope="col">${column}</th>`);
  const rows = items.map((item) => html`<tr>${cells(item).map((cell) => html`<td>${cell}</td>`)}</tr>`);
  return html`<table><thead><tr>${head}</tr></thead><tbody>
${rows}
</tbody></table>`;
}

interface BackupKind {
  status: string;
  completed_at: string | null;
}

/** The backup status (as the installation API answers it) as a table: each kind, its state and when it was reported. */
export function backupTable(backups: {
  backup: BackupKind;
  restore_test: BackupKind;
  backup_max_age_hours: number;
  restore_test_max_age_days: number;
}): Safe {
  const rows: [string, BackupKind, string][] = [
    ['Backup', backups.backup, `${backups.backup_max_age_hours} hours`],
    ['Restore test', backups.restore_test, `${backups.restore_test_max_age_days} days`],
  ];
  return dataTable(['Kind', 'Status', 'Last reported', 'Stale after'], rows, ([name, kind, age]) => [
    name,
    html`<span data-backup="${name}">${kind.status}</span>`,
    kind.completed_at ?? 'never',
    age,
  ]);
}
