// A record type's batch: each operation through the kernel's writes (the service's create, update, archive, restore or
// remove, with their own checks, timeline entries and events; consecutive creates in one statement), its outcome the
// status and problem the single request would have answered; all in one transaction. `atomic`: the first failure
// undoes them all.
import { versionsIn } from '../lib/etag.js';
import { ProblemError, validationFailed } from '../lib/problem.js';
import type { BatchOp } from './batch-schemas.js';
import { createAllOf, type CreateAll, type CrmScope, type RecordService } from './record-service.js';
import { inOneTransaction, type Step } from './batch-transaction.js';

/** One operation of a batch request. */
export interface BatchOperation {
  op: BatchOp;
  id?: string;
  data?: Record<string, unknown>;
  if_match?: string;
}

/** The outcome of one operation: its status, and the record or the problem the single request would have answered. */
export interface BatchOutcome<Dto> {
  index: number;
  status: number;
  record?: Dto;
  error?: ProblemError;
}

/** Checks a create or update body as the single request's validation does, answering its 400; the checked body. */
export interface BodyChecks {
  create(data: unknown): unknown;
  update(data: unknown): unknown;
}

/** The operation as its single request: validation first, then the service's write. */
async function runOne<Dto>(
  service: RecordService<Dto, unknown, unknown>,
  scope: CrmScope,
  checks: BodyChecks,
  operation: BatchOperation,
): Promise<{ status: number; record?: Dto }> {
  const { op, id, data } = operation;
  if (op === 'create') {
    if (id !== undefined) throw validationFailed({ id: ['Not taken by `create`: the server assigns the id.'] });
    return { status: 201, record: await service.create(scope, checks.create(data ?? {})) };
  }
  if (id === undefined) throw validationFailed({ id: [`This field is required for \`${op}\`.`] });
  const body = op === 'update' ? checks.update(data ?? {}) : undefined;
  if (op !== 'update' && data !== undefined) throw validationFailed({ data: [`Not taken by \`${op}\`.`] });
  const expected = operation.if_match === undefined ? undefined : versionsIn(operation.if_match, { strong: true });
  switch (op) {
    case 'update':
      return { status: 200, record: await service.update(scope, id, body, expected) };
    case 'archive':
      return { status: 200, record: await service.archive(scope, id, expected) };
    case 'restore':
      return { status: 200, record: await service.restore(scope, id, expected) };
    case 'delete':
      await service.remove(scope, id, expected);
      return { status: 204 };
  }
}

/** The problem of an atomic batch that failed at `index`: that operation's, its field errors under `operations.N`. */
function atomicFailure(error: ProblemError, index: number): ProblemError {
  const prefix = `operations.${index}`;
  const fields = Object.entries(error.errors ?? {}).map(([field, messages]) => [`${prefix}.${field}`, messages] as const);
  return new ProblemError({
    status: error.status,
    code: error.code,
    title: error.title,
    detail: `Operation ${index} failed, so none was written: ${error.detail}`,
    errors: Object.fromEntries([[prefix, [error.detail]], ...fields]),
    headers: error.headers,
  });
}

/**
 * Runs `operations` in order, in one transaction: one commit (one WAL flush) for the batch, where single requests pay
 * one each. Each on its own: each operation between a savepoint and its release, a failure (a ProblemError: what the
 * single request answers) undoing that operation's writes only, its outcome, and the next one runs. Atomic: the first
 * failure is thrown (as `atomicFailure`) and nothing is written, no timeline entry, no automation run or webhook
 * delivery. Anything else (a broken connection) fails the whole request, nothing written.
 */
export async function runBatch<Dto>(
  service: RecordService<Dto, unknown, unknown>,
  scope: CrmScope,
  checks: BodyChecks,
  operations: readonly BatchOperation[],
  atomic: boolean,
): Promise<BatchOutcome<Dto>[]> {
  return inOneTransaction(scope, async (inner, step) => {
    const outcomes: BatchOutcome<Dto>[] = [];
    const createAll = createAllOf(service);
    let index = 0;
    // Past a run of creates that failed together, its creates go one by one (not tried together again, shorter).
    let oneByOneUntil = 0;
    while (index < operations.length) {
      const creates = index >= oneByOneUntil ? createsFrom(operations, index) : [];
      const together = creates.length > 1 && createAll ? await createdTogether(createAll, inner, checks, creates, step) : undefined;
      if (together) {
        for (const outcome of together) outcomes.push({ index: index++, ...outcome });
        continue;
      }
      if (creates.length > 1) oneByOneUntil = index + creates.length;
      const operation = operations[index] as BatchOperation;
      try {
        outcomes.push({
          index,
          ...(atomic ? await runOne(service, inner, checks, operation) : await step(() => runOne(service, inner, checks, operation))),
        });
      } catch (error) {
        if (!(error instanceof ProblemError)) throw error;
        if (atomic) throw atomicFailure(error, index);
        outcomes.push({ index, status: error.status, error });
      }
      index += 1;
    }
    return outcomes;
  });
}

/** The creates (without an `id`) that follow one another from `index` on. */
function createsFrom(operations: readonly BatchOperation[], index: number): BatchOperation[] {
  const creates: BatchOperation[] = [];
  for (const operation of operations.slice(index)) {
    if (operation.op !== 'create' || operation.id !== undefined) break;
    creates.push(operation);
  }
  return creates;
}

/**
 * Consecutive creates in one statement (the kernel's `createAll`), after a savepoint: their outcomes when every one succeeds. When
 * one would fail (a 400, a duplicate), nothing of them is kept and undefined is answered: they then run one by one,
 * each answering what its single request would, in order.
 */
async function createdTogether<Dto>(
  createAll: CreateAll<Dto>,
  scope: CrmScope,
  checks: BodyChecks,
  creates: readonly BatchOperation[],
  step: Step,
): Promise<Array<{ status: number; record: Dto }> | undefined> {
  try {
    const bodies = creates.map((operation) => checks.create(operation.data ?? {}));
    const records = await step(() => createAll(scope, bodies));
    return records.map((record) => ({ status: 201, record }));
  } catch (error) {
    if (error instanceof ProblemError) return undefined;
    throw error;
  }
}
