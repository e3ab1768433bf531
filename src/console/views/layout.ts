// The frame of every console page (navigation, sign-out form) and the error page; every value is escaped.
import { html, type Safe } from '../html.js';

/** The signed-in operator as a page shows them: the username and the session's CSRF token. */
export interface Viewer {
  username: string;
  csrf: string;
}

export interface PageContext {
  title: string;
  /** Absent on the sign-in page and on error pages shown without a session. */
  user?: Viewer;
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

export function errorPage(status: number, title: string, message: string, user?: Viewer): string {
  return layout(
    { title, ...(user ? { user } : {}) },
    html`<p class="error">${message}</p><p>Status ${String(status)}. <a href="/admin/">Back to the dashboard</a></p>`,
  );
}
