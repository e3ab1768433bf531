// The definition of a record type, from which the kernel derives its routes, keyset pages, sorts, sync, ETags,
// archive and restore, timeline, CSV export and events: adding a record type is writing one of these.
import type { TObject } from '@sinclair/typebox';
import type { PageFilter } from '../db/page-query.js';
import type { PageTable } from '../db/page-table.js';
import type { TenantDb } from '../db/tenant-scope.js';
import type { ActivityActor, ColumnValues, Numbering } from '../db/tenant-writes.js';
import type { CrmEventName } from '../lib/crm-events.js';
import type { ListOrder } from '../lib/pagination.js';
import type { ProblemError } from '../lib/problem.js';
import type { RecordBatchSchemas } from './batch-schemas.js';
import type { CustomObject } from './custom-fields/definitions.js';
import type { QueryDefinition } from './filter/resolve.js';

/** The kernel's operations, whose generated summary a definition may replace (`summaries`). */
export type RecordOperation = 'list' | 'create' | 'get' | 'update' | 'delete' | 'archive' | 'restore';

/** The record types whose kernel writes have events: each `X` with `X.created` among the CRM events. */
type EventPrefix<Name> = Name extends `${infer Record}.created` ? Record : never;
export type RecordEvents = EventPrefix<CrmEventName>;

/** The request and response schemas of a record type's endpoints. */
export interface RecordSchemas {
  record: TObject;
  create: TObject;
  update: TObject;
  /** The page parameters (limit, cursor) plus the type's own filters, `sort`, `archived` and `updated_since`. */
  listQuery: TObject;
  /** The organization and the record id (`idParam`). */
  params: TObject;
  /** The batch endpoint's operations and results (`recordBatchSchemas`). */
  batch: RecordBatchSchemas;
  /** The answer of its query (`{results, next_cursor}`), a named component; with `query` (notes have neither). */
  queryPage?: TObject;
}

/** What a list, its export and its sync select: everything of a page request but the page itself. */
export type RecordFilter = Omit<PageFilter<string>, 'order' | 'after' | 'limit'>;

/** The timeline column of a record type's activity entries (companies and contacts have timelines). */
export type TimelineColumn = 'company_id' | 'contact_id';

export interface RecordType<Row = unknown, Dto extends Record<string, unknown> = Record<string, unknown>, Query = never> {
  /**
   * Names in operationIds and summaries: `{one: 'Company', many: 'Companies'}`; the rest follows (`routesOf`): the
   * collection `/companies/`, its OpenAPI tag `companies`, the record's path parameter `company_id`.
   */
  names: { one: string; many: string };
  schemas: RecordSchemas;
  /** The table, its API fields, its equality filters and its sorts: what lists, syncs, exports and writes read. */
  table: PageTable<Dto, string>;
  /**
   * The fields its queries filter and sort by (each declared once, by type), its company link, its search; absent,
   * the type has no query endpoint (notes, which the contract's query language does not cover).
   */
  query?: QueryDefinition;
  /** One record by id in this organization (a tenant-scoped read), and its API shape. */
  find(db: TenantDb, id: string): Promise<Row | null>;
  toDto(row: Row): Dto;
  notFound(): ProblemError;
  /** A list request's selection (search, equality filters, own conditions, archive state); `actor` resolves `me`. */
  filters(query: Query, actor: ActivityActor): RecordFilter;
  /** The order of a `sort` parameter (default: `name` ascending, `-name` descending; none: newest first). */
  orderOf?(sort: string): ListOrder;
  /**
   * The events the kernel's own writes dispatch: `company` → `company.created`, `.updated`, `.deleted` (names of
   * lib/crm-events.ts and of the automation triggers); null for a type whose events are its own rules.
   */
  events: RecordEvents | null;
  /** The record's timeline (its activity endpoint and the entries of its writes), when it has one. */
  timeline?: TimelineColumn;
  /** The CSV export's columns, in order (its endpoint exists when given). */
  exportFields?: readonly string[];
  /** False for a type without `archived_at` (a note): no archive and restore endpoints. Default true. */
  archivable?: boolean;
  /** Whether `updated_since` syncs the list (the table keeps `changed_xid` and tombstones in `crm_deletions`). */
  sync: boolean;
  /**
   * Documentation per endpoint, where the type differs from the common behaviour; `get`, `archive` and `restore`, when
   * given, write the whole text around the common note on conditional requests.
   */
  notes: {
    list: string;
    /** The list answer's description (default: in the order of `sort`). */
    page?: string;
    create: string;
    update: string;
    delete: string;
    get?: (conditionalGetNote: string) => string;
    archive?: (ifMatchNote: string) => string;
    restore?: (ifMatchNote: string) => string;
  };
  /** Summaries of the type's own, instead of the generated ones. */
  summaries?: Partial<Record<RecordOperation, string>>;
  /** The answer to a foreign key violation of a kernel write (a reference outside the organization). */
  invalidReference?(): ProblemError;
  /** The answer to a unique violation of the named index (a duplicate in the workspace). */
  duplicate?(constraint: string): ProblemError | undefined;
  /** Checks and normalizes a kernel write's body (400 on a field), before the write. */
  prepare?(body: ColumnValues): ColumnValues;
  /**
   * The `object` name of the type's custom fields (its table then has `custom_fields`, its record and bodies the
   * field of that name): the kernel checks, merges and shows them. Absent, the type has none (notes).
   */
  customFields?: CustomObject;
  /** The server-assigned number a kernel create gives (a customer code). */
  numbering?: Numbering;
}

/** The event name of a kernel write of `type`, or null for a type without events. */
export const eventOf = (type: Pick<RecordType, 'events'>, change: 'created' | 'updated' | 'deleted'): CrmEventName | null =>
  type.events === null ? null : (`${type.events}.${change}` as CrmEventName);

/** The collection's tag (also the CSV file's name and the audit target type), path and id parameter, from its names. */
export function routesOf(type: Pick<RecordType, 'names'>) {
  const tag = type.names.many.toLowerCase();
  return { tag, path: `/${tag}/`, idParam: `${type.names.one.toLowerCase()}_id` };
}
