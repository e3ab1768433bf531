// Schema pieces shared by the CRM record endpoints (companies, contacts).
import { Type, type TProperties } from '@sinclair/typebox';
import { named, Nullable, OrganizationParamsSchema, Uuid } from '../../lib/http-schemas.js';
import { SEARCH_SCAN_ROWS, SEARCH_TERM_PATTERN } from '../../lib/text-search.js';

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
        `Case-insensitive substring of ${fields}. Every character is literal (\`%\`, \`_\` and \`\\\` too); control ` +
        `characters are refused (400). A search page reads at most ${SEARCH_SCAN_ROWS.toLocaleString('en')} records, newest ` +
        'first from the cursor, and returns the matches among them, so its time does not depend on the term: a page can ' +
        'hold fewer records than `limit`, or none, and still carry `Link: rel="next"`, which then continues after the last ' +
        'record read. Follow the links until a response has no `Link` header: only then have all matches been returned, ' +
        'each exactly once, newest first (records created meanwhile are not among them).',
    }),
  );

/** The path parameters of one record: the organization and `idParam` (a malformed id answers 404, not 400). */
export const RecordParamsSchema = <K extends string>(idParam: K, record: string) =>
  Type.Composite([
    OrganizationParamsSchema,
    Type.Object({ [idParam]: Type.String({ description: `${record} UUID (a malformed one answers 404).` }) } as Record<
      K,
      ReturnType<typeof Type.String>
    >),
  ]);
