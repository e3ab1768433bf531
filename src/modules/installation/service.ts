// The installation administrators' API: readiness, system information, the audit log, backup status and the data export.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import type { Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import { pendingMigrations } from '../../db/migrate.js';
import { bindTenant } from '../../db/tenant.js';
import type { CurrentUser } from '../../lib/current-user.js';
import { isUuid } from '../../lib/http-schemas.js';
import {
  afterPosition,
  newestFirst,
  NEWEST_FIRST,
  type ListPageRequest,
  type ListPosition,
  type PageRequest,
  type PagePosition,
} from '../../lib/pagination.js';
import { migrationsDir, projectRoot } from '../../lib/project-root.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { linkStatus } from '../invitations/invitation-link.js';
import { readinessReport, type ReadinessFacts } from './readiness.js';
import type { AuditEntryDto, BackupEventKindValue, BackupEventStatusValue, BackupKindStatusDto } from './schemas.js';

/** The git commit the service was built from, when it runs from a checkout (`.git` beside package.json); else null. */
function gitCommit(): string | null {
  try {
    let gitDir = path.join(projectRoot, '.git');
    const dotGit = readFileSync(gitDir, 'utf8');
    // A worktree's `.git` is a file naming its git directory.
    gitDir = path.resolve(projectRoot, dotGit.replace(/^gitdir:\s*/, '').trim());
    return headOf(gitDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EISDIR') return headOf(path.join(projectRoot, '.git'));
    return null;
  }
}

function headOf(gitDir: string): string | null {
  try {
    const head = readFileSync(path.join(gitDir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return /^[0-9a-f]{40}$/.test(head) ? head : null;
    const ref = head.slice(5);
    // Worktrees keep refs in the common directory.
    const common = (() => {
      try {
        return path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
      } catch {
        return gitDir;
      }
    })();
    for (const dir of [gitDir, common]) {
      try {
        return readFileSync(path.join(dir, ref), 'utf8').trim();
      } catch {
        // packed, or in the other directory
      }
    }
    const packed = readFileSync(path.join(common, 'packed-refs'), 'utf8');
    return (
      packed
        .split('\n')
        .find((line) => line.endsWith(` ${ref}`))
        ?.slice(0, 40) ?? null
    );
  } catch {
    return null;
  }
}

const VERSION = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
const COMMIT = gitCommit();

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

export interface AuditFilter {
  /** A user id or API key id, or a username (exact, case-insensitive). */
  actor?: string;
  action?: string;
  since?: string;
}

type AuditRow = Awaited<ReturnType<Db['auditLog']['findMany']>>[number];

/**
 * Audit targets that are a workspace's CRM records (an automation rule, an import): the installation-wide answers
 * name the workspace but never its records, so their id is given only for workspaces the caller is a member of.
 */
const WORKSPACE_RECORD_TARGETS = new Set(['automation', 'import']);

/** The target id of an audit row as installation staff may see it (see WORKSPACE_RECORD_TARGETS): the API and console. */
export const visibleAuditTargetId = (
  row: { targetType: string; targetId: string | null; organizationId: string | null },
  memberOf: ReadonlySet<string>,
): string | null =>
  WORKSPACE_RECORD_TARGETS.has(row.targetType) && !(row.organizationId !== null && memberOf.has(row.organizationId)) ? null : row.targetId;

/** The workspaces a user is a member of (whose record ids the audit answers may name). */
export const workspacesOf = async (db: Db, userId: string): Promise<ReadonlySet<string>> =>
  new Set((await db.membership.findMany({ where: { userId }, select: { organizationId: true } })).map((m) => m.organizationId));

/** An audit row as installation staff see it; `memberOf`: the workspaces of the reader. */
const toAuditDto = (row: AuditRow, memberOf: ReadonlySet<string>): AuditEntryDto => ({
  id: row.id,
  created_at: row.createdAt.toISOString(),
  actor_type: row.actorType,
  actor_user_id: row.actorUserId,
  actor_username: row.actorUsername,
  actor_api_key_id: row.actorApiKeyId,
  actor_api_key_name: row.actorApiKeyName,
  actor_api_key_prefix: row.actorApiKeyPrefix,
  action: row.action,
  target_type: row.targetType,
  target_id: visibleAuditTargetId(row, memberOf),
  organization_id: row.organizationId,
  client_ip: row.clientIp,
});

/** The CRM reads of the data export: the same services the API lists with. */
/** The records a CRM record type's service lists (the record kernel's `list`: archived ones too, with `archived: 'all'`). */
interface RecordReader {
  list(
    pages: ReturnType<typeof bindTenant>['pages'],
    filter: { archived: 'all' },
    page: ListPageRequest,
  ): Promise<Array<{ id: string; created_at: string }>>;
}

export interface ExportReaders {
  companies: RecordReader;
  contacts: RecordReader;
  deals: RecordReader;
  tasks: RecordReader;
  automations: {
    list(
      tenant: ReturnType<typeof bindTenant>,
      page: PageRequest,
    ): Promise<{ items: Array<{ id: string; created_at: string }>; next: PagePosition | undefined }>;
  };
}

const EXPORT_BATCH = 200;

export function createInstallationService(deps: { db: Db; pool: pg.Pool; config: Config; crm: ExportReaders }) {
  const { db, pool, config, crm } = deps;

  /** The workspaces a user is a member of: the ones whose records installation answers may name to them. */
  async function readinessFacts(request: Pick<ReadinessFacts, 'servedOverHttps' | 'forwardedButUntrusted'>): Promise<ReadinessFacts> {
    const [smtp, state, pending] = await Promise.all([
      db.installationEmailAccount.count({ where: { isActive: true } }),
      db.installationState.findUnique({ where: { id: 1 }, select: { setupCompletedAt: true } }),
      pendingMigrations(pool, migrationsDir),
    ]);
    return {
      ...request,
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
          SELECT count(*) FILTER (WHERE attempts < max_attempts) AS queued, count(*) FILTER (WHERE attempts >= max_attempts) AS failed
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
    async auditLog(reader: { id: string }, filter: AuditFilter, page: PageRequest): Promise<AuditEntryDto[]> {
      const actor = filter.actor;
      const rows = await db.auditLog.findMany({
        where: {
          AND: [
            actor === undefined
              ? {}
              : isUuid(actor)
                ? { OR: [{ actorUserId: actor }, { actorApiKeyId: actor }] }
                : { actorUsername: { equals: actor, mode: 'insensitive' } },
            filter.action === undefined ? {} : { action: filter.action },
            filter.since === undefined ? {} : { createdAt: { gte: new Date(filter.since) } },
            afterPosition(page.after),
          ],
        },
        orderBy: newestFirst,
        take: page.limit + 1,
      });
      const memberOf = await workspacesOf(db, reader.id);
      return rows.map((row) => toAuditDto(row, memberOf));
    },

    backupStatus,

    /** Records what a backup script reports, as the latest event of its kind. */
    async recordBackupEvent(kind: BackupEventKindValue, status: BackupEventStatusValue, reportedBy: string, audit: AuditContext) {
      await db.$transaction(async (tx) => {
        const event = await tx.backupEvent.create({ data: { kind, status, reportedBy } });
        await recordAudit(tx, { ...audit, action: 'installation.backup_event_recorded', target: { type: 'backup_event', id: event.id } });
      });
      return backupStatus();
    },

    /**
     * The export as JSON lines, one record a line (`{"type": …, "data": …}`), read in batches so memory stays flat.
     * Installation records in full (without password hashes, token hashes or SMTP passwords); CRM records only of the
     * workspaces the administrator belongs to, read through the API's own tenant-bound services.
     */
    async *exportData(user: CurrentUser, audit: AuditContext): AsyncGenerator<string> {
      await recordAudit(db, { ...audit, action: 'installation.data_exported', target: { type: 'installation', id: null } });
      const line = (type: string, data: unknown) => `${JSON.stringify({ type, data })}\n`;
      yield line('export', {
        format: 'crm-installation-export/1',
        exported_at: new Date().toISOString(),
        version: VERSION,
        exported_by: user.id,
      });

      /** Pages of an installation table in id order (a total order: no row twice, whatever is written meanwhile). */
      async function* batches<T extends { id: string }>(
        read: (args: { where: { id?: { gt: string } }; orderBy: { id: 'asc' }; take: number }) => Promise<T[]>,
      ) {
        let afterId: string | undefined;
        for (;;) {
          const rows = await read({
            where: afterId === undefined ? {} : { id: { gt: afterId } },
            orderBy: { id: 'asc' },
            take: EXPORT_BATCH,
          });
          yield* rows;
          const last = rows[rows.length - 1];
          if (rows.length < EXPORT_BATCH || !last) return;
          afterId = last.id;
        }
      }

      /**
       * Every record of a newest-first CRM list, page after page: each read asks for one row more than a page, which
       * says whether another page follows; `positionOf` turns a page's last record into the next read's position.
       */
      async function* newestFirst<R extends { id: string; created_at: string }, P>(
        read: (after: P | undefined) => Promise<R[]>,
        positionOf: (last: R) => P,
      ) {
        let after: P | undefined;
        for (;;) {
          const rows = await read(after);
          yield* rows.slice(0, EXPORT_BATCH);
          const last = rows[EXPORT_BATCH - 1];
          if (rows.length <= EXPORT_BATCH || !last) return;
          after = positionOf(last);
        }
      }

      const state = await db.installationState.findUnique({ where: { id: 1 } });
      const smtp = await db.installationEmailAccount.findUnique({
        where: { id: 1 },
        select: {
          name: true,
          host: true,
          port: true,
          username: true,
          fromEmail: true,
          fromName: true,
          useTls: true,
          useSsl: true,
          isActive: true,
        },
      });
      yield line('installation_settings', { setup_completed_at: state?.setupCompletedAt?.toISOString() ?? null, fallback_smtp: smtp });

      for await (const u of batches((page) =>
        db.user.findMany({
          ...page,
          select: {
            id: true,
            username: true,
            email: true,
            isStaff: true,
            isSuperuser: true,
            isActive: true,
            dateJoined: true,
            lastLogin: true,
          },
        }),
      )) {
        yield line('user', {
          id: u.id,
          username: u.username,
          email: u.email,
          is_staff: u.isStaff,
          is_superuser: u.isSuperuser,
          is_active: u.isActive,
          date_joined: u.dateJoined.toISOString(),
          last_login: u.lastLogin?.toISOString() ?? null,
        });
      }
      for await (const o of batches((page) => db.organization.findMany(page))) {
        yield line('workspace', {
          id: o.id,
          name: o.name,
          slug: o.slug,
          status: o.status,
          is_personal: o.isPersonal,
          owner_email: o.ownerEmail,
          created_at: o.createdAt.toISOString(),
        });
      }
      for await (const m of batches((page) => db.membership.findMany(page))) {
        yield line('membership', {
          id: m.id,
          workspace_id: m.organizationId,
          user_id: m.userId,
          role: m.role,
          is_temporary: m.isTemporary,
          created_at: m.createdAt.toISOString(),
        });
      }
      const now = new Date();
      for await (const i of batches((page) =>
        db.invitation.findMany({
          ...page,
          select: {
            id: true,
            organizationId: true,
            email: true,
            role: true,
            createdAt: true,
            expiresAt: true,
            acceptedAt: true,
            revokedAt: true,
          },
        }),
      )) {
        yield line('invitation', {
          id: i.id,
          workspace_id: i.organizationId,
          email: i.email,
          role: i.role,
          status: linkStatus(i, now),
          created_at: i.createdAt.toISOString(),
          expires_at: i.expiresAt.toISOString(),
        });
      }
      for await (const i of batches((page) =>
        db.installationAdminInvitation.findMany({
          ...page,
          select: { id: true, email: true, createdAt: true, expiresAt: true, acceptedAt: true, revokedAt: true },
        }),
      )) {
        yield line('installation_admin_invitation', {
          id: i.id,
          email: i.email,
          status: linkStatus(i, now),
          created_at: i.createdAt.toISOString(),
          expires_at: i.expiresAt.toISOString(),
        });
      }
      const memberOf = await workspacesOf(db, user.id);
      for await (const row of batches((page) => db.auditLog.findMany(page))) yield line('audit_entry', toAuditDto(row, memberOf));
      for await (const event of batches((page) => db.backupEvent.findMany(page))) {
        yield line('backup_event', {
          id: event.id,
          kind: event.kind,
          status: event.status,
          reported_by: event.reportedBy,
          created_at: event.createdAt.toISOString(),
        });
      }

      // CRM data: only the workspaces this administrator is a member of (the contract: no other tenant's data).
      const memberships = await db.membership.findMany({
        where: { userId: user.id, organization: { status: 'active' } },
        select: { id: true, role: true, organization: true },
        orderBy: { createdAt: 'asc' },
      });
      for (const membership of memberships) {
        const tenant = bindTenant(db, pool, { membershipId: membership.id, role: membership.role, organization: membership.organization });
        const workspace_id = membership.organization.id;
        for (const [type, reader] of [
          ['company', crm.companies],
          ['contact', crm.contacts],
          ['deal', crm.deals],
          ['task', crm.tasks],
        ] as const) {
          // Archived records too: the lists' default leaves them out, an export must not.
          const records = newestFirst(
            (after: ListPosition | undefined) =>
              reader.list(tenant.pages, { archived: 'all' }, { order: NEWEST_FIRST, after, limit: EXPORT_BATCH }),
            (last): ListPosition => ({ values: [last.created_at], id: last.id }),
          );
          for await (const record of records) yield line(type, { workspace_id, ...record });
        }
        let after: PagePosition | undefined;
        for (;;) {
          const { items, next } = await crm.automations.list(tenant, { after, limit: EXPORT_BATCH });
          for (const automation of items) yield line('automation', { workspace_id, ...automation });
          if (!next) break;
          after = next;
        }
      }
      yield line('end', { complete: true });
    },
  };
}

export type InstallationService = ReturnType<typeof createInstallationService>;
