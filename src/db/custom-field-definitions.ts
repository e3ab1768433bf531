// The custom field definitions of a workspace's record type as the raw reader and writer read them, and their stamp:
// what lets a process keep them between writes and each write check, in its own statement, that they are still so.
import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * The custom field definitions of one record type (`object`) of a workspace, archived ones too, in their order: read
 * before each record write that checks values, so prepared (a connection plans it once). `version` is the row's
 * `xmin`, which every write of the row changes.
 */
export const customFieldDefinitionsStatement = (organizationId: string, object: string): pg.QueryConfig => ({
  name: 'crm-custom-field-definitions',
  text:
    'SELECT id, key, label, type, required, options, description, archived_at, indexed_at, xmin::text AS version ' +
    'FROM custom_field_definitions ' +
    'WHERE organization_id = $1 AND object = $2 ORDER BY position, created_at',
  values: [organizationId, object],
});

/**
 * The stamp of a record type's definitions as SQL (workspace `$1`, record type `objectParameter`): an md5 of every
 * definition's id and row version in id order, the empty text's without any. A field created, changed, archived or
 * restored changes it. `definitionsStamp` computes the same from the rows of `customFieldDefinitionsStatement`.
 */
export const definitionsStampSql = (objectParameter: string) =>
  `(SELECT md5(coalesce(string_agg(id::text || ':' || xmin::text, ',' ORDER BY id), '')) FROM custom_field_definitions ` +
  `WHERE organization_id = $1 AND object = ${objectParameter})`;

/** The stamp of definition rows as `customFieldDefinitionsStatement` reads them (see `definitionsStampSql`). */
export function definitionsStamp(rows: readonly Record<string, unknown>[]): string {
  const parts = rows.map((row) => `${String(row.id)}:${String(row.version)}`);
  // uuids in text compare as PostgreSQL orders the type (byte by byte, lower-case hex).
  parts.sort();
  return createHash('md5').update(parts.join(',')).digest('hex');
}
