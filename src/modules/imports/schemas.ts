// Request and response schemas of the CSV imports (named components, registered in app.ts).
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { NullableTimestamp, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { RecordParamsSchema } from '../crm/record-schemas.js';

/** A closed set of strings as one named `{"type": "string", "enum": [...]}` component. */
const stringEnum = <const V extends readonly string[]>(values: V, $id: string, description: string) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], $id, title: $id, description });
/** The same enum inline, for the request body (validated by the app's own Ajv, which resolves no references). */
const inline = <T extends { enum?: unknown; description?: string }>(schema: T) =>
  Type.Unsafe<Static<T & TSchema>>({ type: 'string', enum: schema.enum, description: schema.description });

export const IMPORT_KINDS = ['companies', 'contacts'] as const;
export const ImportKindSchema = stringEnum(IMPORT_KINDS, 'ImportKind', 'What the file holds: `companies` or `contacts`.');
export const ImportModeSchema = stringEnum(
  ['create', 'upsert'] as const,
  'ImportMode',
  '`create` (default): every row is a new record. `upsert`: a row matching an existing record by its key updates it, ' +
    'others are created. The key of contacts is `email`; of companies `website`, else `email`. A row whose key matches ' +
    'several records, or two different records by website and by email, fails with that reason.',
);
export const ImportStatusSchema = stringEnum(
  ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const,
  'ImportStatus',
  '`queued`, `running`, then `succeeded` (at least one row written, or an empty file), `failed` (no row could be ' +
    'written, or the job gave up) or `cancelled` (what was committed before stays and is counted).',
);
export type ImportStatus = Static<typeof ImportStatusSchema>;

export const ImportSchema = Type.Object(
  {
    id: Uuid(),
    kind: Type.Ref(ImportKindSchema),
    mode: Type.Ref(ImportModeSchema),
    status: Type.Ref(ImportStatusSchema),
    total_rows: Type.Integer({ description: 'Data rows in the file (the header row not counted).' }),
    processed_rows: Type.Integer({ description: 'Rows handled so far (created, updated or failed).' }),
    created: Type.Integer(),
    updated: Type.Integer(),
    failed_rows: Type.Integer({ description: 'Rows listed in the errors CSV.' }),
    created_at: Timestamp(),
    finished_at: NullableTimestamp(),
  },
  { $id: 'Import', title: 'Import', description: 'A CSV import and its progress; never the file itself.' },
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
  created_at: string;
  finished_at: string | null;
};

/** The multipart form, documented for OpenAPI only: the handler reads the parts as a stream (no JSON validation). */
export const ImportCreateSchema = Type.Object(
  {
    // No `type`: the multipart parser hands the file over as bytes (documented as a CSV part, not a JSON string).
    file: Type.Unsafe<Buffer>({
      contentMediaType: 'text/csv',
      description:
        'The CSV file: UTF-8 (with or without BOM), comma- or semicolon-separated, a header row. An empty cell is an ' +
        "absent (or cleared) field; one leading `'` before `=`, `+`, `-` or `@` (the export's formula guard) is removed.",
    }),
    kind: inline(ImportKindSchema),
    mapping: Type.Optional(
      Type.String({
        description:
          'JSON object: CSV column → API field (null ignores the column). Unmapped columns must be named like a field ' +
          '(`id`, `created_at` and `updated_at`, as the export writes them, are ignored). Contacts also take a `company` ' +
          'column: the company of the workspace with that website, else with exactly that name.',
      }),
    ),
    mode: Type.Optional(inline(ImportModeSchema)),
  },
  { title: 'ImportCreate', additionalProperties: false },
);

export const IMPORT_SCHEMAS: TSchema[] = [ImportKindSchema, ImportModeSchema, ImportStatusSchema, ImportSchema];

export const ImportListQuerySchema = Type.Object({ ...PageQuerySchema.properties });
export const ImportParamsSchema = RecordParamsSchema('import_id', 'Import');
