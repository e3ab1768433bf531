// Entity tags of CRM records: an opaque form of `updated_at`, which every change moves forward (see tenant-writes).
const QUOTED = /^(W\/)?"([0-9a-z]{1,12})"$/;

/** The strong ETag of a record in API shape. */
export const etagOf = (record: { updated_at: string }): string => `"${Date.parse(record.updated_at).toString(36)}"`;

/**
 * The `updated_at` values an `If-Match` / `If-None-Match` header names: `*` (any), or the instants of its tags
 * (malformed tags name nothing, so they never match). `strong`: If-Match's comparison (RFC 9110 §13.1.1), where a weak
 * tag (`W/"…"`) never matches.
 */
export function versionsIn(header: string, { strong = false } = {}): '*' | Date[] {
  if (header.trim() === '*') return '*';
  return header
    .split(',')
    .map((tag) => QUOTED.exec(tag.trim()))
    .map((match) => (match && !(strong && match[1]) ? match[2] : undefined))
    .filter((value): value is string => value !== undefined)
    .map((value) => new Date(Number.parseInt(value, 36)))
    .filter((date) => !Number.isNaN(date.getTime()));
}

/** Whether `If-None-Match` names the record's current version (weak comparison, as RFC 9110 asks for it). */
export function noneMatchHits(header: string | undefined, record: { updated_at: string }): boolean {
  if (header === undefined) return false;
  const versions = versionsIn(header);
  return versions === '*' || versions.some((date) => date.getTime() === Date.parse(record.updated_at));
}
