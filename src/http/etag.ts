// Conditional requests on one record (companies, contacts, deals, tasks, automations): its `ETag` on reads and writes,
// 304 for an `If-None-Match` naming the current version, and the versions an `If-Match` names for the services (412
// `precondition_failed` when the record changed since). The schemas document them in OpenAPI.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { etagOf, noneMatchHits, versionsIn, type ExpectedVersions } from '../lib/etag.js';
import { responses } from '../lib/http-schemas.js';

/** The `ETag` header of an answer carrying the record. */
const ETAG_HEADER = { ETag: Type.String({ description: "The record's version, for If-None-Match and If-Match." }) };

/** The request headers of a conditional write (PATCH, DELETE, and other changes of one record). */
const IF_MATCH_HEADERS = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'ETags of the versions this change was made against (`*`: any): 412 `precondition_failed` when the record ' +
        'changed since. Without it the change applies whatever happened meanwhile.',
    }),
  ),
});

/** The request headers of a conditional read of one record. */
const IF_NONE_MATCH_HEADERS = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'ETags of versions the client holds; `*` for any.' })),
});

/** What a conditional read of one record tells in its description. */
export const CONDITIONAL_GET_NOTE =
  "Answers an `ETag` (the record's version); with `If-None-Match` naming it, 304 without a body, for clients " +
  'that keep their own cache (answers are `Cache-Control: no-store` for browsers and proxies).';

/** What an archive or restore of `one` (a record's noun) tells of If-Match: the precondition comes first. */
export const archiveIfMatchNote = (one: string) =>
  `With \`If-Match\`, only a ${one} at that version (412 \`precondition_failed\` otherwise, also when it would change nothing).`;

/** A success response (a `Ref` or schema of the record) with its `ETag` header. */
export const tagged = <T extends object>(schema: T) => ({ ...schema, headers: ETAG_HEADER });

/** The 304 response of a conditional read. */
const NOT_MODIFIED = { description: 'The version named in If-None-Match is current.', type: 'null', headers: ETAG_HEADER } as const;

/** The schema parts of a conditional read of one record (a `Ref` or schema): If-None-Match, the record with its ETag, 304. */
export const conditionalRead = <T extends object>(record: T) => ({
  headers: IF_NONE_MATCH_HEADERS,
  response: { ...responses({ 200: tagged(record) }, 401, 403, 404), 304: NOT_MODIFIED },
});

/**
 * The schema parts of a conditional write of one record: If-Match, its `success` responses, and 412 besides 401, 403,
 * 404 and the write's own `errors`.
 */
export const conditionalWrite = <R extends Record<number, unknown>>(success: R, ...errors: number[]) => ({
  headers: IF_MATCH_HEADERS,
  response: responses(success, 401, 403, 404, 412, ...errors),
});

/** The versions the request's If-Match names (strong comparison), or undefined without one. */
export function ifMatch(request: FastifyRequest): ExpectedVersions {
  const header = request.headers['if-match'];
  return header === undefined ? undefined : versionsIn(header, { strong: true });
}

/** Sets the record's `ETag` on the answer and answers the record. */
export function withEtag<R extends { updated_at: string }>(reply: FastifyReply, record: R): R {
  reply.header('etag', etagOf(record));
  return record;
}

/** A conditional read's answer: the record with its `ETag`, or 304 without a body when If-None-Match names it. */
export function sendRecord<R extends { updated_at: string }>(request: FastifyRequest, reply: FastifyReply, record: R): R | FastifyReply {
  withEtag(reply, record);
  return noneMatchHits(request.headers['if-none-match'], record) ? reply.code(304).send() : record;
}
