// The pieces console pages are built of: tables, selects, pagers, action buttons and status lines; values are escaped.
import { html, type Safe } from '../html.js';

/** A POST button carrying the CSRF token. */
export const actionButton = (action: string, label: string, csrf: string) =>
  html`<form method="post" action="${action}"><input type="hidden" name="_csrf" value="${csrf}">
<button type="submit">${label}</button></form>`;

export const yesNo = (value: boolean) => (value ? 'yes' : 'no');

/** The message an action redirected with (`?done=`), as a status line; nothing without one. */
export const doneNotice = (notice: string) => (notice ? html`<p class="notice" role="status">${notice}</p>` : '');

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
