// A record's custom field values: a create or PATCH body's `custom_fields` checked against the workspace's fields
// (400 on `custom_fields.<key>`), merged into what the record holds, and shaped for answers (every active key).
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { isUuid } from '../../lib/http-schemas.js';
import { validationFailed, type FieldErrors } from '../../lib/problem.js';
import { valueProblem } from '../filter/validate.js';
import {
  DECIMAL_PATTERN,
  loadCustomFields,
  readCustomFields,
  type CustomField,
  type CustomObject,
  type DefinitionsReader,
} from './definitions.js';

/** A record's custom fields as the API shows them. */
export type CustomValues = Record<string, unknown>;

const MAX_TEXT = { text: 1000, long_text: 65536, email: 254, url: 2048 } as const;
const DECIMAL = new RegExp(DECIMAL_PATTERN);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Why `value` is no value of `field` (undefined when it is one), and the value as stored. */
function checkValue(field: CustomField, value: unknown): { problem?: string; stored?: unknown } {
  // Only the select types read their options: no list is built for the other types' values on every write.
  const options = () => field.options.map((option) => option.value);
  switch (field.type) {
    case 'text':
    case 'long_text':
    case 'email':
    case 'url': {
      if (typeof value !== 'string') return { problem: 'Expected a string.' };
      if (value.length > MAX_TEXT[field.type]) return { problem: `At most ${MAX_TEXT[field.type]} characters.` };
      if (value.includes('\u0000')) return { problem: 'Control character U+0000 is not allowed.' };
      if (field.type === 'email' && !EMAIL.test(value)) return { problem: 'Expected an email address.' };
      if (field.type === 'url' && !isWebUrl(value)) return { problem: 'Expected an http or https URL.' };
      return { stored: value };
    }
    case 'number':
      return { problem: valueProblem({ type: 'number' }, value), stored: value };
    case 'decimal':
      return typeof value === 'string' && DECIMAL.test(value)
        ? { stored: value }
        : { problem: 'Expected a decimal string such as "1234.50" (up to 15 digits, 6 after the point).' };
    case 'boolean':
      return { problem: valueProblem({ type: 'boolean' }, value), stored: value };
    case 'date':
      return { problem: valueProblem({ type: 'date' }, value), stored: value };
    case 'datetime': {
      const problem = valueProblem({ type: 'datetime' }, value);
      // One instant, one text: stored in UTC as toISOString writes it (filters and sorts compare instants).
      return problem ? { problem } : { stored: new Date(value as string).toISOString() };
    }
    case 'select':
      return typeof value === 'string' && field.options.some((option) => option.value === value)
        ? { stored: value }
        : { problem: `Expected one of: ${options().join(', ')}.` };
    case 'multi_select': {
      if (!Array.isArray(value)) return { problem: 'Expected an array of option values.' };
      const values = options();
      if (value.some((item) => typeof item !== 'string' || !values.includes(item))) {
        return { problem: `Expected values among: ${values.join(', ')}.` };
      }
      return new Set(value).size === value.length ? { stored: value } : { problem: 'Values must be distinct.' };
    }
    case 'member':
      return isUuid(value) ? { stored: value.toLowerCase() } : { problem: 'Expected the user id of a member of this workspace.' };
  }
}

function isWebUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * The body's `custom_fields` checked against `fields`: the stored values of the keys it names, null for a cleared
 * one. A create (`requireAll`) also needs every required active field. Every problem at `custom_fields.<key>`.
 */
export function checkCustomValues(fields: readonly CustomField[], input: unknown, requireAll: boolean): CustomValues {
  const errors: FieldErrors = {};
  const given = input ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) throw validationFailed({ custom_fields: ['Expected an object: key → value.'] });
  const byKey = new Map(fields.map((field) => [field.key, field]));
  const values: CustomValues = {};
  for (const [key, value] of Object.entries(given as Record<string, unknown>)) {
    const at = `custom_fields.${key}`;
    const field = byKey.get(key);
    if (!field) errors[at] = ['No such custom field of this record type.'];
    else if (field.archived) errors[at] = ['This custom field is archived: restore it to write its value.'];
    else if (value === null) {
      if (field.required) errors[at] = ['This custom field is required: it cannot be null.'];
      else values[key] = null;
    } else {
      const { problem, stored } = checkValue(field, value);
      if (problem) errors[at] = [problem];
      else values[key] = stored;
    }
  }
  if (requireAll) {
    for (const field of fields) {
      if (field.required && !field.archived && !(field.key in (given as object))) {
        errors[`custom_fields.${field.key}`] = ['This custom field is required.'];
      }
    }
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return values;
}

/** Answers 400 on each `member` value that is no user id of a member of this workspace. */
async function checkMembers(db: TenantDb | TenantTx, fields: readonly CustomField[], values: CustomValues): Promise<void> {
  const members = fields.filter((field) => field.type === 'member' && typeof values[field.key] === 'string');
  if (members.length === 0) return;
  const ids = [...new Set(members.map((field) => values[field.key] as string))];
  const found = await db.membership.findMany({ select: { userId: true }, where: { userId: { in: ids } } });
  const known = new Set(found.map((row) => row.userId));
  const errors = Object.fromEntries(
    members
      .filter((field) => !known.has(values[field.key] as string))
      .map((field) => [`custom_fields.${field.key}`, ['Not a member of this workspace.']]),
  );
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

/**
 * A write's custom field values, checked (types, required, members): for a create (`requireAll`) the map to store;
 * for a PATCH the keys to merge, null clearing one. Undefined when a PATCH names no custom field. `load` reads the
 * definitions (by default through Prisma; the kernel's writes read them with their own prepared statement).
 */
export async function checkedCustomValues(
  db: TenantDb | TenantTx,
  object: CustomObject,
  input: unknown,
  requireAll: boolean,
  load: () => Promise<CustomField[]> = () => loadCustomFields(db, object),
): Promise<CustomValues | undefined> {
  if (input === undefined && !requireAll) return undefined;
  const fields = await load();
  const values = checkCustomValues(fields, input, requireAll);
  await checkMembers(db, fields, values);
  return values;
}

/** What a record holds after a PATCH's `changes`: merged, cleared keys removed (as the SQL writer's merge does). */
export function mergeCustomValues(stored: unknown, changes: CustomValues): CustomValues {
  const merged: CustomValues = { ...((stored ?? {}) as CustomValues), ...changes };
  for (const [key, value] of Object.entries(merged)) if (value === null) delete merged[key];
  return merged;
}

/** The stored map as the API shows it: every active field by key, null where the record holds none. */
export function shapeCustomValues(fields: readonly CustomField[], stored: unknown): CustomValues {
  const held = (stored ?? {}) as CustomValues;
  return Object.fromEntries(fields.filter((field) => !field.archived).map((field) => [field.key, held[field.key] ?? null]));
}

/** A record DTO read through Prisma (raw `custom_fields`) as the API shows it. */
export async function withCustomFields<Dto extends Record<string, unknown>>(
  db: TenantDb | TenantTx,
  object: CustomObject,
  dto: Dto,
): Promise<Dto> {
  return { ...dto, custom_fields: shapeCustomValues(await loadCustomFields(db, object), dto.custom_fields) };
}

/**
 * A service's custom fields of `object`: values checked (`check`) and answers shaped (`show`) against definitions read
 * through the workspace's writer (`scope.writes`), not Prisma; inside a Prisma transaction use the functions above.
 */
export function customFieldsOf(scope: { db: TenantDb; writes: DefinitionsReader }, object: CustomObject) {
  const load = () => readCustomFields(scope.writes, object);
  return {
    check: (input: unknown, requireAll: boolean) => checkedCustomValues(scope.db, object, input, requireAll, load),
    show: async <Dto extends Record<string, unknown>>(dto: Dto): Promise<Dto> => ({
      ...dto,
      custom_fields: shapeCustomValues(await load(), dto.custom_fields),
    }),
  };
}
