// Registers a record type's batch endpoint (`POST …/{object}/batch/`): its operations checked and written as the single
// requests would be (batch.ts), answered with a result per operation; it counts as its operations in the request budgets.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TObject } from '@sinclair/typebox';
import { fieldErrors, type AjvIssue } from '../lib/field-errors.js';
import { OrganizationParamsSchema, Ref, responses } from '../lib/http-schemas.js';
import { validationFailed } from '../lib/problem.js';
import { problemBodyOf } from '../plugins/errors.js';
import { runBatch, type BatchOperation, type BodyChecks } from './batch.js';
import { MAX_BATCH_OPERATIONS } from './batch-schemas.js';
import { routesOf, type RecordType } from './definition.js';
import type { RecordService } from './record-service.js';
import { scopeOf } from './scope.js';

type BatchBody = { operations: BatchOperation[]; atomic?: boolean };

export function registerBatchRoute<Row, Dto extends Record<string, unknown>, Query, Create, Update>(
  app: FastifyInstance,
  type: RecordType<Row, Dto, Query>,
  service: RecordService<Dto, Create, Update>,
): void {
  const { names, schemas } = type;
  const { tag, path } = routesOf(type);
  const ops = schemas.batch.ops.map((op) => `\`${op}\``).join(', ');

  /** A body check with the very validator of the single request's body (its 400 and `errors`, the same). */
  const check = (schema: TObject) => {
    const validate = app.validatorCompiler?.({ schema: { $ref: schema.$id }, method: 'POST', url: path, httpPart: 'body' });
    if (!validate) throw new Error('the app has no validator compiler');
    return (data: unknown) => {
      const result = validate(data) as boolean | { error?: unknown };
      if (result === true) return data;
      throw validationFailed(fieldErrors(((validate as { errors?: AjvIssue[] }).errors ?? []) as AjvIssue[], 'body'));
    };
  };
  let checks: BodyChecks | undefined;

  app.post(
    `${path}batch/`,
    {
      schema: {
        tags: [tag],
        operationId: `batch${names.many}`,
        summary: `Several writes of ${names.many.toLowerCase()} in one request (MANAGE_CRM).`,
        description:
          `1–${MAX_BATCH_OPERATIONS} operations (${ops}), carried out in order, each exactly as its single request ` +
          '(the same checks, capabilities, `if_match` as `If-Match`, timeline entries, automation events and webhook ' +
          'deliveries, as if made alone). Answers 200 with a result per operation, in order: `status` is what the single ' +
          'request would have answered, with the record (`record`) or its problem (`error`). With `atomic: true`, all or ' +
          'nothing: one transaction, and the first operation that fails answers its problem (400, 403, 404, 409 or 412, ' +
          '`errors` keyed `operations.N`) with nothing written. Counts as its number of operations in the request ' +
          `budgets. Accepts \`Idempotency-Key\` (the whole batch is the request). See docs/notes-and-batches.md.`,
        params: OrganizationParamsSchema,
        body: Ref(schemas.batch.request),
        response: responses({ 200: Ref(schemas.batch.response) }, 401, 403, 404, 409, 412),
      },
      config: {
        access: 'MANAGE_CRM',
        apiKeys: true,
        idempotent: true,
        budgetWeight: (request: FastifyRequest) => (request.body as Partial<BatchBody> | undefined)?.operations?.length ?? 1,
      },
    },
    async (request: FastifyRequest) => {
      const body = request.body as BatchBody;
      checks ??= { create: check(schemas.create), update: check(schemas.update) };
      const outcomes = await runBatch(
        service as unknown as RecordService<Dto, unknown, unknown>,
        scopeOf(request),
        checks,
        body.operations,
        body.atomic === true,
      );
      return {
        results: outcomes.map(({ index, status, record, error }) => ({
          index,
          status,
          ...(record === undefined ? {} : { record }),
          ...(error === undefined ? {} : { error: problemBodyOf(error, request) }),
        })),
      };
    },
  );
}
