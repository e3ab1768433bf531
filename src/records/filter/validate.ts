// Checks a filter tree (parsed JSON) against a record type's fields: shape, limits, operators and values by type;
// every problem is reported at the path of its node (`filter.and.1.field`), and a valid tree becomes a typed one.
import { isUuid } from '../../lib/http-schemas.js';
import type { FieldErrors } from '../../lib/problem.js';
import { LISTS, OPERATORS, OPERATORS_OF, VALUELESS, type FieldSpec, type Operator } from './fields.js';
import type { FieldResolver, ResolvedField } from './resolve.js';

export const MAX_CONDITIONS = 50;
export const MAX_DEPTH = 5;
export const MAX_LIST_VALUES = 100;
export const MAX_TEXT_VALUE = 1000;

export type FilterNode =
  | { kind: 'and' | 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  | { kind: 'condition'; field: ResolvedField; op: Operator; value: unknown };

const DECIMAL = /^-?\d{1,15}(\.\d{1,6})?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A calendar date (`2026-02-30` is none). */
function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}

/** Why `value` is not a value of `spec` (undefined when it is one). */
export function valueProblem(spec: FieldSpec, value: unknown): string | undefined {
  switch (spec.type) {
    case 'text':
      if (typeof value !== 'string') return 'Expected a string.';
      if (value.length > MAX_TEXT_VALUE) return `At most ${MAX_TEXT_VALUE} characters.`;
      return value.includes('\u0000') ? 'Control character U+0000 is not allowed.' : undefined;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'Expected a finite number.';
    case 'decimal':
      return (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && DECIMAL.test(value))
        ? undefined
        : 'Expected a decimal: a number, or a string such as "1234.50".';
    case 'date':
      return typeof value === 'string' && isDate(value) ? undefined : 'Expected a date (YYYY-MM-DD).';
    case 'datetime':
      return typeof value === 'string' && DATETIME.test(value) && !Number.isNaN(Date.parse(value))
        ? undefined
        : 'Expected an ISO 8601 date-time with a time zone.';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'Expected true or false.';
    case 'enum':
    case 'multi_select':
      return typeof value === 'string' && spec.values?.includes(value) ? undefined : `Expected one of: ${spec.values?.join(', ')}.`;
    case 'uuid':
      return isUuid(value) ? undefined : 'Expected a UUID.';
  }
}

/**
 * The typed tree of `input` (the request's `filter`, at `path`), or the problems found, by path. Resolves fields
 * through `resolve`, so the same check serves every record type and, later, custom fields.
 */
export function validateFilter(input: unknown, resolve: FieldResolver, path = 'filter'): { node?: FilterNode; errors: FieldErrors } {
  const errors: FieldErrors = {};
  let conditions = 0;
  const fail = (at: string, message: string) => {
    errors[at] = [...(errors[at] ?? []), message];
    return undefined;
  };

  function visit(value: unknown, at: string, depth: number): FilterNode | undefined {
    if (!isObject(value)) return fail(at, 'Expected a filter object: {and}, {or}, {not} or a condition {field, op, value}.');
    if (depth > MAX_DEPTH) return fail(at, `A filter nests at most ${MAX_DEPTH} levels deep.`);
    const keys = Object.keys(value);
    for (const group of ['and', 'or'] as const) {
      if (!(group in value)) continue;
      if (keys.length !== 1) return fail(at, `A {${group}} node has no other keys.`);
      const list = value[group];
      if (!Array.isArray(list) || list.length === 0) return fail(`${at}.${group}`, 'Expected a non-empty array of filters.');
      const children = list.map((child, i) => visit(child, `${at}.${group}.${i}`, depth + 1));
      return children.every((child) => child !== undefined) ? { kind: group, children: children as FilterNode[] } : undefined;
    }
    if ('not' in value) {
      if (keys.length !== 1) return fail(at, 'A {not} node has no other keys.');
      const child = visit(value.not, `${at}.not`, depth + 1);
      return child && { kind: 'not', child };
    }
    return condition(value, at);
  }

  function condition(value: Record<string, unknown>, at: string): FilterNode | undefined {
    conditions += 1;
    if (conditions === MAX_CONDITIONS + 1) fail(path, `A filter has at most ${MAX_CONDITIONS} conditions.`);
    const unknown = Object.keys(value).filter((key) => key !== 'field' && key !== 'op' && key !== 'value');
    for (const key of unknown) fail(`${at}.${key}`, 'Unknown key: a condition has field, op and value.');
    const { field: name, op } = value;
    const field = typeof name === 'string' ? resolve(name) : undefined;
    if (!field) fail(`${at}.field`, typeof name === 'string' ? `Unknown field: ${name.slice(0, 100)}.` : 'Expected a field name.');
    if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op)) {
      return fail(`${at}.op`, `Expected one of: ${OPERATORS.join(', ')}.`);
    }
    const operator = op as Operator;
    if (!field || unknown.length > 0) return undefined;
    if (!OPERATORS_OF[field.spec.type].includes(operator)) {
      return fail(`${at}.op`, `A ${field.spec.type} field takes: ${OPERATORS_OF[field.spec.type].join(', ')}.`);
    }
    if (VALUELESS.has(operator)) {
      return 'value' in value
        ? fail(`${at}.value`, `${operator} takes no value.`)
        : { kind: 'condition', field, op: operator, value: null };
    }
    if (!('value' in value)) return fail(`${at}.value`, `${operator} needs a value.`);
    if (LISTS.has(operator)) {
      const list = value.value;
      if (!Array.isArray(list) || list.length === 0 || list.length > MAX_LIST_VALUES) {
        return fail(`${at}.value`, `Expected an array of 1 to ${MAX_LIST_VALUES} values.`);
      }
      const problems = list.map((item, i) => [i, valueProblem(field.spec, item)] as const).filter(([, problem]) => problem);
      for (const [i, problem] of problems) fail(`${at}.value.${i}`, problem as string);
      return problems.length > 0 ? undefined : { kind: 'condition', field, op: operator, value: list };
    }
    const problem = valueProblem(field.spec, value.value);
    if (problem) return fail(`${at}.value`, problem);
    if ((operator === 'contains' || operator === 'starts_with') && value.value === '') {
      return fail(`${at}.value`, 'Expected a non-empty string.');
    }
    return { kind: 'condition', field, op: operator, value: value.value };
  }

  const node = visit(input, path, 1);
  return Object.keys(errors).length > 0 ? { errors } : { node, errors };
}
