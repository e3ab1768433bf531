// The behaviour every record type shares, from its definition: lists, exports and syncs through the page reader,
// reads that answer 404 for unknown and malformed ids, and the kernel's writes (one statement each, with the type's
// event and timeline entries), database errors mapped to the API's answers. A type with rules of its own (a deal's
// board, a task's completion) replaces the writes it needs to.
import type { Readable } from 'node:stream';
import type { TenantDb } from '../db/tenant-scope.js';
import type { MembershipRole } from '../generated/prisma/enums.js';
import type { TenantPages } from '../db/tenant-pages.js';
import type { ActivityActor, ColumnValues, InsertGuard, TenantWrites } from '../db/tenant-writes.js';
import { isUuid } from '../lib/http-schemas.js';
import type { ListOrder, ListPageRequest } from '../lib/pagination.js';
import { changedSince, versionMatches } from '../lib/etag.js';
import { validationFailed, type ProblemError } from '../lib/problem.js';
import { eventOf, type RecordFilter, type RecordType } from './definition.js';
import { CUSTOM_COLUMN } from '../db/csv-export.js';
import { readCustomFields } from './custom-fields/definitions.js';
import { checkedCustomValues, customFieldsOf } from './custom-fields/values.js';
import { keptDefinitions, readDefinitions } from './custom-fields/kept-definitions.js';
import { recordQuery, type QueryPage } from './query-service.js';

/** The organization a record service works in, its tenant-scoped client and its tenant-bound writer, and who acts. */
export interface CrmScope {
  db: TenantDb;
  organizationId: string;
  writes: TenantWrites;
  actor: ActivityActor;
  /** The acting member's role (rules such as a note's author rule); null or absent for a workspace API key. */
  role?: MembershipRole | null;
}

/** What a single-record read needs: the workspace's writer, whose connection reads (a batch's transaction included). */
export type RecordReader = Pick<CrmScope, 'writes'>;

/** The versions an If-Match names, or `*` (any version). */
type Expected = '*' | Date[];

/** What the kernel's routes call; `recordService` builds it from a definition. */
export interface RecordService<Dto, Create = never, Update = never> {
  list(pages: TenantPages, filter: RecordFilter, page: ListPageRequest): Promise<Dto[]>;
  /** A query (POST …/query/): the body checked (400 with paths), one page and the next page's cursor. */
  query?(pages: TenantPages, body: unknown): Promise<QueryPage<Dto>>;
  csv(pages: TenantPages, filter: RecordFilter, order: ListOrder, fields: readonly string[]): Promise<Readable>;
  /** One record as its list shows it (one statement on the writer's connection: a batch reads its own writes). */
  get(reader: RecordReader, id: string): Promise<Dto>;
  create(scope: CrmScope, body: Create): Promise<Dto>;
  update(scope: CrmScope, id: string, body: Update, expected?: Expected): Promise<Dto>;
  remove(scope: CrmScope, id: string, expected?: Expected): Promise<void>;
  archive(scope: CrmScope, id: string, expected?: Expected): Promise<Dto>;
  restore(scope: CrmScope, id: string, expected?: Expected): Promise<Dto>;
}

/** Creates the records of `bodies` in one statement: all, in their order, or none (the first problem is thrown). */
export type CreateAll<Dto> = (scope: CrmScope, bodies: readonly unknown[]) => Promise<Dto[]>;

/** The kernel's `create` of each record type, with its one-statement version. */
const createsTogether = new WeakMap<object, CreateAll<unknown>>();

/**
 * How `service` creates many records in one statement, as its `create` creates each (its checks, timeline entry and
 * event): only when its `create` is the kernel's. A type with a create of its own (deals, tasks, notes: attachments,
 * their own checks) has none, whatever else it takes from the kernel, so a batch then creates one by one.
 */
export function createAllOf<Dto>(service: Pick<RecordService<Dto, unknown, unknown>, 'create'>): CreateAll<Dto> | undefined {
  return createsTogether.get(service.create) as CreateAll<Dto> | undefined;
}

/** PostgreSQL's foreign_key_violation: a reference outside the organization (composite keys). */
const FOREIGN_KEY_VIOLATION = '23503';
/** PostgreSQL's unique_violation: a value the workspace already has (the index names the field). */
const UNIQUE_VIOLATION = '23505';

export function recordService<Row, Dto extends Record<string, unknown>, Create = never, Update extends object = never>(
  type: RecordType<Row, Dto, never>,
): RecordService<Dto, Create, Update> {
  const { notFound, table, timeline } = type;

  function mapWriteError(error: unknown): never {
    const { code, constraint } = error as { code?: unknown; constraint?: unknown };
    if (code === FOREIGN_KEY_VIOLATION && type.invalidReference) throw type.invalidReference();
    const duplicate = code === UNIQUE_VIOLATION && typeof constraint === 'string' ? type.duplicate?.(constraint) : undefined;
    throw duplicate ?? error;
  }

  /** Whether `userId` is a member of the scope's workspace. */
  const isMember = async (scope: CrmScope, userId: string) =>
    (await scope.db.membership.findFirst({ select: { id: true }, where: { userId } })) !== null;

  /** The record-specific checks, and `assigned_to` (when set) a member of the workspace (`member` answers whether). */
  async function prepared(scope: CrmScope, body: object, member = (userId: string) => isMember(scope, userId)): Promise<ColumnValues> {
    const values = type.prepare ? type.prepare(body as ColumnValues) : (body as ColumnValues);
    const assignee = values.assigned_to;
    if (typeof assignee === 'string' && !(await member(assignee))) {
      throw validationFailed({ assigned_to: ['Not a member of this workspace.'] });
    }
    return values;
  }

  /**
   * `values` with their custom fields checked against the type's definitions (400 for what they refuse): on a create
   * every required one; a PATCH's merge into the record's map happens in its statement.
   */
  async function withCustomFields(scope: CrmScope, values: ColumnValues, create: boolean): Promise<ColumnValues> {
    if (!type.customFields) return values;
    return { ...values, custom_fields: await customFieldsOf(scope, type.customFields).check(values.custom_fields, create) };
  }

  /** The versions an If-Match names; none for `*` (any version) as for no If-Match. */
  const versionsOf = (expected?: Expected) => (expected === '*' ? undefined : expected);

  /** The timeline entry of a write by `scope`'s actor, for a type with a timeline. */
  const entryOf = (scope: CrmScope, kind?: string) => (timeline ? { column: timeline, actor: scope.actor, kind } : undefined);

  /** Why a write at `versions` found no row: 412 when the record is there (it changed since), else 404. */
  async function unwritten(db: TenantDb, id: string, versions: Date[] | undefined): Promise<ProblemError> {
    return versions && isUuid(id) && (await type.find(db, id)) ? changedSince() : notFound();
  }

  /**
   * Sets `archived_at` (now, or null to restore) unless it already is so, with its timeline entry. With `expected` (an
   * If-Match), only a record at one of those versions: 412 otherwise, before anything else (an archive of an archived
   * record too), and decided again in the write's own statement.
   */
  async function setArchived(scope: CrmScope, id: string, archive: boolean, expected?: Expected): Promise<Dto> {
    const versions = versionsOf(expected);
    const current = await get(scope, id);
    if (!versionMatches(versions, String(current.updated_at))) throw changedSince();
    if ((current.archived_at !== null) === archive) return current;
    const values = { archived_at: archive ? new Date().toISOString() : null };
    const record = await scope.writes.update(
      table,
      id,
      values,
      eventOf(type, 'updated'),
      versions,
      entryOf(scope, archive ? 'archived' : 'restored'),
    );
    if (!record) throw await unwritten(scope.db, id, versions);
    return record;
  }

  async function get(reader: RecordReader, id: string): Promise<Dto> {
    const record = isUuid(id) ? await reader.writes.one(table, id) : undefined;
    if (!record) throw notFound();
    return record;
  }

  /**
   * The record and its `created` event's runs commit together, in one statement when it can: a body without
   * `custom_fields` is written unless the type has a required field, and one with them is checked against the
   * definitions this process kept and written while they are still so (both decided in the insert). Otherwise the
   * definitions are read and the body checked against them (the 400 names each problem).
   */
  async function create(scope: CrmScope, body: Create): Promise<Dto> {
    const options = { activity: entryOf(scope), numbering: type.numbering };
    const created = eventOf(type, 'created');
    const values = await prepared(scope, body as object);
    const object = type.customFields;
    if (!object) return scope.writes.insert(table, values, created, options).catch(mapWriteError);
    const insertIf = (checked: ColumnValues, guard: InsertGuard) =>
      scope.writes.insertGuarded(table, checked, created, guard, options).catch(mapWriteError);
    if (values.custom_fields === undefined) {
      const written = await insertIf(values, { object, noneRequired: true });
      if (written) return written;
    } else {
      const kept = keptDefinitions(scope.organizationId, object);
      const checked =
        kept && (await checkedCustomValues(scope.db, object, values.custom_fields, true, async () => kept.fields).catch(() => undefined));
      const written = kept && checked && (await insertIf({ ...values, custom_fields: checked }, { object, stamp: kept.stamp }));
      if (written) return written;
    }
    const { fields } = await readDefinitions(scope.writes, scope.organizationId, object);
    const checked = await checkedCustomValues(scope.db, object, values.custom_fields, true, async () => fields);
    return scope.writes.insert(table, { ...values, custom_fields: checked }, created, options).catch(mapWriteError);
  }
  /** `create` of every body in one statement (`createAllOf`). */
  const createAll: CreateAll<Dto> = async (scope, bodies) => {
    // The definitions, and each assignee's membership, are read once for all the bodies.
    const definitions = new Map<string, Promise<Record<string, unknown>[]>>();
    const readDefinitions = (object: string) => {
      const known = definitions.get(object) ?? scope.writes.customFieldDefinitions(object);
      definitions.set(object, known);
      return known;
    };
    const once: CrmScope = { ...scope, writes: { ...scope.writes, customFieldDefinitions: readDefinitions } };
    const members = new Map<string, Promise<boolean>>();
    const member = (userId: string) => {
      const known = members.get(userId) ?? isMember(scope, userId);
      members.set(userId, known);
      return known;
    };
    const rows: ColumnValues[] = [];
    for (const body of bodies) rows.push(await withCustomFields(once, await prepared(scope, body as object, member), true));
    const options = { activity: entryOf(scope), numbering: type.numbering };
    return scope.writes.insertAll(table, rows, eventOf(type, 'created'), options).catch(mapWriteError);
  };
  createsTogether.set(create, createAll as CreateAll<unknown>);

  return {
    /** `page.limit + 1` records in the page's order (already in API shape) when more follow, else the rest. */
    list: (pages, filter, page) => pages.read(table, { ...filter, ...page }),
    query: type.query ? recordQuery<Dto>(table, type.query, type.customFields).query : undefined,
    /** Every record of the list's filters, in `order`, as a CSV stream of `fields`. */
    async csv(pages, filter, order, fields) {
      // The active custom fields follow the standard columns, as `custom.<key>` (the column an import reads).
      const custom = type.customFields ? await readCustomFields(pages, type.customFields) : [];
      const columns = custom.filter((field) => !field.archived).map((field) => `${CUSTOM_COLUMN}${field.key}`);
      return pages.csv(table, [...fields, ...columns], { ...filter, order });
    },
    get,
    create,
    /**
     * An empty body changes nothing and dispatches no event. With `expected` (the versions an If-Match names, or `*`),
     * the change applies only to a record still at one of them: 412 otherwise, decided in the same statement.
     */
    async update(scope, id, body, expected) {
      const versions = versionsOf(expected);
      if (Object.keys(body).length === 0) {
        const current = await get(scope, id);
        if (!versionMatches(versions, String(current.updated_at))) throw changedSince();
        return current;
      }
      const values = await withCustomFields(scope, await prepared(scope, body), false);
      const record = isUuid(id)
        ? await scope.writes.update(table, id, values, eventOf(type, 'updated'), versions, entryOf(scope)).catch(mapWriteError)
        : undefined;
      if (!record) throw await unwritten(scope.db, id, versions);
      return record;
    },
    /** Archives the record (it leaves the default list); archiving an archived record changes nothing. */
    archive: (scope, id, expected) => setArchived(scope, id, true, expected),
    /** Restores an archived record; restoring an active one changes nothing. */
    restore: (scope, id, expected) => setArchived(scope, id, false, expected),
    /** The deletion and its `deleted` event's runs (the record as it was) commit together. */
    async remove(scope, id, expected) {
      const versions = versionsOf(expected);
      if (isUuid(id) && (await scope.writes.delete(table, id, eventOf(type, 'deleted'), versions))) return;
      throw await unwritten(scope.db, id, versions);
    },
  };
}
