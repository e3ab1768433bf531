// The named request and answer schemas of a record type's batch endpoint (`POST …/{object}/batch/`): its operations
// (the single writes it offers) and a result per operation.
import { Type, type TObject } from '@sinclair/typebox';
import { named, ProblemSchema, Ref, StringEnum } from '../lib/http-schemas.js';

/** The single writes a batch operation can be. */
export type BatchOp = 'create' | 'update' | 'archive' | 'restore' | 'delete';
export const ALL_BATCH_OPS = ['create', 'update', 'archive', 'restore', 'delete'] as const satisfies readonly BatchOp[];

/** How many operations one batch holds at most. */
export const MAX_BATCH_OPERATIONS = 100;

/** The batch schemas of the record type `one` (`Company`), whose record schema is `record` and whose writes are `ops`. */
export function recordBatchSchemas(one: string, record: TObject, ops: readonly [BatchOp, ...BatchOp[]]) {
  const noun = one.toLowerCase();
  const op = StringEnum(ops, {
    $id: `${one}BatchOp`,
    description: `The single write of a ${noun} batch operation: ${ops.map((name) => `\`${name}\``).join(', ')}.`,
  });
  const operation = Type.Object(
    {
      op: Ref(op),
      id: Type.Optional(
        Type.String({
          description: `The ${noun} of an operation other than \`create\` (a malformed or unknown id: 404 for that operation).`,
        }),
      ),
      data: Type.Optional(
        Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              `The body of a \`create\` (\`${one}Create\`) or \`update\` (\`${one}Update\`), checked per operation as the ` +
              'single request checks it (400 for that operation).',
          },
        ),
      ),
      if_match: Type.Optional(
        Type.String({
          description: `The ${noun}'s \`ETag\` exactly as received, as an \`If-Match\` header would carry it (412 for that operation when it changed since).`,
        }),
      ),
    },
    { ...named(`${one}BatchOperation`), additionalProperties: false, description: `One write of a ${noun} batch.` },
  );
  const request = Type.Object(
    {
      operations: Type.Array(Ref(operation), {
        minItems: 1,
        maxItems: MAX_BATCH_OPERATIONS,
        description: `1–${MAX_BATCH_OPERATIONS} operations, carried out in this order.`,
      }),
      atomic: Type.Optional(
        Type.Boolean({
          description:
            'All or nothing: one transaction; the first operation that fails ends the batch with its problem (its `errors` ' +
            'keyed `operations.N`) and nothing is written. Default false: each operation on its own.',
        }),
      ),
    },
    { ...named(`${one}BatchRequest`), additionalProperties: false },
  );
  const result = Type.Object(
    {
      index: Type.Integer({ minimum: 0, description: 'The operation this result is of (its place in `operations`).' }),
      status: Type.Integer({ description: 'The HTTP status the single request would have answered.' }),
      record: Type.Optional(Ref(record, { description: `The ${noun} as the single request would have answered it (not after a delete).` })),
      error: Type.Optional(Ref(ProblemSchema, { description: 'The problem the single request would have answered.' })),
    },
    { ...named(`${one}BatchResult`), additionalProperties: false, description: `The outcome of one operation of a ${noun} batch.` },
  );
  const response = Type.Object(
    { results: Type.Array(Ref(result), { description: 'One result per operation, in operation order.' }) },
    { ...named(`${one}BatchResponse`), additionalProperties: false },
  );
  return { op, operation, request, result, response, ops };
}

export type RecordBatchSchemas = ReturnType<typeof recordBatchSchemas>;

/** The named components of a batch, for app.addSchema (the module's schema list). */
export const batchComponents = (batch: RecordBatchSchemas) => [batch.op, batch.operation, batch.request, batch.result, batch.response];
