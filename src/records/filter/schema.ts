// The filter tree, sort keys and query body as named OpenAPI components, so generated clients type the filters they
// build. The request is checked by validate.ts (precise paths), not by these schemas.
import { Type, type TSchema } from '@sinclair/typebox';
import { named, Ref, StringEnum } from '../../lib/http-schemas.js';
import { MAX_LIMIT } from '../../lib/pagination.js';
import { ArchivedFilterSchema } from '../activity-schemas.js';
import { OPERATORS } from './fields.js';
import { MAX_CONDITIONS, MAX_DEPTH, MAX_LIST_VALUES } from './validate.js';

/** A reference to the recursive `Filter` component by name (it cannot refer to itself as an object). */
const FilterRef = (description: string) => Type.Unsafe<unknown>({ $ref: 'Filter', description });

export const FilterOperatorSchema = StringEnum(OPERATORS, {
  $id: 'FilterOperator',
  description:
    '`eq`, `neq`, `in`, `not_in` (every type; `in`/`not_in` take an array of 1-100 values); `lt`, `lte`, `gt`, `gte` ' +
    '(numbers, decimals, dates, date-times); `contains`, `starts_with` (text, case-insensitive, every character ' +
    'literal); `is_empty`, `is_not_empty` (no value: null, and `""` for text). Text `eq` is exact. `neq` and `not_in` ' +
    'also match records whose field is empty; the others never do. A `multi_select` custom field takes `contains` (holds ' +
    'that option), `in` (holds any of them), `not_in` (holds none of them) and the emptiness tests (none or `[]`).',
});

const Scalar = [Type.String(), Type.Number(), Type.Boolean()];
export const FilterValueSchema = Type.Union([...Scalar, Type.Array(Type.Union(Scalar), { minItems: 1, maxItems: MAX_LIST_VALUES })], {
  ...named('FilterValue'),
  description:
    "A value of the field's type: a string (text, enum, UUID, date `YYYY-MM-DD`, date-time with a time zone, or a " +
    'decimal such as `"1234.50"`), a number (numbers and decimals), a boolean, or an array of them for `in`/`not_in`.',
});

export const FilterConditionSchema = Type.Object(
  {
    field: Type.String({
      maxLength: 200,
      description:
        "A standard field of the record (its API name); `custom.<key>`, an active custom field of the record type; or on contacts, deals and tasks `company.<field>` and `company.custom.<key>`: the linked company's field (empty without a company).",
    }),
    op: Ref(FilterOperatorSchema),
    value: Type.Optional(Ref(FilterValueSchema, { description: 'Absent for `is_empty` and `is_not_empty`.' })),
  },
  { ...named('FilterCondition'), additionalProperties: false, description: 'One test of one field.' },
);
export const FilterAndSchema = Type.Object(
  { and: Type.Array(FilterRef('A filter that must hold.'), { minItems: 1 }) },
  { ...named('FilterAnd'), additionalProperties: false, description: 'Every filter holds.' },
);
export const FilterOrSchema = Type.Object(
  { or: Type.Array(FilterRef('A filter that may hold.'), { minItems: 1 }) },
  { ...named('FilterOr'), additionalProperties: false, description: 'At least one filter holds.' },
);
export const FilterNotSchema = Type.Object(
  { not: FilterRef('The filter that must not hold.') },
  { ...named('FilterNot'), additionalProperties: false, description: 'The filter does not hold.' },
);
export const FilterSchema = Type.Union([Ref(FilterConditionSchema), Ref(FilterAndSchema), Ref(FilterOrSchema), Ref(FilterNotSchema)], {
  ...named('Filter'),
  description:
    `A filter tree: a condition, or \`and\`/\`or\` of filters, or \`not\` of one. At most ${MAX_CONDITIONS} conditions ` +
    `and ${MAX_DEPTH} levels. A malformed node answers 400 with its path in \`errors\` (\`filter.and.1.field\`).`,
});

export const SortDirectionSchema = StringEnum(['asc', 'desc'], { $id: 'SortDirection', description: 'Ascending or descending.' });
export const QuerySortSchema = Type.Object(
  {
    field: Type.String({ maxLength: 200, description: 'A field a filter takes (on contacts, `name` is last_name then first_name).' }),
    direction: Type.Optional(Ref(SortDirectionSchema, { description: 'Default `asc`.' })),
  },
  { ...named('QuerySort'), additionalProperties: false, description: 'One sort key.' },
);

export const RecordQuerySchema = Type.Object(
  {
    filter: Type.Optional(Ref(FilterSchema)),
    search: Type.Optional(Type.String({ maxLength: 200, description: "The list's `search`, combined with the filter (AND)." })),
    sort: Type.Optional(
      Type.Array(Ref(QuerySortSchema), {
        maxItems: 3,
        description:
          'Up to 3 keys; ties by `id`. Default: newest first. Text sorts case- and accent-insensitively, empty values last ' +
          'in either direction; an enum sorts in the order of its values as documented.',
      }),
    ),
    archived: Type.Optional(Ref(ArchivedFilterSchema, { description: 'Default `active`.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: 'Page size (1-200, default 50).' })),
    cursor: Type.Optional(Type.String({ maxLength: 4000, description: '`next_cursor` of the previous page of the same query.' })),
  },
  { ...named('RecordQuery'), additionalProperties: false, description: 'A query of records: filter, search, sort, page.' },
);

/** The answer of a record type's query: a page of `record`s and the cursor of the next page. */
export const queryPageSchema = (name: string, record: TSchema) =>
  Type.Object(
    {
      results: Type.Array(Ref(record)),
      next_cursor: Type.Union([Type.String(), Type.Null()], {
        description: 'Send it back as `cursor` (with the same query) for the next page; null on the last page.',
      }),
    },
    { ...named(`${name}QueryPage`), description: `A page of ${name.toLowerCase()} records: full unless it is the last.` },
  );

/** The components of queries (the per-type pages are the record types'). */
export const FILTER_SCHEMAS: readonly TSchema[] = [
  FilterOperatorSchema,
  FilterValueSchema,
  FilterConditionSchema,
  FilterAndSchema,
  FilterOrSchema,
  FilterNotSchema,
  FilterSchema,
  SortDirectionSchema,
  QuerySortSchema,
  RecordQuerySchema,
];
