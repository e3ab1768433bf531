// Entity tags of CRM records: an opaque form of `updated_at`, which every change moves forward (see tenant-writes).
import { preconditionFailed } from './problem.js';

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

/** What an If-Match asks of a write: undefined (no header: any version), `*` (any), or the versions it names. */
export type ExpectedVersions = '*' | Date[] | undefined;

/** Whether a record at `updatedAt` satisfies `expected` (always without an If-Match, and with `*` when it exists). */
export const versionMatches = (expected: ExpectedVersions, updatedAt: Date | string): boolean =>
  expected === undefined || expected === '*' || expected.some((date) => date.getTime() === new Date(updatedAt).getTime());

/** The answer to a write whose If-Match names none of the record's current version. */
export const changedSince = () => preconditionFailed('The record changed since the version named in If-Match.');

/**
 * The `updated_at` of a record's next version when the application stamps it (Prisma's `@updatedAt` would take the
 * clock as it is): now, but strictly after `previous`, so that two changes within one millisecond (or on a host whose
 * clock is behind) still make two ETags. `previous` must be read under the row's lock, or be the write's condition.
 */
export const nextVersion = (previous: Date): Date => new Date(Math.max(Date.now(), previous.getTime() + 1));
