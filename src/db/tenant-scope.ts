// A Prisma client bound to one organization: every query and write on a tenant table gets its organizationId.
import type { RuntimeDataModel } from '@prisma/client/runtime/client';
import type { Db } from './client.js';
import type { Prisma } from '../generated/prisma/client.js';
import { withOrganization } from './organization-setting.js';

/** Tenant tables (model names as in the Prisma schema): every row belongs to one organization. */
const TENANT_MODELS: ReadonlySet<string> = new Set([
  'Company',
  'Contact',
  'Automation',
  'AutomationRun',
  'CrmEvent',
  'EventStreamTicket',
  'EventStream',
  'Invitation',
  'Membership',
  'EmailAccount',
  'AutomationEmailSend',
  'Import',
  'ImportError',
  'ImportChunk',
  'ApiKey',
  'CrmActivity',
  'Deal',
  'DealPipelineTotal',
  'Task',
  'Note',
  'NoteTarget',
  'SavedView',
  'CustomFieldDefinition',
]);
const ORGANIZATION = 'Organization';

// biome-ignore lint/suspicious/noExplicitAny: Prisma's query arguments are rewritten generically, whatever the model.
type Args = Record<string, any>;

const FILTERED_OPERATIONS = new Set([
  'findUnique',
  'findUniqueOrThrow',
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'count',
  'aggregate',
  'groupBy',
  'update',
  'updateMany',
  'updateManyAndReturn',
  'delete',
  'deleteMany',
  'upsert',
]);
const CREATE_OPERATIONS = new Set(['create', 'createMany', 'createManyAndReturn']);
/** Argument keys holding data to write; every other key (where, include, select, orderBy, ...) reads. */
const WRITE_KEYS = ['data', 'create', 'update'];

/** Thrown for a query shape the scope cannot make safe; a programming error, never a client's fault. */
export class TenantScopeError extends Error {
  override name = 'TenantScopeError';
}

/** Per model: its relation fields (with the model each points to) and its scalar fields. */
interface ModelShape {
  relations: ReadonlyMap<string, string>;
  scalars: ReadonlySet<string>;
}
type Shapes = ReadonlyMap<string, ModelShape>;

const shapesByClient = new WeakMap<Db, Shapes>();

/**
 * Reads the schema the generated client carries. `_runtimeDataModel` is not part of Prisma's typed API, so its
 * absence (a Prisma upgrade) fails every tenant query loudly instead of silently skipping the nested checks.
 */
function shapesOf(db: Db): Shapes {
  let shapes = shapesByClient.get(db);
  if (!shapes) {
    const datamodel = (db as unknown as { _runtimeDataModel?: RuntimeDataModel })._runtimeDataModel;
    if (!datamodel?.models?.[ORGANIZATION]) throw new TenantScopeError('the Prisma client does not expose its data model');
    shapes = new Map(
      Object.entries(datamodel.models).map(([model, { fields }]) => [
        model,
        {
          relations: new Map(fields.filter((field) => field.kind === 'object').map((field) => [field.name, field.type])),
          scalars: new Set(fields.filter((field) => field.kind !== 'object').map((field) => field.name)),
        },
      ]),
    );
    shapesByClient.set(db, shapes);
  }
  return shapes;
}

const isGuarded = (model: string) => TENANT_MODELS.has(model) || model === ORGANIZATION;

const isPlainObject = (value: unknown): value is Args =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/**
 * Rejects nested relation traversals the top-level filter cannot cover. A row of a tenant table (or the own
 * organization) is "trusted": its tenant relations are same-organization by their composite foreign keys. A row
 * reached through a non-tenant model (a user) is not: from it, reading into tenant tables or organizations would
 * cross tenants. Nested writes into tenant tables are refused everywhere: a `connect` can move a row to another
 * organization, so each tenant table is written by its own top-level query.
 */
function checkNested(shapes: Shapes, model: string, value: unknown, writing: boolean, trusted: boolean): void {
  if (Array.isArray(value)) {
    for (const item of value) checkNested(shapes, model, item, writing, trusted);
    return;
  }
  if (!isPlainObject(value)) return;
  const shape = shapes.get(model);
  for (const [key, nested] of Object.entries(value)) {
    const target = shape?.relations.get(key);
    if (target === undefined) {
      // `_count: true` counts every relation of the row, tenant ones included.
      if (key === '_count' && nested === true && !trusted && [...(shape?.relations.values() ?? [])].some(isGuarded)) {
        throw new TenantScopeError(`_count of ${model} would count rows of other organizations`);
      }
      // Scalar values and filters (JSON included) hold no relation; operators (AND, some, where, select, ...)
      // stay on this model.
      if (!shape?.scalars.has(key)) checkNested(shapes, model, nested, writing, trusted);
      continue;
    }
    if (isGuarded(target) && (writing || !trusted)) {
      throw new TenantScopeError(
        writing
          ? `nested write to ${model}.${key} is not allowed through the tenant-scoped client; write ${target} with its own query`
          : `${model}.${key} reaches ${target} rows of other organizations; query ${target} directly`,
      );
    }
    checkNested(shapes, target, nested, writing, trusted && isGuarded(target));
  }
}

/** `where` AND the scope condition: a caller's own organizationId/id filter can narrow the result, never widen it. */
function andWhere(where: Args | undefined, condition: Args): Args {
  const existing = where?.AND === undefined ? [] : Array.isArray(where.AND) ? where.AND : [where.AND];
  return { ...(where ?? {}), AND: [...existing, condition] };
}

function scopeArgs(model: string, operation: string, args: Args | undefined, organizationId: string): Args {
  const scoped: Args = { ...(args ?? {}) };
  if (model === ORGANIZATION) {
    if (CREATE_OPERATIONS.has(operation) || operation === 'upsert') {
      throw new TenantScopeError('organizations cannot be created through the tenant-scoped client');
    }
    scoped.where = andWhere(scoped.where, { id: organizationId });
    return scoped;
  }
  if (FILTERED_OPERATIONS.has(operation)) scoped.where = andWhere(scoped.where, { organizationId });
  if (operation === 'create') scoped.data = { ...scoped.data, organizationId };
  if (operation === 'createMany' || operation === 'createManyAndReturn') {
    const rows: Args[] = Array.isArray(scoped.data) ? scoped.data : [scoped.data];
    scoped.data = rows.map((row) => ({ ...row, organizationId }));
  }
  if (operation === 'upsert') {
    scoped.create = { ...scoped.create, organizationId };
    scoped.update = withoutOrganizationId(scoped.update);
  }
  if (operation.startsWith('update')) scoped.data = withoutOrganizationId(scoped.data);
  return scoped;
}

/** Moving a row to another tenant is never allowed. */
function withoutOrganizationId(data: Args | undefined): Args | undefined {
  if (!data || !('organizationId' in data)) return data;
  const { organizationId: _ignored, ...rest } = data;
  return rest;
}

/** The read Prisma batches across requests, and the one it is equivalent to that it does not batch. */
const UNBATCHED: Record<string, string | undefined> = { findUnique: 'findFirst', findUniqueOrThrow: 'findFirstOrThrow' };

/** Whether an operation runs in a transaction (Prisma's internal parameters say so; a transaction is one organization). */
const inTransaction = (params: object) =>
  (params as { __internalParams?: { transaction?: unknown } }).__internalParams?.transaction !== undefined;

/** The client's property of a model (`Company` → `company`). */
const delegateName = (model: string) => model.charAt(0).toLowerCase() + model.slice(1);

/** A findUnique `where` as findFirst takes it: a compound unique key (`organizationId_userId: {...}`) spread into its fields. */
function withoutCompoundKeys(shapes: Shapes, model: string, where: Args): Args {
  const scalars = shapes.get(model)?.scalars;
  const flat: Args = {};
  for (const [key, value] of Object.entries(where)) {
    if (scalars && !scalars.has(key) && key.includes('_') && isPlainObject(value)) Object.assign(flat, value);
    else flat[key] = value;
  }
  return flat;
}

function extendFor(db: Db, organizationId: string) {
  const shapes = shapesOf(db);
  return db.$extends({
    name: 'tenant-scope',
    query: {
      // Raw statements and model operations alike run with the organization the row-level security policies admit
      // (organization-setting.ts). A Prisma promise starts its request when `then` is called: called here, inside.
      $allOperations(params) {
        const { model, operation, args, query } = params;
        const send = (sent: typeof args) => withOrganization(organizationId, () => query(sent).then((result) => result));
        if (model === undefined) return send(args);
        const trusted = isGuarded(model);
        for (const [key, value] of Object.entries((args ?? {}) as Args)) {
          checkNested(shapes, model, value, WRITE_KEYS.includes(key), trusted);
        }
        if (!trusted) return send(args);
        const scoped = scopeArgs(model, operation, args as Args, organizationId);
        // Prisma gathers the findUnique calls of one tick, whatever their organization, into one batch sent in the
        // context of the first: another organization's read would then carry the first one's setting, and the
        // policy would hide its row (a 404 for a record that exists). Outside a transaction (whose batch is its
        // own), each is sent as the findFirst it is equivalent to, which Prisma never batches.
        const unbatched = UNBATCHED[operation];
        if (unbatched && !inTransaction(params)) {
          const delegate = (db as unknown as Record<string, Record<string, (args: Args) => Promise<unknown>>>)[delegateName(model)];
          const read = delegate?.[unbatched];
          if (!read) throw new TenantScopeError(`the Prisma client has no ${model}.${unbatched}`);
          const unbatchedArgs = { ...scoped, where: withoutCompoundKeys(shapes, model, scoped.where) };
          return withOrganization(organizationId, () => read.call(delegate, unbatchedArgs).then((result) => result));
        }
        return send(scoped as typeof args);
      },
    },
  });
}

/** Extending costs tens of microseconds, paid on every tenant request without this cache (oldest evicted first). */
const MAX_CACHED_CLIENTS = 1000;
const scopedClients = new WeakMap<Db, Map<string, ReturnType<typeof extendFor>>>();

/**
 * The client a tenant-scoped service receives. On tenant tables every read, update and delete is filtered by the
 * organization and every create gets it; the organization itself is the only one readable; nested reads and
 * writes that could reach another tenant throw. Interactive transactions (`$transaction(async (tx) => ...)`)
 * keep the scope. Raw SQL (`$queryRaw`) is not scoped by the application: it must filter by organization explicitly
 * (row-level security admits only this organization's rows to it, as to every statement of this client).
 */
export function scopeToOrganization(db: Db, organizationId: string) {
  let clients = scopedClients.get(db);
  if (!clients) {
    clients = new Map();
    scopedClients.set(db, clients);
  }
  let scoped = clients.get(organizationId);
  if (!scoped) {
    const oldest = clients.keys().next();
    if (clients.size >= MAX_CACHED_CLIENTS && !oldest.done) clients.delete(oldest.value);
    scoped = extendFor(db, organizationId);
    clients.set(organizationId, scoped);
  }
  return scoped;
}

export type TenantDb = ReturnType<typeof scopeToOrganization>;
/** The client inside `TenantDb.$transaction(async (tx) => ...)`: scoped the same way. */
export type TenantTx = Parameters<Parameters<TenantDb['$transaction']>[0]>[0];

/**
 * A transaction of either client: installation-wide code (provisioning) and tenant services share a few steps. Named
 * by one member both have: comparing the clients' whole types exceeds the compiler's limits.
 */
export type AnyTx = Pick<Prisma.TransactionClient, '$executeRaw'>;

/**
 * Types only: Prisma's extended client types do not unify with the plain ones, so a step written for both calls
 * through this view. At run time the object is unchanged, and a tenant transaction stays scoped.
 */
export const transactionView = (tx: AnyTx | TenantDb): Prisma.TransactionClient => tx as Prisma.TransactionClient;
