// The custom field definitions a process keeps between creates: a create checks its values against them and is
// written only while they are still the workspace's, which the insert's own statement decides (their stamp), so a
// create with values is one statement, not a definitions read and an insert.
import { definitionsStamp } from '../../db/custom-field-definitions.js';
import { keepBounded } from '../../lib/bounded-map.js';
import { customFieldsOfRows, type CustomField, type CustomObject, type DefinitionsReader } from './definitions.js';

/** A record type's definitions as read, and their stamp (db/custom-field-definitions.ts). */
export interface KeptDefinitions {
  fields: CustomField[];
  stamp: string;
}

/** Workspaces' record types kept at most (the least recently read go first): a bound on the process's memory. */
const KEPT = 1000;
const kept = new Map<string, KeptDefinitions>();

const keyOf = (organizationId: string, object: CustomObject) => `${organizationId}:${object}`;

/** The definitions this process last read for the record type, if any: maybe changed since (the insert checks). */
export function keptDefinitions(organizationId: string, object: CustomObject): KeptDefinitions | undefined {
  return kept.get(keyOf(organizationId, object));
}

/** Reads the record type's definitions through `reader` (the write's own connection) and keeps them. */
export async function readDefinitions(reader: DefinitionsReader, organizationId: string, object: CustomObject): Promise<KeptDefinitions> {
  const rows = await reader.customFieldDefinitions(object);
  const definitions = { fields: customFieldsOfRows(rows), stamp: definitionsStamp(rows) };
  const key = keyOf(organizationId, object);
  keepBounded(kept, key, definitions, KEPT);
  return definitions;
}
