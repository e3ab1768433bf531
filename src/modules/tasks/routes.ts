// Routes of tasks: list (assignee or `me`, effective status, due before, company, deal; newest first or soonest due),
// create, read, update, delete. Reads need VIEW_CRM, writes MANAGE_CRM; workspace API keys may call them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NoContent, OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageResponse } from '../../lib/pagination.js';
import { paginate } from '../../http/pagination.js';
import { requireTenant } from '../../http/request.js';
import { CONDITIONAL_GET_NOTE, conditionalRead, conditionalWrite, ifMatch, sendRecord, tagged, withEtag } from '../../http/etag.js';
import { TaskBodySchemas, TaskListQuerySchema, TaskParamsSchema, TaskSchema } from './schemas.js';
import { actorOf } from '../../records/record-routes.js';
import { positionOf } from './service.js';

const documented = { tags: ['tasks'] };
const read = { access: 'VIEW_CRM', apiKeys: true } as const;
const write = { access: 'MANAGE_CRM', apiKeys: true } as const;

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tasks = app.services.tasks;

  app.get(
    '/tasks/',
    {
      schema: {
        ...documented,
        operationId: 'listTasks',
        summary: 'Tasks of a workspace, newest first or soonest due (VIEW_CRM).',
        description:
          '"My open tasks, soonest due": `assigned_to=me&effective_status=open&effective_status=overdue&sort=due_at`. ' +
          'Pages follow the `Link: rel="next"` header.',
        params: OrganizationParamsSchema,
        querystring: TaskListQuerySchema,
        response: responses({ 200: pageResponse(Ref(TaskSchema), 'Tasks in the requested order.') }, 401, 403, 404),
      },
      config: read,
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      const rows = await tasks.list(requireTenant(request), actorOf(request), request.query, page);
      return paginate(request, reply, rows, page.limit, positionOf(request.query.sort));
    },
  );

  app.post(
    '/tasks/',
    {
      schema: {
        ...documented,
        operationId: 'createTask',
        summary: 'Create a task (MANAGE_CRM).',
        description:
          '`kind` defaults to `task`, `priority` to `normal`, `workflow_status` to `todo`. Created `completed`, it is ' +
          'stamped and dispatches `task.completed`. Accepts `Idempotency-Key`.',
        params: OrganizationParamsSchema,
        body: Ref(TaskBodySchemas.create),
        response: responses({ 201: Ref(TaskSchema) }, 401, 403, 404),
      },
      config: { ...write, idempotent: true },
    },
    async (request, reply) => {
      reply.code(201);
      return tasks.create(requireTenant(request), actorOf(request), request.body);
    },
  );

  app.get(
    '/tasks/:task_id/',
    {
      schema: {
        ...documented,
        operationId: 'getTask',
        summary: 'One task (VIEW_CRM).',
        description:
          `${CONDITIONAL_GET_NOTE} \`effective_status\` is worked out at each read, not stored: a task that became overdue ` +
          'since keeps its version (its ETag), so a client answered 304 works it out from `due_at` itself.',
        params: TaskParamsSchema,
        ...conditionalRead(Ref(TaskSchema)),
      },
      config: read,
    },
    async (request, reply) => sendRecord(request, reply, await tasks.get(requireTenant(request), request.params.task_id)),
  );

  app.patch(
    '/tasks/:task_id/',
    {
      schema: {
        ...documented,
        operationId: 'updateTask',
        summary: 'Change some fields of a task (MANAGE_CRM).',
        description:
          'Partial: absent fields stay unchanged. `workflow_status: completed` sets `completed_at` and `completed_by` ' +
          '(through an API key: `completed_by_api_key_id`, the key) and dispatches `task.completed`; another status clears them. ' +
          'With `If-Match`, a task that changed since answers 412 and nothing is written (no timeline entry, no event).',
        params: TaskParamsSchema,
        body: Ref(TaskBodySchemas.update),
        ...conditionalWrite({ 200: tagged(Ref(TaskSchema)) }),
      },
      config: write,
    },
    async (request, reply) =>
      withEtag(reply, await tasks.update(requireTenant(request), actorOf(request), request.params.task_id, request.body, ifMatch(request))),
  );

  app.delete(
    '/tasks/:task_id/',
    {
      schema: {
        ...documented,
        operationId: 'deleteTask',
        summary: 'Delete a task (MANAGE_CRM).',
        description: 'With `If-Match`, a task that changed since answers 412 and stays.',
        params: TaskParamsSchema,
        ...conditionalWrite({ 204: NoContent }),
      },
      config: write,
    },
    async (request, reply) => {
      await tasks.remove(requireTenant(request), request.params.task_id, ifMatch(request));
      return reply.code(204).send(null);
    },
  );
};
