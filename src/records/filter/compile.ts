// A typed filter tree as one SQL condition over a record's row, every value a parameter (never in the text).
import type { PageCondition } from '../../db/page-query.js';
import { SQL_TYPES } from './fields.js';
import type { FilterNode } from './validate.js';

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

    function comparison({ field, op, value }: Extract<FilterNode, { kind: 'condition' }>): string {
      const type = SQL_TYPES[field.spec.type];
      const column = field.sql;
      const text = field.spec.type === 'text';
      const one = () => parameter(parameterValue(value), type);
      switch (op) {
        case 'eq':
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
