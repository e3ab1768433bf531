// Request and response schemas of the task endpoints: the task, its create/update bodies, its enums and list filters.
import { customFieldsOfBody, customFieldsOfRecord } from '../../records/custom-fields/schemas.js';
import { ALL_BATCH_OPS, batchComponents, recordBatchSchemas } from '../../records/batch-schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { queryPageSchema } from '../../records/filter/schema.js';
import { named, Nullable, NullableTimestamp, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { ArchivedFilterSchema } from '../../records/activity-schemas.js';
import { RecordParamsSchema, recordBodySchemas, UpdatedSinceSchema } from '../../records/record-schemas.js';

export const TaskKindSchema = StringEnum(['task', 'call', 'email', 'meeting'], {
  $id: 'TaskKind',
  description: 'What the task is: `task` (default), `call`, `email` or `meeting`.',
});
export const TaskPrioritySchema = StringEnum(['low', 'normal', 'high', 'urgent'], {
  $id: 'TaskPriority',
  description: 'How urgent: `low`, `normal` (default), `high` or `urgent`.',
});
export const TaskWorkflowStatusSchema = StringEnum(['todo', 'in_progress', 'waiting', 'completed'], {
  $id: 'TaskWorkflowStatus',
  description:
    'Where the work stands: `todo` (default), `in_progress`, `waiting` or `completed`. Becoming `completed` sets ' +
    '`completed_at` and `completed_by` (and dispatches `task.completed`); leaving it clears them.',
});
export const TaskEffectiveStatusSchema = StringEnum(['open', 'overdue', 'completed'], {
  $id: 'TaskEffectiveStatus',
  description: '`completed` when completed; else `overdue` when `due_at` has passed; else `open` (no due time, or a future one).',
});
export const TaskSortSchema = StringEnum(['created_at', 'due_at'], {
  $id: 'TaskSort',
  description: 'List order: `created_at` (default, newest first) or `due_at` (soonest due first, tasks without a due time last).',
});
export type TaskEffectiveStatus = Static<typeof TaskEffectiveStatusSchema>;

export const TaskSchema = Type.Object(
  {
    id: Uuid(),
    title: Type.String(),
    kind: Ref(TaskKindSchema),
    priority: Ref(TaskPrioritySchema),
    workflow_status: Ref(TaskWorkflowStatusSchema),
    effective_status: Ref(TaskEffectiveStatusSchema),
    due_at: NullableTimestamp(),
    reminder_at: NullableTimestamp(),
    company_id: Uuid(),
    contact_id: Nullable(Uuid()),
    deal_id: Nullable(Uuid()),
    assigned_to: Nullable(Uuid({ description: 'User id of the member the task is assigned to.' })),
    notes: Nullable(Type.String()),
    completed_at: NullableTimestamp(),
    completed_by: Nullable(Uuid({ description: 'The user who completed it; null when completed through an API key.' })),
    completed_by_api_key_id: Nullable(
      Uuid({ description: 'The workspace API key that completed it (never the user who created the key); null when a user did.' }),
    ),
    archived_at: NullableTimestamp(),
    custom_fields: customFieldsOfRecord(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    ...named('Task'),
    description: 'Something to do about a company.',
    examples: [
      {
        id: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a',
        title: 'Call about the renewal',
        kind: 'call',
        priority: 'high',
        workflow_status: 'todo',
        effective_status: 'open',
        due_at: '2026-03-02T10:00:00.000Z',
        reminder_at: '2026-03-02T09:45:00.000Z',
        company_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        contact_id: null,
        deal_id: null,
        assigned_to: null,
        notes: null,
        completed_at: null,
        completed_by: null,
        completed_by_api_key_id: null,
        archived_at: null,
        custom_fields: {},
        created_at: '2026-02-20T09:30:00.000Z',
        updated_at: '2026-02-20T09:30:00.000Z',
      },
    ],
  },
);
export type TaskDto = Static<typeof TaskSchema>;

export const TaskBodySchemas = recordBodySchemas(
  'Task',
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    kind: Ref(TaskKindSchema),
    priority: Ref(TaskPrioritySchema),
    workflow_status: Ref(TaskWorkflowStatusSchema),
    due_at: Nullable(Timestamp()),
    reminder_at: Nullable(Timestamp()),
    company_id: Uuid({ description: 'A company of this workspace (else 400).' }),
    contact_id: Nullable(Uuid({ description: 'A contact of this workspace (else 400).' })),
    deal_id: Nullable(Uuid({ description: 'A deal of this workspace (else 400).' })),
    assigned_to: Nullable(Uuid({ description: 'User id of a member of this workspace (else 400).' })),
    notes: Nullable(Type.String({ maxLength: 10000 })),
    custom_fields: customFieldsOfBody(),
  },
  ['title', 'company_id'],
);
export type TaskCreate = Static<typeof TaskBodySchemas.create>;
export type TaskUpdate = Static<typeof TaskBodySchemas.update>;

export const TaskListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  assigned_to: Type.Optional(
    Type.String({
      pattern: '^(me|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$',
      description: 'Only tasks assigned to this user id, or `me` (the signed-in user; 400 with an API key, which is no user).',
    }),
  ),
  effective_status: Type.Optional(
    Type.Array(Ref(TaskEffectiveStatusSchema), {
      description:
        'Only tasks in these effective statuses (repeat the parameter for several: `open` and `overdue` are the unfinished ones).',
    }),
  ),
  due_before: Type.Optional(Timestamp({ description: 'Only tasks due before this time.' })),
  company_id: Type.Optional(Uuid({ description: "Only this company's tasks." })),
  deal_id: Type.Optional(Uuid({ description: "Only this deal's tasks." })),
  sort: Type.Optional(Ref(TaskSortSchema)),
  archived: Type.Optional(Ref(ArchivedFilterSchema)),
  updated_since: UpdatedSinceSchema,
});
export type TaskListQuery = Static<typeof TaskListQuerySchema>;

export const TaskParamsSchema = RecordParamsSchema('task_id', 'Task');

/** The batch endpoint's request and answer (`POST …/tasks/batch/`). */
export const TaskBatchSchemas = recordBatchSchemas('Task', TaskSchema, ALL_BATCH_OPS);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
/** The answer of a task query (POST …/query/). */
export const TaskQueryPageSchema = queryPageSchema('Task', TaskSchema);

export const TASK_SCHEMAS = [
  TaskKindSchema,
  TaskPrioritySchema,
  TaskWorkflowStatusSchema,
  TaskEffectiveStatusSchema,
  TaskSortSchema,
  TaskSchema,
  TaskBodySchemas.create,
  TaskBodySchemas.update,
  ...batchComponents(TaskBatchSchemas),
  TaskQueryPageSchema,
];
