// Schema pieces shared by the record types' endpoints: create and update bodies, search, sort, path parameters and
// sync.
import { Type, type TProperties } from '@sinclair/typebox';
import { named, Nullable, OrganizationParamsSchema, Ref, StringEnum, Uuid } from '../lib/http-schemas.js';
import { SEARCH_TERM_PATTERN } from '../lib/text-search.js';

const ignored = Type.Optional(
  Type.Unknown({ description: 'Ignored: the organization always comes from the path (accepted for older clients).' }),
);

/** Create bodies accept these and drop them: the tenant is the path's organization, never the body's. */
export const IgnoredOrganizationFields = { organization: ignored, organization_id: ignored };

/**
 * The create and update bodies of a record type from its writable fields. Create (POST) requires `required`, takes
 * the others optionally and also accepts the ignored organization fields; update (PATCH) takes any subset of the
 * fields. Anything else answers 400.
 */
export function recordBodySchemas<F extends TProperties, K extends keyof F & string>(
  record: string,
  fields: F,
  required: K[],
  updateNote = '',
) {
  const all = Type.Object(fields);
  return {
    create: Type.Composite([Type.Pick(all, required), Type.Partial(Type.Omit(all, required)), Type.Object(IgnoredOrganizationFields)], {
      ...named(`${record}Create`),
      additionalProperties: false,
    }),
    update: Type.Partial(all, {
      ...named(`${record}Update`),
      additionalProperties: false,
      description: `Any subset of the fields; absent fields stay unchanged.${updateNote}`,
    }),
  };
}

/** The `assigned_to` field of a create or update body. */
export const AssignedToField = Nullable(Uuid({ description: 'A user id of a member of this workspace (400 otherwise); null unassigns.' }));

/** The `search` query parameter of a CRM list. */
export const SearchTermSchema = (fields: string) =>
  Type.Optional(
    Type.String({
      maxLength: 200,
      pattern: SEARCH_TERM_PATTERN,
      description:
        `Case-insensitive substring of ${fields}: a record matches when PostgreSQL's \`lower()\` of one of them ` +
        "contains `lower()` of the term (the database's builtin C.UTF-8 locale: Unicode simple case mapping, one code " +
        'point to one, so `Zürich` matches `ZÜRICH`, `İ` lowers to `i` and `ß` matches only `ß`). Every character is ' +
        'literal (`%`, `_` and `\\` too); control characters are refused (400). Combines with the filters and `sort`. ' +
        'Pages of a search are like those of the list: each holds `limit` records unless it is the last (no `Link`), ' +
        'in the list order, each match exactly once while others are created or changed.',
    }),
  );

/** The orders of a CRM list (`sort`). */
export const ListSortSchema = StringEnum(['-created_at', 'created_at', '-updated_at', 'updated_at', 'name', '-name'], {
  $id: 'ListSort',
  description:
    'Order of a company or contact list: by `created_at` (default `-created_at`, newest first), `updated_at` or ' +
    "`name` (a contact's `last_name`, then `first_name`), ascending, or descending with a leading `-`; ties broken by " +
    '`id` in the same direction. Names compare as people read them: case- and accent-insensitively (ICU, root ' +
    'locale: `alpha`, `Beta`, `Émile`, `zeta`); names equal so compare by `id`. Keyset pages: a record whose sort key does not change during the walk appears exactly once and in ' +
    'order; one whose key changes (a rename, an update under `updated_at`) may appear at its old or its new place. A ' +
    'cursor belongs to its sort: sent with another, it answers 400.',
});

/** The `sort` query parameter of a CRM list. */
export const SortParameterSchema = Type.Optional(Ref(ListSortSchema));

/** The path parameters of one record: the organization and `idParam` (a malformed id answers 404, not 400). */
export const RecordParamsSchema = <K extends string>(idParam: K, record: string) =>
  Type.Composite([
    OrganizationParamsSchema,
    Type.Object({ [idParam]: Type.String({ description: `${record} UUID (a malformed one answers 404).` }) } as Record<
      K,
      ReturnType<typeof Type.String>
    >),
  ]);

/** The `updated_since` query parameter of a CRM list: an incremental sync instead of a page of the list. */
export const UpdatedSinceSchema = Type.Optional(
  Type.String({
    format: 'date-time',
    description:
      'Incremental sync: instead of the list, the records created or changed after this instant (RFC 3339), in the ' +
      'order their changes were committed, so a client can keep a local copy in step. Every page links on ' +
      '(`Link: rel="next"`, a cursor of the sync): a page shorter than `limit` means "caught up for now"; poll its link ' +
      'later for what changes next. A record changed again appears again; one changed during the walk appears once its ' +
      'change has committed, even when a transaction that began earlier commits later (changes are handed out only ' +
      'below the oldest transaction still running). Combines with the equality filters (selecting by current value); ' +
      '`sort` and `search` answer 400. Deleted records are in `listDeletions` (kept 30 days).',
  }),
);
