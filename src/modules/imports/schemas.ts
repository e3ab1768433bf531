// Request and response schemas of the CSV imports (named components, registered in src/http/components.ts).
import { type Static, Type } from '@sinclair/typebox';
import { named, Nullable, NullableTimestamp, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { RecordParamsSchema } from '../../records/record-schemas.js';

export const IMPORT_KINDS = ['companies', 'contacts'] as const;
export const ImportKindSchema = StringEnum(IMPORT_KINDS, {
  $id: 'ImportKind',
  description: 'What the file holds: `companies` or `contacts`.',
});
export const ImportModeSchema = StringEnum(['create', 'upsert'], {
  $id: 'ImportMode',
  description:
    '`create` (default): every row is a new record. `upsert`: a row matching an existing record by its key updates it, ' +
    'others are created. The key of contacts is `email`; of companies `website`, else `email`. A row whose key matches ' +
    'several records, or two different records by website and by email, fails with that reason.',
});
export const ImportStatusSchema = StringEnum(['queued', 'running', 'succeeded', 'failed', 'cancelled'], {
  $id: 'ImportStatus',
  description:
    '`queued`, `running`, then `succeeded` (at least one row written, or an empty file), `failed` (no row could be ' +
    'written, or the job gave up) or `cancelled` (what was committed before stays and is counted).',
});
export type ImportStatus = Static<typeof ImportStatusSchema>;

export const ImportSchema = Type.Object(
  {
    id: Uuid(),
    kind: Ref(ImportKindSchema),
    mode: Ref(ImportModeSchema),
    status: Ref(ImportStatusSchema),
    total_rows: Type.Integer({ description: 'Data rows in the file (the header row not counted).' }),
    processed_rows: Type.Integer({ description: 'Rows handled so far (created, updated or failed).' }),
    created: Type.Integer(),
    updated: Type.Integer(),
    failed_rows: Type.Integer({ description: 'Rows listed in the errors CSV.' }),
    created_by: Nullable(Uuid({ description: 'The user who started it; null when a workspace API key did (or on older imports).' })),
    created_by_api_key_id: Nullable(
      Uuid({ description: 'The workspace API key that started it (never the user who created the key); null when a user did.' }),
    ),
    created_at: Timestamp(),
    finished_at: NullableTimestamp(),
  },
  { ...named('Import'), description: 'A CSV import and its progress; never the file itself.' },
);
export type ImportDto = {
  id: string;
  kind: Static<typeof ImportKindSchema>;
  mode: Static<typeof ImportModeSchema>;
  status: ImportStatus;
  total_rows: number;
  processed_rows: number;
  created: number;
  updated: number;
  failed_rows: number;
  created_by: string | null;
  created_by_api_key_id: string | null;
  created_at: string;
  finished_at: string | null;
};

/** The multipart form, documented for OpenAPI only: the handler reads the parts as a stream (no JSON validation). */
export const ImportCreateSchema = Type.Object(
  {
    // No `type`: the multipart parser hands the file over as bytes (documented as a CSV part, not a JSON string).
    // A string whatever the transport: a file part arrives as its digest (routes.ts), a plain field as its text.
    file: Type.Unsafe<Buffer>({
      type: 'string',
      contentMediaType: 'text/csv',
      description:
        'The CSV file: UTF-8 (with or without BOM), comma- or semicolon-separated, a header row. An empty cell is an ' +
        "absent (or cleared) field; one leading `'` before `=`, `+`, `-` or `@` (the export's formula guard) is removed.",
    }),
    kind: Ref(ImportKindSchema),
    mapping: Type.Optional(
      Type.String({
        description:
          'JSON object: CSV column → API field (null ignores the column). Unmapped columns must be named like a field ' +
          '(`id`, `created_at` and `updated_at`, as the export writes them, are ignored). Contacts also take a `company` ' +
          'column: the company of the workspace with that customer code (`CUS-00042`), else that website, else exactly that ' +
          'name; none, or several by the first that finds any, fails the row. A custom field is the column `custom.<key>` ' +
          '(as the export names it, or mapped to it): an unknown or archived key refuses the file, and so does a file ' +
          "without a column for a required field. Its cells are the field's values as the export writes them (a number, " +
          "`true`/`false`, a multi_select's values joined by `;`), checked as a create or PATCH checks them: a bad one " +
          'fails its row (`custom.<key>: …` in the errors CSV); an empty cell is no value on a create (a required ' +
          "field then fails the row) and clears the value on an upsert's update (a required field's stays).",
      }),
    ),
    mode: Type.Optional(Ref(ImportModeSchema)),
  },
  { ...named('ImportCreate'), additionalProperties: false },
);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const IMPORT_SCHEMAS = [ImportKindSchema, ImportModeSchema, ImportStatusSchema, ImportSchema, ImportCreateSchema];

export const ImportListQuerySchema = Type.Object({ ...PageQuerySchema.properties });
export const ImportParamsSchema = RecordParamsSchema('import_id', 'Import');
