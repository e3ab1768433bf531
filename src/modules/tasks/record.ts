// The task record type: its table and API fields (with `effective_status`, worked out at each read), filters
// (assignee or `me`, effective status, due before, company, deal, archive state), its two orders (newest first, soonest
// due), sync and export. Its creates and updates are the task's own (service.ts: completion).
import type { Prisma } from '../../generated/prisma/client.js';
import type { PageCondition } from '../../db/page-query.js';
import { pageTable } from '../../db/page-table.js';
import type { ActivityActor } from '../../db/tenant-writes.js';
import { NEWEST_FIRST } from '../../lib/pagination.js';
import { notFound, validationFailed } from '../../lib/problem.js';
import type { RecordType } from '../../records/definition.js';
import { enumField, RECORD_FIELDS, textFields } from '../../records/filter/fields.js';
import { COMPANY_FIELDS } from '../companies/record.js';
import {
  TaskBodySchemas,
  TaskListQuerySchema,
  TaskParamsSchema,
  TaskQueryPageSchema,
  TaskKindSchema,
  TaskPrioritySchema,
  TaskSchema,
  TaskWorkflowStatusSchema,
  type TaskDto,
  type TaskEffectiveStatus,
  type TaskListQuery,
  TaskBatchSchemas,
} from './schemas.js';

export type TaskRow = Prisma.TaskGetPayload<object>;

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
    custom_fields: task.customFields as Record<string, unknown>,
    archived_at: task.archivedAt?.toISOString() ?? null,
    created_at: task.createdAt.toISOString(),
    updated_at: task.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL; `effective_status` as `effectiveStatus` works it out. */
export const taskPage = pageTable<TaskDto, 'assigned_to' | 'company_id' | 'deal_id'>(
  'tasks',
  [
    'id',
    'title',
    'kind',
    'priority',
    'workflow_status',
    'due_at',
    'reminder_at',
    'company_id',
    'contact_id',
    'deal_id',
    'assigned_to',
    'notes',
    'completed_at',
    'completed_by',
    'completed_by_api_key_id',
    'archived_at',
    'custom_fields',
  ],
  ['assigned_to', 'company_id', 'deal_id'],
  { due_at: [{ column: 'due_at', type: 'timestamp', nullsLast: true }] },
  {
    effective_status:
      "CASE WHEN tasks.workflow_status = 'completed' THEN 'completed' WHEN tasks.due_at < now() THEN 'overdue' ELSE 'open' END",
  },
  'task',
);

/** The condition of one effective status (open and overdue read only unfinished tasks: completed_at null). */
const STATUS_CONDITIONS: Record<TaskEffectiveStatus, string> = {
  completed: 'completed_at IS NOT NULL',
  overdue: 'completed_at IS NULL AND due_at < now()',
  open: 'completed_at IS NULL AND (due_at IS NULL OR due_at >= now())',
};

/** Open and overdue together are the unfinished tasks: one condition the partial open-tasks index serves. */
function statusesCondition(statuses: TaskEffectiveStatus[]): PageCondition[] {
  if (statuses.length === 0) return [];
  if (statuses.includes('open') && statuses.includes('overdue')) {
    return statuses.includes('completed') ? [] : [() => 'completed_at IS NULL'];
  }
  return [() => statuses.map((status) => `(${STATUS_CONDITIONS[status]})`).join(' OR ')];
}

/** `assigned_to=me`: the signed-in user; a workspace API key is none (400). */
function assigneeOf(assignedTo: string | undefined, actor: ActivityActor): string | undefined {
  if (assignedTo !== 'me') return assignedTo;
  if (actor.type === 'user' && actor.id !== null) return actor.id;
  throw validationFailed({ assigned_to: ['`me` needs a signed-in user; an API key is none.'] }, 'Query parameters are invalid.');
}

export const taskRecord: RecordType<TaskRow, TaskDto, TaskListQuery> = {
  names: { one: 'Task', many: 'Tasks' },
  schemas: {
    record: TaskSchema,
    create: TaskBodySchemas.create,
    update: TaskBodySchemas.update,
    listQuery: TaskListQuerySchema,
    params: TaskParamsSchema,
    batch: TaskBatchSchemas,
    queryPage: TaskQueryPageSchema,
  },
  table: taskPage,
  query: {
    fields: {
      ...RECORD_FIELDS,
      ...textFields('title', 'notes'),
      kind: enumField(TaskKindSchema.enum, 'task_kind'),
      priority: enumField(TaskPrioritySchema.enum, 'task_priority'),
      workflow_status: enumField(TaskWorkflowStatusSchema.enum, 'task_workflow_status'),
      due_at: { type: 'datetime' },
      reminder_at: { type: 'datetime' },
      completed_at: { type: 'datetime' },
      ...Object.fromEntries(
        ['company_id', 'contact_id', 'deal_id', 'assigned_to', 'completed_by', 'completed_by_api_key_id'].map((name) => [
          name,
          { type: 'uuid' as const },
        ]),
      ),
    },
    company: { column: 'company_id', fields: COMPANY_FIELDS },
    search: false,
  },
  find: (db, id) => db.task.findFirst({ where: { id } }),
  toDto: (row) => toTaskDto(row),
  notFound: () => notFound('Task not found.', 'task_not_found'),
  filters: (query, actor) => {
    const dueBefore = query.due_before;
    return {
      equals: { assigned_to: assigneeOf(query.assigned_to, actor), company_id: query.company_id, deal_id: query.deal_id },
      conditions: [
        ...statusesCondition([...new Set(query.effective_status ?? [])]),
        ...(dueBefore ? [(parameter: (value: unknown, type: string) => string) => `due_at < ${parameter(dueBefore, 'timestamptz')}`] : []),
      ],
      archived: query.archived ?? 'active',
    };
  },
  // `created_at` is newest first here (the default order), `due_at` soonest due first, tasks without a due time last.
  orderOf: (sort) => (sort === 'due_at' ? { sort: 'due_at', descending: false } : NEWEST_FIRST),
  // `task.completed` is the task's own event (service.ts).
  events: null,
  exportFields: [...taskPage.columns.filter((column) => column !== 'custom_fields'), 'created_at', 'updated_at'],
  sync: true,
  customFields: 'task',
  summaries: { list: 'Tasks of a workspace, newest first or soonest due (VIEW_CRM).' },
  notes: {
    page: 'Tasks in the requested order.',
    list:
      '"My open tasks, soonest due": `assigned_to=me&effective_status=open&effective_status=overdue&sort=due_at`. ' +
      'Pages follow the `Link: rel="next"` header.',
    create:
      '`kind` defaults to `task`, `priority` to `normal`, `workflow_status` to `todo`. Created `completed`, it is ' +
      'stamped and dispatches `task.completed`. Accepts `Idempotency-Key`.',
    update:
      'Partial: absent fields stay unchanged. `workflow_status: completed` sets `completed_at` and `completed_by` ' +
      '(through an API key: `completed_by_api_key_id`, the key) and dispatches `task.completed`; another status clears them. ' +
      'With `If-Match`, a task that changed since answers 412 and nothing is written (no timeline entry, no event).',
    delete: 'With `If-Match`, a task that changed since answers 412 and stays.',
    get: (conditional) =>
      `${conditional} \`effective_status\` is worked out at each read, not stored: a task that became overdue ` +
      'since keeps its version (its ETag), so a client answered 304 works it out from `due_at` itself.',
  },
};
