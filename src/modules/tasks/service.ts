// Tasks of one organization: the task's own rules on top of the record kernel (record.ts: lists with their filters and
// orders, reads, sync, export, delete, archive and restore): create and update. Completing a task stamps who and when
// and queues `task.completed` in the same transaction; leaving `completed` clears the stamp.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { TenantTx } from '../../db/tenant-scope.js';
import type { ActivityActor } from '../../db/tenant-writes.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { isUuid } from '../../lib/http-schemas.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { moved, recordAttachments, UNATTACHED } from '../../records/attachments.js';
import { recordService, type CrmScope } from '../../records/record-service.js';
import { checkReferences, writeReferencing } from '../../records/references.js';
import { customFieldsOf, mergeCustomValues, withCustomFields } from '../../records/custom-fields/values.js';
import { taskRecord, toTaskDto, type TaskRow } from './record.js';
import type { TaskCreate, TaskDto, TaskUpdate } from './schemas.js';

/** The user who acts, or null for a workspace API key (which is no user). */
const userOf = (actor: ActivityActor): string | null => (actor.type === 'user' ? actor.id : null);
/** The workspace API key that acts, or null for a user. */
const apiKeyOf = (actor: ActivityActor): string | null => (actor.type === 'api_key' ? actor.id : null);

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

/** The task as the API shows it, its custom fields included. */
const shown = (scope: CrmScope, task: TaskRow) => customFieldsOf(scope, 'task').show(toTaskDto(task));

/** Queues `task.completed` when the task just became completed. */
async function dispatchCompletion(tx: TenantTx, organizationId: string, before: TaskRow['workflowStatus'] | null, task: TaskRow) {
  if (task.workflowStatus === 'completed' && before !== 'completed') {
    await dispatchEvent(tx, { organizationId, name: 'task.completed', data: await withCustomFields(tx, 'task', toTaskDto(task)) });
  }
}

/** The task's company (and contact) get `task_attached` on their timelines. */
async function create(scope: CrmScope, body: TaskCreate): Promise<TaskDto> {
  const columns = columnsOf(body);
  const { organizationId, actor } = scope;
  const customFields = (await customFieldsOf(scope, 'task').check(body.custom_fields, true)) as Prisma.InputJsonObject;
  const id = randomUUID();
  const task = await writeReferencing(scope, async (tx) => {
    await checkReferences(tx, body);
    const after = { companyId: body.company_id, contactId: body.contact_id ?? null };
    await recordAttachments(tx, { organizationId, actor, type: 'task', id, before: UNATTACHED, after });
    const made = await tx.task.create({
      data: {
        ...(columns as Prisma.TaskUncheckedCreateInput),
        id,
        organizationId,
        ...completion(null, body.workflow_status, actor),
        customFields,
      },
    });
    await dispatchCompletion(tx, organizationId, null, made);
    return made;
  });
  return shown(scope, task);
}

/**
 * Partial; the task's row is locked first, so two concurrent completions stamp and dispatch once. A changed company or
 * contact adds `task_detached` and `task_attached` to the timelines it leaves and joins. With `expected` (an If-Match),
 * only a task still at one of those versions changes: 412 otherwise, with nothing written.
 */
async function update(scope: CrmScope, id: string, body: TaskUpdate, expected?: ExpectedVersions): Promise<TaskDto> {
  const columns = columnsOf(body);
  const { organizationId, actor } = scope;
  const custom = await customFieldsOf(scope, 'task').check(body.custom_fields, false);
  const task = await writeReferencing(scope, async (tx) => {
    if (!isUuid(id)) throw taskRecord.notFound();
    await tx.$executeRaw`SELECT 1 FROM tasks WHERE organization_id = ${organizationId}::uuid AND id = ${id}::uuid FOR UPDATE`;
    const current = await tx.task.findFirst({ where: { id } });
    if (!current) throw taskRecord.notFound();
    if (!versionMatches(expected, current.updatedAt)) throw changedSince();
    await checkReferences(tx, body);
    await recordAttachments(tx, { organizationId, actor, type: 'task', id, ...moved(current, body) });
    const changed = await tx.task.update({
      where: { id },
      data: {
        ...columns,
        ...completion(current.workflowStatus, body.workflow_status, actor),
        // The row is locked: merging here is as safe as the kernel's merge in its statement.
        ...(custom ? { customFields: mergeCustomValues(current.customFields, custom) as Prisma.InputJsonObject } : {}),
        updatedAt: nextVersion(current.updatedAt),
      },
    });
    await dispatchCompletion(tx, organizationId, current.workflowStatus, changed);
    return changed;
  });
  return shown(scope, task);
}

/** Tasks: the kernel's behaviour (record.ts: lists, reads, sync, export, delete, archive, restore), the task's own writes. */
export const taskService = { ...recordService<TaskRow, TaskDto>(taskRecord), create, update };
