// The console's reads and its sign-in/out: plain queries over installation-wide tables, and counts for tenant data.
import type { Db } from '../db/client.js';
import { burnPasswordCheck, verifyPassword } from '../lib/passwords.js';
import { enqueueJob, JOBS, jobKey } from '../jobs/queue.js';
import { recordAudit, type AuditContext } from '../audit/audit-log.js';
import { requestPasswordReset } from '../modules/account/password-service.js';
import { visibleAuditTargetId, workspacesOf } from '../modules/installation/audit-reader.js';
import { linkStatus, usableAt } from '../modules/invitations/invitation-link.js';
import { closeSession, openSession } from './sessions.js';

export const PAGE_SIZE = 50;

/**
 * Checks staff credentials and opens a session (its cookie value), or returns null. Every refusal costs the same
 * argon2 work and leaves an `admin.sign_in_failed` row naming the account only when it exists (never the input).
 */
export async function consoleSignIn(
  db: Db,
  credentials: { username: string; password: string },
  ip: string,
  maxSeconds: number,
): Promise<string | null> {
  const user = await db.user.findUnique({
    where: { username: credentials.username },
    select: { id: true, username: true, passwordHash: true, isStaff: true, isActive: true },
  });
  if (!user) await burnPasswordCheck(credentials.password);
  const ok = user !== null && (await verifyPassword(user.passwordHash, credentials.password)) && user.isStaff && user.isActive;
  if (!ok) {
    await recordAudit(db, {
      actor: { type: 'system' },
      ip,
      action: 'admin.sign_in_failed',
      target: { type: 'user', id: user?.id ?? null },
    });
    return null;
  }
  return db.$transaction(async (tx) => {
    const id = await openSession(tx as unknown as Db, user.id, maxSeconds);
    // A console sign-in is a sign-in: the Users page's "Last sign-in" counts it as it counts the API's.
    await tx.user.update({ where: { id: user.id }, data: { lastLogin: new Date() } });
    await recordAudit(tx, {
      actor: { type: 'user', userId: user.id, username: user.username },
      ip,
      action: 'admin.signed_in',
      target: { type: 'user', id: user.id },
    });
    return id;
  });
}

export async function consoleSignOut(db: Db, idHash: string, audit: AuditContext): Promise<void> {
  await db.$transaction(async (tx) => {
    await closeSession(tx as unknown as Db, idHash);
    const userId = audit.actor.type === 'user' ? audit.actor.userId : null;
    await recordAudit(tx, { ...audit, action: 'admin.signed_out', target: { type: 'user', id: userId } });
  });
}

export async function dashboardCounts(db: Db) {
  const now = new Date();
  const [users, activeWorkspaces, pendingHandoffs, pendingInvitations, queuedEmails, failedEmails, failedRuns] = await Promise.all([
    db.user.count(),
    db.organization.count({ where: { status: 'active' } }),
    db.organization.count({ where: { status: 'pending_owner' } }),
    db.invitation.count({ where: { acceptedAt: null, revokedAt: null, expiresAt: { gt: now } } }),
    db.emailOutbox.count({ where: { status: 'pending' } }),
    db.emailOutbox.count({ where: { status: 'failed' } }),
    db.automationRun.count({ where: { status: 'failed', createdAt: { gt: new Date(now.getTime() - 86_400_000) } } }),
  ]);
  return { users, activeWorkspaces, pendingHandoffs, pendingInvitations, queuedEmails, failedEmails, failedRuns };
}

/** Whether the database answers and how many migrations it has applied (the last one's name). */
export async function databaseStatus(db: Db): Promise<{ ok: boolean; migrations: number; latest: string | null }> {
  try {
    const rows = await db.$queryRaw<{ migration_name: string }[]>`
      SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY finished_at DESC, migration_name DESC`;
    return { ok: true, migrations: rows.length, latest: rows[0]?.migration_name ?? null };
  } catch {
    return { ok: false, migrations: 0, latest: null };
  }
}

export interface UserFilter {
  search: string;
  staff: '' | 'yes' | 'no';
  active: '' | 'yes' | 'no';
  page: number;
}

export async function listUsers(db: Db, filter: UserFilter) {
  const where = {
    ...(filter.search
      ? {
          OR: [
            { username: { contains: filter.search, mode: 'insensitive' as const } },
            { email: { contains: filter.search, mode: 'insensitive' as const } },
          ],
        }
      : {}),
    ...(filter.staff ? { isStaff: filter.staff === 'yes' } : {}),
    ...(filter.active ? { isActive: filter.active === 'yes' } : {}),
  };
  const rows = await db.user.findMany({
    where,
    orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }],
    skip: (filter.page - 1) * PAGE_SIZE,
    take: PAGE_SIZE + 1,
    select: { id: true, username: true, email: true, isStaff: true, isSuperuser: true, isActive: true, dateJoined: true, lastLogin: true },
  });
  return { rows: rows.slice(0, PAGE_SIZE), hasNext: rows.length > PAGE_SIZE };
}

export async function userDetail(db: Db, userId: string) {
  const user = await db.user.findUnique({
    where: { id: userId },
    select: {
      id: true,
      username: true,
      email: true,
      isStaff: true,
      isSuperuser: true,
      isActive: true,
      dateJoined: true,
      lastLogin: true,
      twoFactorEnabledAt: true,
      memberships: {
        select: { role: true, organization: { select: { name: true, slug: true, requireTwoFactor: true } } },
        orderBy: { createdAt: 'asc' },
      },
    },
  });
  if (!user) return null;
  const liveSessions = await db.adminSession.count({ where: { userId, expiresAt: { gt: new Date() } } });
  return { ...user, liveSessions };
}

export const OUTBOX_STATUSES = ['pending', 'sent', 'failed'] as const;

/**
 * Outbox rows without their bodies (a message's links are credentials), each pending one with the time its job is
 * due (graphile-worker's `jobs` view, looked up by job key; null while an attempt is in progress or without a job).
 */
export async function listOutbox(db: Db, status: string, page: number) {
  const rows = await db.emailOutbox.findMany({
    where: (OUTBOX_STATUSES as readonly string[]).includes(status) ? { status: status as (typeof OUTBOX_STATUSES)[number] } : {},
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    skip: (page - 1) * PAGE_SIZE,
    take: PAGE_SIZE + 1,
    select: {
      id: true,
      subject: true,
      toAddress: true,
      status: true,
      attempts: true,
      lastError: true,
      createdAt: true,
    },
  });
  const shown = rows.slice(0, PAGE_SIZE);
  const keys = shown.filter((row) => row.status === 'pending').map((row) => jobKey(JOBS.email, row.id));
  const due =
    keys.length === 0
      ? []
      : await db.$queryRaw<Array<{ key: string; run_at: Date }>>`
          SELECT key, run_at FROM graphile_worker.jobs WHERE key = ANY(${keys}::text[]) AND locked_at IS NULL`;
  const dueAt = new Map(due.map((job) => [job.key, job.run_at]));
  return {
    rows: shown.map((row) => ({ ...row, nextAttemptAt: dueAt.get(jobKey(JOBS.email, row.id)) ?? null })),
    hasNext: rows.length > PAGE_SIZE,
  };
}

/**
 * Puts a failed email back in the queue with a new job (a fresh set of attempts); false when it is not (or no
 * longer) failed. Its bodies were wiped when it failed, so a message that carried a link arrives without it.
 */
export async function retryEmail(db: Db, id: string, audit: AuditContext): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const updated = await tx.emailOutbox.updateMany({ where: { id, status: 'failed' }, data: { status: 'pending', lastError: null } });
    if (updated.count === 0) return false;
    await enqueueJob(tx, JOBS.email, id);
    await recordAudit(tx, { ...audit, action: 'email.retried', target: { type: 'email', id } });
    return true;
  });
}

/**
 * A page of the audit log, each row with the names of the users and workspaces it refers to as they are now (null
 * when deleted since: the ids stay in the row, and the actor's username as it was when the row was written). A
 * workspace's record ids (rules, imports) are shown only to its members, as the API's installation audit does.
 */
export async function listAudit(db: Db, readerId: string, filter: { actor: string; action: string; page: number }) {
  const rows = await db.auditLog.findMany({
    where: {
      ...(filter.actor
        ? {
            OR: [
              { actorUsername: { contains: filter.actor, mode: 'insensitive' as const } },
              { actorApiKeyName: { contains: filter.actor, mode: 'insensitive' as const } },
            ],
          }
        : {}),
      ...(filter.action ? { action: filter.action } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    skip: (filter.page - 1) * PAGE_SIZE,
    take: PAGE_SIZE + 1,
  });
  const shown = rows.slice(0, PAGE_SIZE);
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const userIds = new Set<string>();
  const workspaceIds = new Set<string>();
  for (const row of shown) {
    if (row.actorUserId) userIds.add(row.actorUserId);
    if (row.organizationId) workspaceIds.add(row.organizationId);
    if (row.targetId && uuid.test(row.targetId) && row.targetType === 'user') userIds.add(row.targetId);
    if (row.targetId && uuid.test(row.targetId) && row.targetType === 'organization') workspaceIds.add(row.targetId);
  }
  const [users, workspaces, memberOf] = await Promise.all([
    db.user.findMany({ where: { id: { in: [...userIds] } }, select: { id: true, username: true } }),
    db.organization.findMany({ where: { id: { in: [...workspaceIds] } }, select: { id: true, name: true } }),
    workspacesOf(db, readerId),
  ]);
  const usernames = new Map(users.map((u) => [u.id, u.username]));
  const names = new Map(workspaces.map((w) => [w.id, w.name]));
  const targetName = (row: (typeof shown)[number]) =>
    !row.targetId
      ? undefined
      : row.targetType === 'user'
        ? (usernames.get(row.targetId) ?? null)
        : row.targetType === 'organization'
          ? (names.get(row.targetId) ?? null)
          : undefined;
  return {
    rows: shown.map((row) => ({
      ...row,
      targetId: visibleAuditTargetId(row, memberOf),
      actorName: row.actorUserId ? (usernames.get(row.actorUserId) ?? null) : null,
      targetName: targetName(row),
      workspaceName: row.organizationId ? (names.get(row.organizationId) ?? null) : null,
    })),
    hasNext: rows.length > PAGE_SIZE,
  };
}

/** The workspace columns the list and the detail page both show. */
const WORKSPACE_COLUMNS = {
  id: true,
  name: true,
  slug: true,
  status: true,
  isPersonal: true,
  createdAt: true,
  ownerEmail: true,
} as const;

/** Queues the ordinary reset email (the same worker path as the API's request) with its audit row. */
export async function sendPasswordReset(db: Db, userId: string, audit: AuditContext): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const user = await tx.user.findUnique({ where: { id: userId }, select: { email: true } });
    if (!user) return false;
    await requestPasswordReset(tx as unknown as Db, user.email);
    await recordAudit(tx, { ...audit, action: 'user.password_reset_sent', target: { type: 'user', id: userId } });
    return true;
  });
}

export const WORKSPACE_STATUSES = ['active', 'pending_owner', 'cancelled'] as const;

export async function listWorkspaces(db: Db, filter: { search: string; status: string; page: number }) {
  const rows = await db.organization.findMany({
    where: {
      ...(filter.search
        ? {
            OR: [
              { name: { contains: filter.search, mode: 'insensitive' as const } },
              { slug: { contains: filter.search, mode: 'insensitive' as const } },
            ],
          }
        : {}),
      ...((WORKSPACE_STATUSES as readonly string[]).includes(filter.status)
        ? { status: filter.status as (typeof WORKSPACE_STATUSES)[number] }
        : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    skip: (filter.page - 1) * PAGE_SIZE,
    take: PAGE_SIZE + 1,
    select: {
      ...WORKSPACE_COLUMNS,
      memberships: { where: { role: 'owner' }, select: { user: { select: { username: true } } } },
      _count: { select: { memberships: true } },
    },
  });
  return { rows: rows.slice(0, PAGE_SIZE), hasNext: rows.length > PAGE_SIZE };
}

/** The groups of companies the console lists for one workspace: at most this many. */
const SHARED_GROUPS_SHOWN = 50;

/**
 * The companies of a workspace that already shared a tax id or an email when duplicates began to be refused (the
 * migration crm_profiles_archive_activity flagged them): per shared field, each group's customer codes, oldest first.
 * The shared value itself is the workspace's data and is not shown.
 */
export async function sharedCompanyIdentities(db: Db, organizationId: string) {
  return db.$queryRaw<Array<{ field: 'tax_id' | 'email'; codes: Array<string | null>; companies: number }>>`
    SELECT field, array_agg(customer_code ORDER BY created_at, id) AS codes, count(*)::int AS companies
    FROM (
      SELECT 'tax_id' AS field, lower(tax_id) AS value, customer_code, created_at, id, tax_id_shared AS shared
      FROM companies WHERE organization_id = ${organizationId}::uuid AND tax_id IS NOT NULL
      UNION ALL
      SELECT 'email', lower(email), customer_code, created_at, id, email_shared
      FROM companies WHERE organization_id = ${organizationId}::uuid AND email IS NOT NULL
    ) AS identities
    GROUP BY field, value HAVING bool_or(shared)
    ORDER BY field, min(created_at) LIMIT ${SHARED_GROUPS_SHOWN}`;
}

/** A workspace with its members, the counts (never the contents) of its CRM records and its latest imports. */
export async function workspaceDetail(db: Db, id: string) {
  return db.organization.findUnique({
    where: { id },
    select: {
      ...WORKSPACE_COLUMNS,
      createdBy: { select: { username: true } },
      requireTwoFactor: true,
      memberships: {
        select: { role: true, user: { select: { id: true, username: true, twoFactorEnabledAt: true } } },
        orderBy: { createdAt: 'asc' },
      },
      _count: { select: { companies: true, contacts: true, deals: true, tasks: true, automations: true, runs: true } },
      // The latest imports' progress; never their file.
      imports: {
        select: {
          id: true,
          kind: true,
          status: true,
          totalRows: true,
          processedRows: true,
          created: true,
          updated: true,
          failedRows: true,
          createdAt: true,
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: 20,
      },
    },
  });
}

export async function listInvitationsAll(db: Db, status: string, page: number) {
  const now = new Date();
  const where =
    status === 'pending'
      ? usableAt(now)
      : status === 'accepted'
        ? { acceptedAt: { not: null } }
        : status === 'revoked'
          ? { revokedAt: { not: null } }
          : status === 'expired'
            ? { acceptedAt: null, revokedAt: null, expiresAt: { lte: now } }
            : {};
  const rows = await db.invitation.findMany({
    where,
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    skip: (page - 1) * PAGE_SIZE,
    take: PAGE_SIZE + 1,
    select: {
      id: true,
      email: true,
      role: true,
      expiresAt: true,
      acceptedAt: true,
      revokedAt: true,
      organization: { select: { name: true } },
      invitedBy: { select: { username: true } },
    },
  });
  return { rows: rows.slice(0, PAGE_SIZE).map((r) => ({ ...r, status: linkStatus(r, now) })), hasNext: rows.length > PAGE_SIZE };
}

export const RUN_STATUSES = ['queued', 'running', 'success', 'failed', 'skipped'] as const;

/** Runs across workspaces, failed ones first, then newest; only the rule's name and the error, never the payload. */
export async function listRuns(db: Db, status: string, page: number) {
  const filter = (RUN_STATUSES as readonly string[]).includes(status) ? status : '';
  const ids = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM automation_runs WHERE (${filter} = '' OR status::text = ${filter})
    ORDER BY (status = 'failed') DESC, created_at DESC, id LIMIT ${PAGE_SIZE + 1} OFFSET ${(page - 1) * PAGE_SIZE}`;
  const order = new Map(ids.map((row, i) => [row.id, i]));
  const rows = await db.automationRun.findMany({
    where: { id: { in: ids.slice(0, PAGE_SIZE).map((row) => row.id) } },
    select: {
      id: true,
      trigger: true,
      status: true,
      errorMessage: true,
      createdAt: true,
      finishedAt: true,
      organization: { select: { name: true } },
      automation: { select: { name: true } },
    },
  });
  const position = (id: string) => order.get(id) ?? 0;
  return { rows: rows.sort((a, b) => position(a.id) - position(b.id)), hasNext: ids.length > PAGE_SIZE };
}
