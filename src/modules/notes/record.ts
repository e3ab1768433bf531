// The note record type: its table and API fields (its targets read with it, in the order given), newest-first pages,
// sync, and no archive; its writes are the note's own (service.ts: targets, author rules, `note.created`).
import type { Prisma } from '../../generated/prisma/client.js';
import { pageTable } from '../../db/page-table.js';
import { notFound } from '../../lib/problem.js';
import type { RecordType } from '../../records/definition.js';
import {
  NoteCreateSchema,
  NoteListQuerySchema,
  NoteParamsSchema,
  NoteSchema,
  NoteUpdateSchema,
  type NoteDto,
  type NoteListQuery,
  NoteBatchSchemas,
} from './schemas.js';

/** A note with its targets in their order: what `find` reads and `toNoteDto` shapes. */
export const noteInclude = { targets: { orderBy: { position: 'asc' } } } satisfies Prisma.NoteInclude;
export type NoteRow = Prisma.NoteGetPayload<{ include: typeof noteInclude }>;

export function toNoteDto(note: NoteRow): NoteDto {
  return {
    id: note.id,
    body: note.body,
    targets: note.targets.map((target) => ({ type: target.targetType as NoteDto['targets'][number]['type'], id: target.targetId })),
    created_by: note.createdBy,
    created_by_name: note.createdByName,
    created_at: note.createdAt.toISOString(),
    updated_at: note.updatedAt.toISOString(),
  };
}

/** The list reads the API fields straight from SQL, the targets as one JSON array per note (in their order). */
export const notePage = pageTable<NoteDto>(
  'notes',
  ['id', 'body', 'created_by', 'created_by_name'],
  [],
  {},
  {
    targets:
      "(SELECT coalesce(jsonb_agg(jsonb_build_object('type', nt.target_type, 'id', nt.target_id) ORDER BY nt.position), '[]'::jsonb) " +
      'FROM note_targets nt WHERE nt.organization_id = notes.organization_id AND nt.note_id = notes.id)',
  },
);

export const noteNotFound = () => notFound('Note not found.', 'note_not_found');

export const noteRecord: RecordType<NoteRow, NoteDto, NoteListQuery> = {
  names: { one: 'Note', many: 'Notes' },
  schemas: {
    record: NoteSchema,
    create: NoteCreateSchema,
    update: NoteUpdateSchema,
    listQuery: NoteListQuerySchema,
    params: NoteParamsSchema,
    batch: NoteBatchSchemas,
  },
  table: notePage,
  find: (db, id) => db.note.findFirst({ where: { id }, include: noteInclude }),
  toDto: toNoteDto,
  notFound: noteNotFound,
  filters: () => ({}),
  // `note.created` is dispatched by the note's own create (service.ts), which also writes its targets.
  events: null,
  archivable: false,
  sync: true,
  summaries: { list: 'Notes of a workspace, newest first unless sorted (VIEW_CRM).' },
  notes: {
    list: 'Every note of the workspace. Pages follow the `Link: rel="next"` header. A record\'s notes: `GET …/{object}/{id}/notes/`.',
    page: 'Notes, in the order of `sort`.',
    create:
      'Needs MANAGE_CRM. The author (`created_by`) is the caller: the signed-in user, or the workspace API key. Adds ' +
      '`note_added` (the note as `subject_id`) to the timeline of each company and contact target (deals and tasks ' +
      'have no timeline) and dispatches `note.created`, in the same transaction. A target that is not a record of this ' +
      'workspace, or is named twice, answers 400 on `targets.N`. Accepts `Idempotency-Key`.',
    update:
      'Only the author (the same user or API key) or an owner or admin of the workspace (403 otherwise). `targets` ' +
      'replaces the list; a company or contact it adds gets `note_added` on its timeline. With `If-Match`, a note that ' +
      'changed since answers 412 and nothing is written.',
    delete:
      'Only the author (the same user or API key) or an owner or admin of the workspace (403 otherwise). With ' +
      '`If-Match`, a note that changed since answers 412 and stays.',
  },
};
