// TypeBox schemas of saved views: the view, its create and update bodies, its object and visibility, its list query.
import { Type, type Static } from '@sinclair/typebox';
import { named, Nullable, OrganizationParamsSchema, Ref, StrictObject, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { FilterSchema, QuerySortSchema } from '../../records/filter/schema.js';
import { MAX_CONDITIONS, MAX_DEPTH } from '../../records/filter/validate.js';
import { MAX_VIEW_COLUMNS, VIEW_OBJECTS } from '../../records/views.js';

export const MAX_VIEW_NAME = 200;
export const MAX_VIEWS_PER_WORKSPACE = 500;
export const MAX_VIEW_SORT_KEYS = 3;

export const ViewObjectSchema = StringEnum(VIEW_OBJECTS, {
  $id: 'ViewObject',
  description: 'The record type a view lists: `companies`, `contacts`, `deals` or `tasks` (its collection, `GET …/{object}/?view=`).',
});

export const ViewVisibilitySchema = StringEnum(['personal', 'workspace'], {
  $id: 'ViewVisibility',
  description:
    '`personal`: seen by its creator only (others get 404); creating one needs VIEW_CRM, and only its creator changes or ' +
    'deletes it. `workspace`: seen by every member; creating, changing or deleting one needs MANAGE_CRM.',
});

const name = Type.String({
  minLength: 1,
  maxLength: MAX_VIEW_NAME,
  description: `1-${MAX_VIEW_NAME} characters, not only spaces (trimmed).`,
});
const filter = Nullable(Ref(FilterSchema), {
  description:
    `As a query's \`filter\` (at most ${MAX_CONDITIONS} conditions, ${MAX_DEPTH} levels), checked against the fields of \`object\`; ` +
    'null: every record.',
});
const search = Nullable(Type.String({ maxLength: 200 }), {
  description: "As a query's `search` (companies and contacts only); null or empty: none.",
});
const sort = Type.Array(Ref(QuerySortSchema), {
  maxItems: MAX_VIEW_SORT_KEYS,
  description: `As a query's \`sort\`: up to ${MAX_VIEW_SORT_KEYS} keys, ties by \`id\`; empty: newest first.`,
});
const columns = Type.Array(Type.String({ maxLength: 200 }), {
  maxItems: MAX_VIEW_COLUMNS,
  uniqueItems: true,
  description:
    `The fields a client shows, in order: at most ${MAX_VIEW_COLUMNS} distinct names, each a field a filter takes ` +
    '(`company.<field>` too) or a field of the record (`assigned_to_name`). The list answers whole records whatever the columns.',
});

export const SavedViewSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    object: Ref(ViewObjectSchema),
    filter: Nullable(Ref(FilterSchema), { description: 'The filter as it was saved; null: every record.' }),
    search: Nullable(Type.String(), { description: 'The search as it was saved; null: none.' }),
    sort: Type.Array(Ref(QuerySortSchema), { description: 'The sort as it was saved; empty: newest first.' }),
    columns: Type.Array(Type.String(), { description: 'The fields a client shows, in order.' }),
    visibility: Ref(ViewVisibilitySchema),
    created_by: Nullable(Uuid({ description: 'The user who created it; null for a workspace view a workspace API key created.' })),
    created_at: Timestamp(),
    updated_at: Timestamp({ description: "The view's version: its ETag." }),
  },
  {
    ...named('SavedView'),
    description: 'A saved view: a named query (filter, search, sort) of one record type, and the columns a client shows.',
    examples: [
      {
        id: '0b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b',
        name: 'German customers',
        object: 'companies',
        filter: {
          and: [
            { field: 'lifecycle_stage', op: 'eq', value: 'customer' },
            { field: 'country', op: 'eq', value: 'DE' },
          ],
        },
        search: null,
        sort: [{ field: 'name', direction: 'asc' }],
        columns: ['name', 'city', 'assigned_to_name'],
        visibility: 'workspace',
        created_by: '9b2e7c1a-7d0c-4c55-8a3e-1f2d3c4b5a69',
        created_at: '2026-11-28T10:00:00.000Z',
        updated_at: '2026-11-28T10:00:00.000Z',
      },
    ],
  },
);
export type SavedViewDto = Static<typeof SavedViewSchema>;

export const SavedViewCreateSchema = StrictObject(
  {
    name,
    object: Ref(ViewObjectSchema),
    visibility: Ref(ViewVisibilitySchema),
    filter: Type.Optional(filter),
    search: Type.Optional(search),
    sort: Type.Optional(sort),
    columns: Type.Optional(columns),
  },
  { ...named('SavedViewCreate'), description: 'A new saved view; absent parts: no filter, no search, newest first, no columns.' },
);

export const SavedViewUpdateSchema = StrictObject(
  {
    name: Type.Optional(name),
    visibility: Type.Optional(Ref(ViewVisibilitySchema)),
    filter: Type.Optional(filter),
    search: Type.Optional(search),
    sort: Type.Optional(sort),
    columns: Type.Optional(columns),
  },
  {
    ...named('SavedViewUpdate'),
    description: 'The parts of a view to change (each replaced whole); the others keep their value. `object` cannot change (400).',
  },
);

export const ViewParamsSchema = Type.Object({
  ...OrganizationParamsSchema.properties,
  view_id: Type.String({ description: 'Saved view UUID (a malformed one answers 404).' }),
});

export const ViewListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  object: Type.Optional(Ref(ViewObjectSchema, { description: 'Only views of this record type.' })),
});

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const VIEW_SCHEMAS = [ViewObjectSchema, ViewVisibilitySchema, SavedViewSchema, SavedViewCreateSchema, SavedViewUpdateSchema];
