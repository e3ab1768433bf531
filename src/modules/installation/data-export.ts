// The installation's data export: every installation record, then the CRM records of the caller's own workspaces,
// as JSON lines read page by page so memory stays flat.
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { bindTenant } from '../../db/tenant.js';
import type { CurrentUser } from '../../lib/current-user.js';
import {
  NEWEST_FIRST,
  pageOfRows,
  type ListPageRequest,
  type ListPosition,
  type Page,
  type PagePosition,
  type PageRequest,
} from '../../lib/pagination.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { linkStatus } from '../invitations/invitation-link.js';
import { toAuditDto, workspacesOf } from './audit-reader.js';
import { VERSION } from './build-info.js';
import { USER_COLUMNS } from '../../users/user-columns.js';

/** The records a CRM record type's service lists (the record kernel's `list`: archived ones too, with `archived: 'all'`). */
interface RecordReader {
  list(
    pages: ReturnType<typeof bindTenant>['pages'],
    filter: { archived: 'all' },
    page: ListPageRequest,
  ): Promise<Array<{ id: string; created_at: string }>>;
}

/** The CRM reads of the data export: the same services the API lists with. */
export interface ExportReaders {
  companies: RecordReader;
  contacts: RecordReader;
  deals: RecordReader;
  tasks: RecordReader;
  notes: RecordReader;
  automations: {
    list(
      tenant: ReturnType<typeof bindTenant>,
      page: PageRequest,
    ): Promise<{ items: Array<{ id: string; created_at: string }>; next: PagePosition | undefined }>;
  };
}

const EXPORT_BATCH = 200;

export interface ExportDeps {
  db: Db;
  pool: pg.Pool;
  crm: ExportReaders;
}

/** Every item of a paged read, page after page, until a page says none follows. */
async function* everyPage<T, P>(read: (after: P | undefined) => Promise<Page<T, P>>): AsyncGenerator<T> {
  let after: P | undefined;
  do {
    const page = await read(after);
    yield* page.items;
    after = page.next;
  } while (after !== undefined);
}

type IdPageArgs = { where: { id?: { gt: string } }; orderBy: { id: 'asc' }; take: number };

/** Every row of an installation table in id order (a total order: no row twice, whatever is written meanwhile). */
const byId = <T extends { id: string }>(find: (args: IdPageArgs) => Promise<T[]>) =>
  everyPage(async (afterId: string | undefined): Promise<Page<T, string>> => {
    const items = await find({ where: afterId === undefined ? {} : { id: { gt: afterId } }, orderBy: { id: 'asc' }, take: EXPORT_BATCH });
    return { items, next: items.length < EXPORT_BATCH ? undefined : items.at(-1)?.id };
  });

/**
 * The export as JSON lines, one record a line (`{"type": …, "data": …}`), read in batches so memory stays flat.
 * Installation records in full (without password hashes, token hashes or SMTP passwords); CRM records only of the
 * workspaces the administrator belongs to, read through the API's own tenant-bound services.
 */
export async function* exportData(deps: ExportDeps, user: CurrentUser, audit: AuditContext): AsyncGenerator<string> {
  const { db, pool, crm } = deps;
  await recordAudit(db, { ...audit, action: 'installation.data_exported', target: { type: 'installation', id: null } });
  const line = (type: string, data: unknown) => `${JSON.stringify({ type, data })}\n`;
  yield line('export', {
    format: 'crm-installation-export/1',
    exported_at: new Date().toISOString(),
    version: VERSION,
    exported_by: user.id,
  });

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

  for await (const u of byId((page) => db.user.findMany({ ...page, select: USER_COLUMNS }))) {
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
  for await (const o of byId((page) => db.organization.findMany(page))) {
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
  for await (const m of byId((page) => db.membership.findMany(page))) {
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
  for await (const i of byId((page) =>
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
  for await (const i of byId((page) =>
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
  for await (const row of byId((page) => db.auditLog.findMany(page))) yield line('audit_entry', toAuditDto(row, memberOf));
  for await (const event of byId((page) => db.backupEvent.findMany(page))) {
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
      ['note', crm.notes],
    ] as const) {
      // Archived records too: the lists' default leaves them out, an export must not.
      const records = everyPage(async (after: ListPosition | undefined) =>
        pageOfRows(
          await reader.list(tenant.pages, { archived: 'all' }, { order: NEWEST_FIRST, after, limit: EXPORT_BATCH }),
          EXPORT_BATCH,
          (last): ListPosition => ({ values: [last.created_at], id: last.id }),
        ),
      );
      for await (const record of records) yield line(type, { workspace_id, ...record });
    }
    const automations = everyPage((after: PagePosition | undefined) => crm.automations.list(tenant, { after, limit: EXPORT_BATCH }));
    for await (const automation of automations) yield line('automation', { workspace_id, ...automation });
  }
  yield line('end', { complete: true });
}
