// The dashboard (counts, database, readiness, backups) and the production readiness page.
import type { InstallationService } from '../../modules/installation/service.js';
import { html } from '../html.js';
import type { ConsoleDashboardService } from '../services/dashboard.js';
import { layout, type Viewer } from './layout.js';
import { backupTable, dataTable } from './widgets.js';

type Readiness = Awaited<ReturnType<InstallationService['readiness']>>;
type Backups = Awaited<ReturnType<InstallationService['backupStatus']>>;

export interface DashboardData {
  counts: Awaited<ReturnType<ConsoleDashboardService['counts']>>;
  database: Awaited<ReturnType<ConsoleDashboardService['databaseStatus']>>;
  readiness: Readiness;
  backups: Backups;
}

export function dashboardPage(user: Viewer, { counts, database, readiness, backups }: DashboardData): string {
  const rows: [string, number, string][] = [
    ['Users', counts.users, '/admin/users/'],
    ['Active workspaces', counts.activeWorkspaces, '/admin/organizations/?status=active'],
    ['Pending handoffs', counts.pendingHandoffs, '/admin/organizations/?status=pending_owner'],
    ['Pending invitations', counts.pendingInvitations, '/admin/invitations/?status=pending'],
    ['Queued emails', counts.queuedEmails, '/admin/outbox/?status=pending'],
    ['Failed emails', counts.failedEmails, '/admin/outbox/?status=failed'],
    ['Automation runs failed in the last 24 hours', counts.failedRuns, '/admin/automation-runs/?status=failed'],
  ];
  return layout(
    { title: 'Dashboard', user },
    html`
<h2>Counts</h2>
<table><thead><tr><th scope="col">What</th><th scope="col">Count</th></tr></thead><tbody>
${rows.map(
  ([name, n, href]) =>
    html`<tr><th scope="row">${href ? html`<a href="${href}">${name}</a>` : name}</th><td data-count="${name}">${String(n)}</td></tr>`,
)}
</tbody></table>
<h2>Database</h2>
<p>${
      database.ok
        ? html`Database reachable; ${String(database.migrations)} migrations applied,
the latest <code>${database.latest ?? 'none'}</code>.`
        : html`<span class="error">Database migration status unavailable.</span>`
    }</p>
<h2>Production readiness</h2>
<p data-readiness="${readiness.ready ? 'ready' : 'not-ready'}"><a href="/admin/readiness/">${String(readiness.passed)} of ${String(readiness.total)} checks pass</a>${
      readiness.ready
        ? '.'
        : html`; failing: ${readiness.checks
            .filter((c) => c.status === 'fail')
            .map((c) => c.key)
            .join(', ')}.`
    }</p>
<h2>Backups</h2>
${backupTable(backups)}
<p><a href="/admin/readiness/">Readiness and backup details</a></p>`,
  );
}

export function readinessPage(user: Viewer, readiness: Readiness, backups: Backups): string {
  return layout(
    { title: 'Production readiness', user },
    html`
<p>${String(readiness.passed)} of ${String(readiness.total)} checks pass. The same checks answer
<code>GET /api/v1/installation/production-readiness/</code>.</p>
${dataTable(['Check', 'Status', 'Guidance'], readiness.checks, (c) => [html`<code>${c.key}</code>`, html`<span data-check="${c.key}">${c.status}</span>`, c.guidance])}
<h2>Backups</h2>
${backupTable(backups)}
<p>Backups and restore tests are recorded by <code>make backup</code> and <code>make restore-test</code>, or by an
operator's own scripts through <code>POST /api/v1/installation/backup-status/events/</code>.</p>`,
  );
}
