// Tasks of one organization: list with filters (assignee or `me`, effective status, due before, company, deal; newest
// first or soonest due), create, read, update, delete. Completing a task stamps who and when and queues
// `task.completed` in the same transaction; leaving `completed` clears the stamp.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { TenantTx } from '../../db/tenant-scope.js';
import type { ActivityActor } from '../../db/tenant-writes.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { isUuid } from '../../lib/http-schemas.js';
import { newestFirst, type PagePosition, type PageRequest } from '../../lib/pagination.js';
import { afterPosition } from '../../lib/pagination.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { moved, recordAttachments, UNATTACHED } from '../../records/attachments.js';
import { checkReferences, writeReferencing } from '../../records/references.js';
import type { TaskCreate, TaskDto, TaskEffectiveStatus, TaskListQuery, TaskUpdate } from './schemas.js';

type TaskRow = Prisma.TaskGetPayload<object>;

/** The user who acts, or null for a workspace API key (which is no user). */
const userOf = (actor: ActivityActor): string | null => (actor.type === 'user' ? actor.id : null);
/** The workspace API key that acts, or null for a user. */
const apiKeyOf = (actor: ActivityActor): string | null => (actor.type === 'api_key' ? actor.id : null);

export function effectiveStatus(task: Pick<TaskRow, 'workflowStatus' | 'dueAt'>, now: Date): TaskEffectiveStatus {
  if (task.workflowStatus === 'completed') return 'completed';
  return task.dueAt !== null && task.dueAt < now ? 'overdue' : 'open';
}

export function toTaskDto(task: TaskRow, now = new Date()): TaskDto {
  return {
    id: task.id,
    title: task.title,
    kind: task.kind,
    priority: task.priority,
    workflow_status: task.workflowStatus,
    effective_status: effectiveStatus(task, now),
    due_at: task.dueAt?.toISOString() ?? null,
    reminder_at: task.reminderAt?.toISOString() ?? null,
    company_id: task.companyId,
    contact_id: task.contactId,
    deal_id: task.dealId,
    assigned_to: task.assignedTo,
    notes: task.notes,
    completed_at: task.completedAt?.toISOString() ?? null,
    completed_by: task.completedBy,
    completed_by_api_key_id: task.completedByApiKeyId,
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
  };
}

const taskNotFound = () => notFound('Task not found.', 'task_not_found');

/** The cursor position of tasks without a due time in `due_at` order: after every real time. */
const NO_DUE_TIME = new Date(8.64e15);

/** Where a row stands in the list's order (the cursor of the next page). */
export const positionOf =
  (sort: TaskListQuery['sort']) =>
  (task: TaskDto): PagePosition =>
    sort === 'due_at'
      ? { createdAt: task.due_at === null ? NO_DUE_TIME : new Date(task.due_at), id: task.id }
      : { createdAt: new Date(task.created_at), id: task.id };

/** The rows after `after` in soonest-due order (due_at ascending, no due time last, then id). */
function afterDue(after: PagePosition | undefined): Prisma.TaskWhereInput {
  if (!after) return {};
  if (after.createdAt.getTime() >= NO_DUE_TIME.getTime()) return { dueAt: null, id: { gt: after.id } };
  return { OR: [{ dueAt: { gt: after.createdAt } }, { dueAt: after.createdAt, id: { gt: after.id } }, { dueAt: null }] };
}

/** The condition of one effective status at `now` (open and overdue read only unfinished tasks: completed_at null). */
function statusCondition(status: TaskEffectiveStatus, now: Date): Prisma.TaskWhereInput {
  if (status === 'completed') return { completedAt: { not: null } };
  if (status === 'overdue') return { completedAt: null, dueAt: { lt: now } };
  return { completedAt: null, OR: [{ dueAt: null }, { dueAt: { gte: now } }] };
}

/** Open and overdue together are the unfinished tasks: one condition the partial open-tasks index serves. */
function statusesCondition(statuses: TaskEffectiveStatus[], now: Date): Prisma.TaskWhereInput {
  if (statuses.length === 0) return {};
  if (statuses.includes('open') && statuses.includes('overdue')) {
    return statuses.includes('completed') ? {} : { completedAt: null };
  }
  return { OR: statuses.map((status) => statusCondition(status, now)) };
}

export async function list(tenant: Tenant, actor: ActivityActor, query: TaskListQuery, page: PageRequest): Promise<TaskDto[]> {
  let assignedTo = query.assigned_to;
  if (assignedTo === 'me') {
    const user = userOf(actor);
    if (user === null)
      throw validationFailed({ assigned_to: ['`me` needs a signed-in user; an API key is none.'] }, 'Query parameters are invalid.');
    assignedTo = user;
  }
  const now = new Date();
  const statuses = [...new Set(query.effective_status ?? [])];
  const byDue = query.sort === 'due_at';
  const rows = await tenant.db.task.findMany({
    where: {
      AND: [
        {
          assignedTo,
          companyId: query.company_id,
          dealId: query.deal_id,
          ...(query.due_before ? { dueAt: { lt: new Date(query.due_before) } } : {}),
        },
        statusesCondition(statuses, now),
        byDue ? afterDue(page.after) : afterPosition(page.after),
      ],
    },
    orderBy: byDue ? [{ dueAt: { sort: 'asc', nulls: 'last' } }, { id: 'asc' }] : newestFirst,
    take: page.limit + 1,
  });
  return rows.map((row) => toTaskDto(row, now));
}

export async function get(tenant: Tenant, id: string): Promise<TaskDto> {
  const task = isUuid(id) ? await tenant.db.task.findFirst({ where: { id } }) : null;
  if (!task) throw taskNotFound();
  return toTaskDto(task);
}

function columnsOf(body: TaskUpdate): Prisma.TaskUncheckedUpdateInput {
  const time = (value: string | null | undefined) => (value === undefined ? undefined : value && new Date(value));
  return {
    title: body.title,
    kind: body.kind,
    priority: body.priority,
    workflowStatus: body.workflow_status,
    dueAt: time(body.due_at),
    reminderAt: time(body.reminder_at),
    companyId: body.company_id,
    contactId: body.contact_id,
    dealId: body.deal_id,
    assignedTo: body.assigned_to,
    notes: body.notes,
  };
}

/** The stamp of a status change: set on becoming completed, cleared on leaving it, untouched otherwise. */
function completion(before: TaskRow['workflowStatus'] | null, after: TaskRow['workflowStatus'] | undefined, actor: ActivityActor) {
  if (after === undefined || (after === 'completed') === (before === 'completed')) return {};
  return after === 'completed'
    ? { completedAt: new Date(), completedBy: userOf(actor), completedByApiKeyId: apiKeyOf(actor) }
    : { completedAt: null, completedBy: null, completedByApiKeyId: null };
}

/** Queues `task.completed` when the task just became completed. */
async function dispatchCompletion(tx: TenantTx, tenant: Tenant, before: TaskRow['workflowStatus'] | null, task: TaskRow) {
  if (task.workflowStatus === 'completed' && before !== 'completed') {
    await dispatchEvent(tx, { organizationId: tenant.organization.id, name: 'task.completed', data: toTaskDto(task) });
  }
}

/** The task's company (and contact) get `task_attached` on their timelines. */
export async function create(tenant: Tenant, actor: ActivityActor, body: TaskCreate): Promise<TaskDto> {
  const columns = columnsOf(body);
  const organizationId = tenant.organization.id;
  const id = randomUUID();
  const task = await writeReferencing(tenant, async (tx) => {
    await checkReferences(tx, body);
    const after = { companyId: body.company_id, contactId: body.contact_id ?? null };
    await recordAttachments(tx, { organizationId, actor, type: 'task', id, before: UNATTACHED, after });
    const made = await tx.task.create({
      data: {
        ...(columns as Prisma.TaskUncheckedCreateInput),
        id,
        organizationId,
        ...completion(null, body.workflow_status, actor),
      },
    });
    await dispatchCompletion(tx, tenant, null, made);
    return made;
  });
  return toTaskDto(task);
}

/**
 * Partial; the task's row is locked first, so two concurrent completions stamp and dispatch once. A changed company or
 * contact adds `task_detached` and `task_attached` to the timelines it leaves and joins. With `expected` (an If-Match),
 * only a task still at one of those versions changes: 412 otherwise, with nothing written.
 */
export async function update(
  tenant: Tenant,
  actor: ActivityActor,
  id: string,
  body: TaskUpdate,
  expected?: ExpectedVersions,
): Promise<TaskDto> {
  const columns = columnsOf(body);
  const task = await writeReferencing(tenant, async (tx) => {
    if (!isUuid(id)) throw taskNotFound();
    await tx.$executeRaw`SELECT 1 FROM tasks WHERE organization_id = ${tenant.organization.id}::uuid AND id = ${id}::uuid FOR UPDATE`;
    const current = await tx.task.findFirst({ where: { id } });
    if (!current) throw taskNotFound();
    if (!versionMatches(expected, current.updatedAt)) throw changedSince();
    await checkReferences(tx, body);
    await recordAttachments(tx, { organizationId: tenant.organization.id, actor, type: 'task', id, ...moved(current, body) });
    const changed = await tx.task.update({
      where: { id },
      data: { ...columns, ...completion(current.workflowStatus, body.workflow_status, actor), updatedAt: nextVersion(current.updatedAt) },
    });
    await dispatchCompletion(tx, tenant, current.workflowStatus, changed);
    return changed;
  });
  return toTaskDto(task);
}

/** Deletes the task; with `expected` (an If-Match), only at one of those versions, decided in the DELETE: 412 otherwise. */
export async function remove(tenant: Tenant, id: string, expected?: ExpectedVersions): Promise<void> {
  const versions = expected === '*' ? undefined : expected;
  const where = { id, ...(versions ? { updatedAt: { in: versions } } : {}) };
  const { count } = isUuid(id) ? await tenant.db.task.deleteMany({ where }) : { count: 0 };
  if (count > 0) return;
  throw versions && isUuid(id) && (await tenant.db.task.findFirst({ select: { id: true }, where: { id } }))
    ? changedSince()
    : taskNotFound();
}
