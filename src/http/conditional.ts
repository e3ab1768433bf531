// Conditional requests (RFC 9110 §13) on single records: the ETag of a record version, If-None-Match on reads,
// If-Match on writes, and their OpenAPI documentation.
import { Type } from '@sinclair/typebox';

/** The strong ETag of a record version. */
export const etagOf = (version: string) => `"${version}"`;

/** An If-Match / If-None-Match value: `*` (any current record), or the versions its entity tags name. */
export type Preconditions = '*' | { strong: string[]; weak: string[] };

/** Parses a list of entity tags (`"a", W/"b"`); malformed members match nothing, as the RFC's comparison would. */
export function parseEntityTags(header: string | undefined): Preconditions | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const strong: string[] = [];
  const weak: string[] = [];
  for (const match of header.matchAll(/(W\/)?"([^"]*)"/g)) (match[1] ? weak : strong).push(match[2] ?? '');
  return { strong, weak };
}

/** If-Match: the versions a write may replace (strong comparison: weak tags never match), or undefined for any. */
export function ifMatchVersions(header: string | undefined): string[] | undefined {
  const tags = parseEntityTags(header);
  return tags === undefined || tags === '*' ? undefined : tags.strong;
}

/** If-None-Match against the current version (weak comparison): true when the client's copy is current (304). */
export function notModified(header: string | undefined, version: string): boolean {
  const tags = parseEntityTags(header);
  if (tags === undefined) return false;
  return tags === '*' || tags.strong.includes(version) || tags.weak.includes(version);
}

const ETagHeaderSchema = Type.String({ description: 'The strong entity tag of this version of the record (RFC 9110).' });
export const ETAG_HEADERS = { ETag: ETagHeaderSchema };

/** The request headers of a conditional read. */
export const IfNoneMatchHeadersSchema = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({
      maxLength: 2048,
      description: 'ETags of the copy the client holds (or `*`): when one is current, the answer is 304 without a body.',
    }),
  ),
});

/** The request headers of a conditional write. */
export const IfMatchHeadersSchema = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      maxLength: 2048,
      description:
        'ETags the client read the record at (weak ones never match): when none is current, the write is refused with 412 ' +
        '`precondition_failed` and nothing changes. `*` or no header: unconditional.',
    }),
  ),
});

/** A 304 answer of a conditional read. */
export const NotModifiedResponse = {
  description: "Not modified: If-None-Match names the record's current ETag. No body.",
  headers: ETAG_HEADERS,
  type: 'null',
};
