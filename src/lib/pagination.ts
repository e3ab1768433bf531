// Keyset pagination for every list: newest first by (created_at, id), an opaque cursor, and a Link rel="next" header.
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
    Type.String({ maxLength: 200, description: 'Opaque cursor from the `Link: rel="next"` header of the previous page.' }),
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
export interface Page<T> {
  items: T[];
  next: PagePosition | undefined;
}

/**
 * Given `limit + 1` rows fetched in newest-first order, the page and whether more rows exist. `positionOf` tells the
 * position of a row already in API shape (see `positionOfApiRow`); `scannedTo` is where a page with at most `limit`
 * rows still continues (a search page that stopped at its scan bound).
 */
export function pageOfRows<T>(
  rows: T[],
  limit: number,
  positionOf = (row: T) => row as unknown as PagePosition,
  scannedTo?: PagePosition,
): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next: rows.length > limit && last !== undefined ? positionOf(last) : scannedTo };
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
