// Where a list page starts and ends: positions, opaque cursors (a tampered one is a 400), pages of rows, and the page
// query and answer schemas. The `Link` header that carries a cursor is written by http/pagination.ts.
import { Type, type TSchema } from '@sinclair/typebox';
import { validationFailed } from './problem.js';
import { isUuid } from './http-schemas.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export const PageQuerySchema = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Page size (1-200, default 50).' }),
  ),
  cursor: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.' }),
  ),
});

export interface PagePosition {
  createdAt: Date;
  id: string;
}

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

/** Decodes a cursor; a tampered or foreign one is a 400, never a 500. */
export function decodeCursor(cursor: string | undefined): PagePosition | undefined {
  if (cursor === undefined) return undefined;
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(String(createdAt));
    if (typeof createdAt === 'string' && !Number.isNaN(date.getTime()) && typeof id === 'string' && isUuid(id)) {
      return { createdAt: date, id };
    }
  } catch {
    // fall through to the validation error
  }
  throw validationFailed({ cursor: ['Invalid cursor.'] }, 'Query parameters are invalid.');
}

/** How a sorted list (companies, contacts) is ordered: by one of its sorts, ties broken by id in the same direction. */
export interface ListOrder {
  /** The sort's API name (`created_at`, `updated_at`, `name`). */
  sort: string;
  descending: boolean;
}

/** The list order of a `sort` parameter: `name` ascending, `-name` descending. */
export const listOrderOf = (sort: string): ListOrder =>
  sort.startsWith('-') ? { sort: sort.slice(1), descending: true } : { sort, descending: false };

/** The `sort` parameter of a list order. */
const sortParameter = (order: ListOrder) => `${order.descending ? '-' : ''}${order.sort}`;

/** The CRM lists' default order (no `sort`): newest first. Its cursors keep the `[created_at, id]` form every list had before sorts. */
export const NEWEST_FIRST: ListOrder = Object.freeze({ sort: 'created_at', descending: true });
const isNewestFirst = (order: ListOrder) => order.sort === NEWEST_FIRST.sort && order.descending === NEWEST_FIRST.descending;

/** Where a sorted list continues: the sort key values of the last record handed out (as API text) and its id. */
export interface ListPosition {
  values: string[];
  id: string;
}

/** The page a sorted list request asks for. */
export interface ListPageRequest {
  order: ListOrder;
  after?: ListPosition;
  limit: number;
}

/** The cursor of a sorted list: `[created_at, id]` in the default order (as before sorts existed), else `[sort, …values, id]`. */
export function encodeListCursor(order: ListOrder, position: ListPosition): string {
  const parts = isNewestFirst(order) ? [...position.values, position.id] : [sortParameter(order), ...position.values, position.id];
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** The type of a sort key value: text (a name) or a timestamp (API text, compared as `timestamptz`). */
export type SortKeyType = 'text' | 'timestamp';

/** A timestamp key's value: a time, or `infinity` (null in a nulls-last sort, see db/page-table.ts). */
const validKey = (value: string, type: SortKeyType) =>
  type === 'timestamp'
    ? value === 'infinity' || (/^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value)))
    : !value.includes('\u0000');

/**
 * Decodes the cursor of a sorted list read in `order`, whose sort keys have `types`; a tampered one, or one of
 * another sort order (the walk would skip or repeat records), is a 400, never a 500.
 */
export function decodeListCursor(cursor: string | undefined, order: ListOrder, types: readonly SortKeyType[]): ListPosition | undefined {
  if (cursor === undefined) return undefined;
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parts = undefined;
  }
  const strings = Array.isArray(parts) && parts.every((part) => typeof part === 'string') ? (parts as string[]) : [];
  const first = strings[0] ?? '';
  const sorted = /^-?[a-z_]+$/.test(first);
  if (sorted && first !== sortParameter(order)) {
    throw validationFailed(
      { cursor: ['The cursor belongs to another sort order: start again without it.'] },
      'Query parameters are invalid.',
    );
  }
  const own = sorted ? strings.slice(1) : isNewestFirst(order) ? strings : [];
  const values = own.slice(0, -1);
  const id = own.at(-1);
  if (id !== undefined && isUuid(id) && values.length === types.length && values.every((value, i) => validKey(value, types[i] ?? 'text'))) {
    return { values, id };
  }
  throw validationFailed({ cursor: ['Invalid cursor.'] }, 'Query parameters are invalid.');
}

/**
 * Prisma `where` fragment selecting the rows after `position` in newest-first order. The redundant
 * `createdAt <= position` bounds the (organization, created_at, id) index scan, so a deep page starts where the
 * previous one ended instead of skipping every newer row.
 */
export function afterPosition(position: PagePosition | undefined) {
  if (!position) return {};
  return {
    createdAt: { lte: position.createdAt },
    OR: [{ createdAt: { lt: position.createdAt } }, { id: { lt: position.id } }],
  };
}

export interface PageRequest {
  after?: PagePosition;
  limit: number;
}

/** The page a list request asks for: its decoded cursor (400 when invalid) and its limit (default 50). */
export const pageOf = (query: { limit?: number; cursor?: string }): PageRequest => ({
  after: decodeCursor(query.cursor),
  limit: query.limit ?? DEFAULT_LIMIT,
});

/** Newest first, ties broken by id: a total order, so pages never overlap or skip. */
export const newestFirst = [{ createdAt: 'desc' as const }, { id: 'desc' as const }];

/** The position of a row in API shape: `created_at` an ISO 8601 string. */
export const positionOfApiRow = (row: { created_at: string; id: string }): PagePosition => ({
  createdAt: new Date(row.created_at),
  id: row.id,
});

/** One page of a list: its items, and where the next page starts (absent on the last page). */
export interface Page<T, P = PagePosition> {
  items: T[];
  next: P | undefined;
}

/**
 * Given `limit + 1` rows fetched in newest-first order, the page and whether more rows exist. `positionOf` tells the
 * position of a row already in API shape (see `positionOfApiRow`).
 */
export function pageOfRows<T, P = PagePosition>(rows: T[], limit: number, positionOf = (row: T) => row as unknown as P): Page<T, P> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next: rows.length > limit && last !== undefined ? positionOf(last) : undefined };
}

/**
 * The 200 response of a list: a JSON array of `item`, plus the `Link` header (documented in OpenAPI through the
 * `headers` key that @fastify/swagger lifts out of the schema; the serializer ignores it).
 */
export function pageResponse<T extends TSchema>(item: T, description: string) {
  return Type.Array(item, {
    description,
    headers: {
      Link: Type.String({ description: 'RFC 8288 link to the next page: `<url>; rel="next"`; absent on the last page.' }),
    },
  });
}

/** A list's `limit + 1` newest-first rows as a page of DTOs (positions are taken from the rows, before mapping). */
export function pageOfDtos<Row extends PagePosition, Dto>(rows: Row[], limit: number, toDto: (row: Row) => Dto): Page<Dto> {
  const page = pageOfRows(rows, limit);
  return { items: page.items.map(toDto), next: page.next };
}

/** Where an incremental sync continues (see db/sync-changes.ts): a transaction id (xid8, as text) and a record id. */
export interface SyncCursor {
  xid: string;
  id: string;
}

export const encodeSyncCursor = (position: SyncCursor): string =>
  Buffer.from(JSON.stringify(['sync', position.xid, position.id])).toString('base64url');

/** The largest xid8 (PostgreSQL refuses more, which must be a 400 here rather than a 500 there). */
const MAX_XID8 = 2n ** 64n - 1n;

/** Decodes a sync cursor; anything else (a list cursor included) is a 400. */
export function decodeSyncCursor(cursor: string | undefined): SyncCursor | undefined {
  if (cursor === undefined) return undefined;
  try {
    const [kind, xid, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (
      kind === 'sync' &&
      typeof xid === 'string' &&
      /^\d{1,20}$/.test(xid) &&
      BigInt(xid) <= MAX_XID8 &&
      typeof id === 'string' &&
      isUuid(id)
    ) {
      return { xid, id };
    }
  } catch {
    // fall through to the validation error
  }
  throw validationFailed(
    { cursor: ['Invalid sync cursor: use the Link of the previous page of this sync.'] },
    'Query parameters are invalid.',
  );
}
