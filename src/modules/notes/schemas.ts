// Request and response schemas of the note endpoints: a note's Markdown body and the records it is on.
import { batchComponents, recordBatchSchemas } from '../../records/batch-schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { named, Nullable, Ref, StringEnum, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { IgnoredOrganizationFields, RecordParamsSchema, UpdatedSinceSchema } from '../../records/record-schemas.js';

/** The record types a note can be on. */
export const NOTE_TARGET_TYPES = ['company', 'contact', 'deal', 'task'] as const;
export type NoteTargetType = (typeof NOTE_TARGET_TYPES)[number];

export const NoteTargetTypeSchema = StringEnum(NOTE_TARGET_TYPES, {
  $id: 'NoteTargetType',
  description: 'The kind of record a note is on: `company`, `contact`, `deal` or `task`.',
});

export const NoteTargetSchema = Type.Object(
  {
    type: Ref(NoteTargetTypeSchema),
    id: Uuid({ description: 'The record: one of this workspace (400 on `targets.N` otherwise).' }),
  },
  { ...named('NoteTarget'), additionalProperties: false, description: 'A record the note is on.' },
);

const Targets = Type.Array(Ref(NoteTargetSchema), {
  minItems: 1,
  maxItems: 20,
  description: '1–20 records of this workspace, each named once, in the order given (kept so).',
});
const Body = Type.String({ minLength: 1, maxLength: 65536, description: 'Markdown text, 1–65,536 characters.' });

export const NoteSchema = Type.Object(
  {
    id: Uuid(),
    body: Type.String({ description: 'Markdown text.' }),
    targets: Type.Array(Ref(NoteTargetSchema), {
      description: 'The records the note is on; a deleted record leaves this list (a note without any is deleted).',
    }),
    created_by: Nullable(Uuid({ description: 'The user, or the workspace API key, that wrote the note.' })),
    created_by_name: Nullable(Type.String({ description: "The author's username or key name at the time." })),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  {
    ...named('Note'),
    description: 'A note on one or more records of the workspace.',
    examples: [
      {
        id: '0190f3a2-5b7c-7d8e-9f01-23456789abcd',
        body: 'Call with **Initech**: renewal in March, budget approved.',
        targets: [
          { type: 'company', id: '7c9e6679-7425-40de-944b-e07fc1f90ae7' },
          { type: 'contact', id: '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d' },
        ],
        created_by: '9b2e7c1a-7d0c-4c55-8a3e-1f2d3c4b5a69',
        created_by_name: 'alice',
        created_at: '2026-01-15T09:30:00.000Z',
        updated_at: '2026-01-15T09:30:00.000Z',
      },
    ],
  },
);
export type NoteDto = Static<typeof NoteSchema>;

export const NoteCreateSchema = Type.Object(
  { body: Body, targets: Targets, ...IgnoredOrganizationFields },
  { ...named('NoteCreate'), additionalProperties: false },
);
export type NoteCreate = Static<typeof NoteCreateSchema>;

export const NoteUpdateSchema = Type.Object(
  { body: Type.Optional(Body), targets: Type.Optional(Targets) },
  {
    ...named('NoteUpdate'),
    additionalProperties: false,
    description: 'Any subset of the fields; absent fields stay unchanged. `targets` replaces the whole list.',
  },
);
export type NoteUpdate = Static<typeof NoteUpdateSchema>;

export const NoteSortSchema = StringEnum(['-created_at', 'created_at', '-updated_at', 'updated_at'], {
  $id: 'NoteSort',
  description: 'Order of the notes: by `created_at` (default `-created_at`, newest first) or `updated_at`; `-` descending.',
});

export const NoteListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  sort: Type.Optional(Ref(NoteSortSchema)),
  updated_since: UpdatedSinceSchema,
});
export type NoteListQuery = Static<typeof NoteListQuerySchema>;

export const NoteParamsSchema = RecordParamsSchema('note_id', 'Note');

/** The batch endpoint's request and answer (`POST …/notes/batch/`). */
export const NoteBatchSchemas = recordBatchSchemas('Note', NoteSchema, ['create', 'update', 'delete']);

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const NOTE_SCHEMAS = [
  NoteTargetTypeSchema,
  NoteTargetSchema,
  NoteSortSchema,
  NoteSchema,
  NoteCreateSchema,
  NoteUpdateSchema,
  ...batchComponents(NoteBatchSchemas),
];
