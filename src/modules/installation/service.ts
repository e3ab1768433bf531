// The installation administrators' service: readiness, system information, backup status, and the audit log and data
// export (audit-reader.ts, data-export.ts).
import type pg from 'pg';
import type { Config } from '../../config.js';
import type { Db, Queryable } from '../../db/client.js';
import { bypassesRowSecurity } from '../../db/serving-role.js';
import { pendingMigrations } from '../../db/migrate.js';
import type { CurrentUser } from '../../lib/current-user.js';
import type { PageRequest } from '../../lib/pagination.js';
import { migrationsDir } from '../../lib/project-root.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { readAuditLog, type AuditFilter } from './audit-reader.js';
import { COMMIT, VERSION } from './build-info.js';
import { exportData, type ExportReaders } from './data-export.js';
import { readinessReport, type ReadinessFacts } from './readiness.js';
import type { BackupEventKindValue, BackupEventStatusValue, BackupKindStatusDto } from './schemas.js';

/** The status of one kind from its latest event: `failed`, `stale` past its age, else `current`; `unknown` before any. */
export function kindStatus(
  latest: { status: BackupEventStatusValue; createdAt: Date } | null,
  maxAgeMs: number,
  now: Date,
): BackupKindStatusDto {
  if (!latest) return { status: 'unknown', completed_at: null };
  const status = latest.status === 'failure' ? 'failed' : now.getTime() - latest.createdAt.getTime() > maxAgeMs ? 'stale' : 'current';
  return { status, completed_at: latest.createdAt.toISOString() };
}

export function createInstallationService(deps: { db: Db; pool: pg.Pool; serving: Queryable; config: Config; crm: ExportReaders }) {
  const { db, pool, serving, config, crm } = deps;

  /** What the readiness checks learn from the database and the request, beside the config. */
  async function readinessFacts(request: Pick<ReadinessFacts, 'servedOverHttps' | 'forwardedButUntrusted'>): Promise<ReadinessFacts> {
    const [smtp, state, pending, bypassed] = await Promise.all([
      db.installationEmailAccount.count({ where: { isActive: true } }),
      db.installationState.findUnique({ where: { id: 1 }, select: { setupCompletedAt: true } }),
      pendingMigrations(pool, migrationsDir),
      bypassesRowSecurity(serving),
    ]);
    return {
      ...request,
      rowSecurityBypassed: bypassed,
      installationSmtpConfigured: smtp > 0,
      setupCompleted: state?.setupCompletedAt != null,
      pendingMigrations: pending.length,
    };
  }

  async function backupStatus(now = new Date()) {
    const latest = (kind: BackupEventKindValue) =>
      db.backupEvent.findFirst({
        where: { kind },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        select: { status: true, createdAt: true },
      });
    const [backup, restoreTest] = await Promise.all([latest('backup'), latest('restore_test')]);
    const { maxAgeHours, restoreTestMaxAgeDays } = config.backup;
    return {
      backup: kindStatus(backup, maxAgeHours * 3_600_000, now),
      restore_test: kindStatus(restoreTest, restoreTestMaxAgeDays * 86_400_000, now),
      backup_max_age_hours: maxAgeHours,
      restore_test_max_age_days: restoreTestMaxAgeDays,
    };
  }

  return {
    async readiness(request: Pick<ReadinessFacts, 'servedOverHttps' | 'forwardedButUntrusted'>) {
      return readinessReport(config, await readinessFacts(request));
    },

    async systemInformation() {
      const [[database], [jobs], users, workspaces, companies, contacts] = await Promise.all([
        db.$queryRaw<Array<{ version: string; size: bigint }>>`
          SELECT current_setting('server_version') AS version, pg_database_size(current_database()) AS size`,
        db.$queryRaw<Array<{ queued: bigint; failed: bigint }>>`
          SELECT count(*) FILTER (WHERE attempts < max_attempts)
                   -- Automation runs wait in their own table (claimed from it), as background work all the same.
                   + (SELECT count(*) FROM automation_runs WHERE status IN ('queued', 'running')) AS queued,
                 count(*) FILTER (WHERE attempts >= max_attempts) AS failed
          FROM graphile_worker.jobs`,
        db.user.count(),
        db.organization.count(),
        // Installation-wide totals, never rows: the same counts the console's pages show.
        db.company.count(),
        db.contact.count(),
      ]);
      return {
        version: VERSION,
        commit: COMMIT,
        node_version: process.versions.node,
        postgresql_version: database?.version ?? 'unknown',
        uptime_seconds: Math.floor(process.uptime()),
        process_count: config.webConcurrency,
        database_size_bytes: Number(database?.size ?? 0),
        counts: {
          users,
          workspaces,
          companies,
          contacts,
          queued_jobs: Number(jobs?.queued ?? 0),
          failed_jobs: Number(jobs?.failed ?? 0),
        },
      };
    },

    /** Newest first, `limit + 1` rows for the pager. */
    auditLog: (reader: { id: string }, filter: AuditFilter, page: PageRequest) => readAuditLog(db, reader, filter, page),

    backupStatus,

    /** Records what a backup script reports, as the latest event of its kind. */
    async recordBackupEvent(kind: BackupEventKindValue, status: BackupEventStatusValue, reportedBy: string, audit: AuditContext) {
      await db.$transaction(async (tx) => {
        const event = await tx.backupEvent.create({ data: { kind, status, reportedBy } });
        await recordAudit(tx, { ...audit, action: 'installation.backup_event_recorded', target: { type: 'backup_event', id: event.id } });
      });
      return backupStatus();
    },

    /** The data export as JSON lines (see data-export.ts), written to the audit log. */
    exportData: (user: CurrentUser, audit: AuditContext) => exportData({ db, pool, crm }, user, audit),
  };
}

export type InstallationService = ReturnType<typeof createInstallationService>;
