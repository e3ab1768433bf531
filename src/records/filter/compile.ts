// A typed filter tree as one SQL condition over a record's row, every value a parameter (never in the text).
import type { PageCondition } from '../../db/page-query.js';
import { SQL_TYPES } from './fields.js';
import type { FilterNode } from './validate.js';

/**
 * The custom field types whose stored JSON value equals the filter's value exactly (text, a select's option, a
 * member's id, a boolean, a number): their `eq` is a containment test. Decimals, dates and date-times compare as
 * values (`1.50` equals `1.5`).
 */
const CONTAINED: ReadonlySet<string> = new Set(['text', 'enum', 'uuid', 'boolean', 'number']);

/** A decimal value as SQL takes it: numbers as their shortest exact text. */
const parameterValue = (value: unknown) => (typeof value === 'number' ? String(value) : value);

/** `node` as a condition of the page reader (see db/page-query.ts), its values sent through `parameter`. */
export function compileFilter(node: FilterNode): PageCondition {
  return (parameter) => {
    function sql(current: FilterNode): string {
      switch (current.kind) {
        case 'and':
        case 'or':
          return `(${current.children.map(sql).join(current.kind === 'and' ? ' AND ' : ' OR ')})`;
        case 'not':
          // A condition on an empty value is false, never unknown, so NOT inverts it exactly (see `comparison`).
          return `(NOT ${sql(current.child)})`;
        case 'condition':
          return comparison(current);
      }
    }

    /** A multi_select custom field: its value is a jsonb array of option values (or absent). */
    function setComparison({ field, op, value }: Extract<FilterNode, { kind: 'condition' }>): string {
      const array = field.sql;
      const list = () => parameter(value, 'text[]');
      switch (op) {
        case 'contains':
          // On the record's own row, containment in the whole map: the GIN index's operator.
          return field.json
            ? `(${field.json.column} @> jsonb_build_object('${field.json.key}', jsonb_build_array(${parameter(value, 'text')})))`
            : `coalesce(${array} @> jsonb_build_array(${parameter(value, 'text')}), false)`;
        case 'in':
          return `coalesce(jsonb_exists_any(${array}, ${list()}), false)`;
        case 'not_in':
          return `NOT coalesce(jsonb_exists_any(${array}, ${list()}), false)`;
        case 'is_empty':
          return `coalesce(jsonb_array_length(${array}) = 0, true)`;
        default:
          return `coalesce(jsonb_array_length(${array}) > 0, false)`;
      }
    }

    /**
     * A column of the row compared as its own type: an enum's values were checked against its values, so every cast
     * holds; a `char` takes any text (`bpchar`, unbounded, never cuts a value short).
     */
    function nativeComparison({ op, value }: Extract<FilterNode, { kind: 'condition' }>, column: string, type: string) {
      const list = () => `${parameter(value, 'text[]')}::${type}[]`;
      switch (op) {
        case 'eq':
          return `(${column} = ${parameter(value, 'text')}::${type} AND ${column} IS NOT NULL)`;
        case 'neq':
          return `(${column} IS DISTINCT FROM ${parameter(value, 'text')}::${type})`;
        case 'in':
          return `coalesce(${column} = ANY(${list()}), false)`;
        case 'not_in':
          return `coalesce(NOT (${column} = ANY(${list()})), true)`;
        default:
          return undefined;
      }
    }

    function comparison(condition: Extract<FilterNode, { kind: 'condition' }>): string {
      const { field, op, value } = condition;
      if (field.spec.type === 'multi_select') return setComparison(condition);
      const native = field.native && field.spec.sqlType ? nativeComparison(condition, field.native, field.spec.sqlType) : undefined;
      if (native) return native;
      const type = SQL_TYPES[field.spec.type];
      const column = field.sql;
      const text = field.spec.type === 'text';
      const one = () => parameter(parameterValue(value), type);
      switch (op) {
        case 'eq':
          // A custom field of a type stored as its JSON value: containment, which the GIN index serves.
          if (field.json && CONTAINED.has(field.spec.type)) {
            const stored = field.spec.type === 'uuid' ? String(value).toLowerCase() : value;
            return `(${field.json.column} @> jsonb_build_object('${field.json.key}', ${parameter(JSON.stringify(stored), 'jsonb')}))`;
          }
          return `(${column} = ${one()} AND ${column} IS NOT NULL)`;
        case 'neq':
          return `(${column} IS DISTINCT FROM ${one()})`;
        case 'in':
          return `coalesce(${column} = ANY(${parameter((value as unknown[]).map(parameterValue), `${type}[]`)}), false)`;
        case 'not_in':
          return `coalesce(NOT (${column} = ANY(${parameter((value as unknown[]).map(parameterValue), `${type}[]`)})), true)`;
        case 'lt':
        case 'lte':
        case 'gt':
        case 'gte': {
          const symbol = { lt: '<', lte: '<=', gt: '>', gte: '>=' }[op];
          // Read through a custom field's own index (a range's candidates): the same truth as an index condition,
          // which `coalesce(…)` cannot be. Elsewhere `coalesce`, which evaluates the value once per row, not twice.
          if (field.indexSql !== undefined && column === field.indexSql) return `(${column} ${symbol} ${one()} AND ${column} IS NOT NULL)`;
          return `coalesce(${column} ${symbol} ${one()}, false)`;
        }
        case 'contains':
          return `coalesce(strpos(lower(${column}), lower(${one()})) > 0, false)`;
        case 'starts_with':
          return `coalesce(starts_with(lower(${column}), lower(${one()})), false)`;
        case 'is_empty':
          return text ? `(${column} IS NULL OR ${column} = '')` : `(${column} IS NULL)`;
        case 'is_not_empty':
          return text ? `(${column} IS NOT NULL AND ${column} <> '')` : `(${column} IS NOT NULL)`;
      }
    }

    return sql(node);
  };
}
