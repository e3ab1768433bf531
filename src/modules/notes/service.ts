// Notes of one organization: the note's own writes on top of the record kernel (record.ts: pages, reads, sync):
// create, update and delete with their targets (each a record of the workspace, held against deletion until commit),
// the author rule, `note_added` timeline entries and `note.created`; and the notes of one record.
import { randomUUID } from 'node:crypto';
import { Prisma } from '../../generated/prisma/client.js';
import type { TenantDb, TenantTx } from '../../db/tenant-scope.js';
import { changedSince, nextVersion, versionMatches, type ExpectedVersions } from '../../lib/etag.js';
import { isUuid } from '../../lib/http-schemas.js';
import { forbidden, validationFailed } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { recordService, type CrmScope } from '../../records/record-service.js';
import { noteInclude, noteNotFound, noteRecord, toNoteDto, type NoteRow } from './record.js';
import type { NoteCreate, NoteDto, NoteTargetType, NoteUpdate } from './schemas.js';

type Target = { type: NoteTargetType; id: string };

/** Each target type's table (constants, never request input) and the timeline column of those that have one. */
const TARGET_TABLES: Record<NoteTargetType, { table: string; timeline?: 'companyId' | 'contactId' }> = {
  company: { table: 'companies', timeline: 'companyId' },
  contact: { table: 'contacts', timeline: 'contactId' },
  deal: { table: 'deals' },
  task: { table: 'tasks' },
};

/**
 * Answers 400 on `targets.N` for each target that is not a record of this workspace or repeats an earlier one. The
 * found records are locked FOR KEY SHARE: one deleted meanwhile waits for this transaction, so a note never gets a
 * target that is already gone (the target rows have no foreign key to hold them).
 */
async function checkTargets(tx: TenantTx, organizationId: string, targets: Target[]): Promise<void> {
  const found = new Set<string>();
  for (const [type, { table }] of Object.entries(TARGET_TABLES)) {
    const ids = targets.filter((target) => target.type === type).map((target) => target.id);
    if (ids.length === 0) continue;
    const rows = await tx.$queryRaw<{ id: string }[]>(
      Prisma.sql`SELECT id::text AS id FROM ${Prisma.raw(table)} WHERE organization_id = ${organizationId}::uuid AND id = ANY(${ids}::uuid[]) FOR KEY SHARE`,
    );
    for (const row of rows) found.add(`${type}:${row.id}`);
  }
  const seen = new Set<string>();
  const errors: Record<string, string[]> = {};
  targets.forEach((target, index) => {
    const key = `${target.type}:${target.id.toLowerCase()}`;
    if (seen.has(key)) errors[`targets.${index}`] = ['This record is already a target of the note.'];
    else if (!found.has(key)) errors[`targets.${index}`] = [`No such ${target.type} in this workspace.`];
    seen.add(key);
  });
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

/** Replaces the note's targets (in the given order) and adds `note_added` to the timelines of those it did not have. */
async function writeTargets(tx: TenantTx, scope: CrmScope, noteId: string, targets: Target[], before: Target[]): Promise<void> {
  const { organizationId, actor } = scope;
  await checkTargets(tx, organizationId, targets);
  if (before.length > 0) await tx.noteTarget.deleteMany({ where: { noteId } });
  await tx.noteTarget.createMany({
    data: targets.map((target, position) => ({
      organizationId,
      noteId,
      targetType: target.type,
      targetId: target.id.toLowerCase(),
      position,
    })),
  });
  const had = new Set(before.map((target) => `${target.type}:${target.id}`));
  const entries = targets.flatMap((target) => {
    const timeline = TARGET_TABLES[target.type].timeline;
    if (!timeline || had.has(`${target.type}:${target.id.toLowerCase()}`)) return [];
    return [
      {
        [timeline]: target.id.toLowerCase(),
        kind: 'note_added',
        subjectId: noteId,
        actorType: actor.type,
        actorId: actor.id,
        actorName: actor.name,
      },
    ];
  });
  if (entries.length > 0) await tx.crmActivity.createMany({ data: entries.map((entry) => ({ ...entry, organizationId })) });
}

/** The note's row, locked for this transaction's change; 404 when the workspace has none of that id. */
async function lockedNote(tx: TenantTx, organizationId: string, id: string): Promise<NoteRow> {
  if (!isUuid(id)) throw noteNotFound();
  await tx.$executeRaw`SELECT 1 FROM notes WHERE organization_id = ${organizationId}::uuid AND id = ${id}::uuid FOR UPDATE`;
  const note = await tx.note.findFirst({ where: { id }, include: noteInclude });
  if (!note) throw noteNotFound();
  return note;
}

/** Only the author (the same user or API key) or an owner or admin of the workspace changes or deletes a note. */
function checkAuthor(scope: CrmScope, note: NoteRow): void {
  const author = note.createdByType === scope.actor.type && note.createdBy !== null && note.createdBy === scope.actor.id;
  if (author || scope.role === 'owner' || scope.role === 'admin') return;
  throw forbidden('note_author_only', 'Only the author of a note, or an owner or admin of the workspace, may change or delete it.');
}

const targetsOf = (note: NoteRow): Target[] => note.targets.map((t) => ({ type: t.targetType as NoteTargetType, id: t.targetId }));

async function create(scope: CrmScope, body: NoteCreate): Promise<NoteDto> {
  const { organizationId, actor } = scope;
  const id = randomUUID();
  return scope.db.$transaction(async (tx) => {
    await tx.note.create({
      data: { id, organizationId, body: body.body, createdBy: actor.id, createdByType: actor.type, createdByName: actor.name },
    });
    await writeTargets(tx, scope, id, body.targets, []);
    const note = toNoteDto(await tx.note.findFirstOrThrow({ where: { id }, include: noteInclude }));
    await dispatchEvent(tx, { organizationId, name: 'note.created', data: note });
    return note;
  });
}

/** Partial; the note's row is locked first. With `expected` (an If-Match), only a note still at one of those versions. */
async function update(scope: CrmScope, id: string, body: NoteUpdate, expected?: ExpectedVersions): Promise<NoteDto> {
  const { organizationId } = scope;
  return scope.db.$transaction(async (tx) => {
    const current = await lockedNote(tx, organizationId, id);
    if (!versionMatches(expected, current.updatedAt)) throw changedSince();
    checkAuthor(scope, current);
    if (body.body === undefined && body.targets === undefined) return toNoteDto(current);
    if (body.targets) await writeTargets(tx, scope, id, body.targets, targetsOf(current));
    const changed = await tx.note.update({
      where: { id },
      data: { body: body.body, updatedAt: nextVersion(current.updatedAt) },
      include: noteInclude,
    });
    return toNoteDto(changed);
  });
}

/** Deletes the note (its targets with it); its timeline entries stay, as a deleted deal's `deal_attached` do. */
async function remove(scope: CrmScope, id: string, expected?: ExpectedVersions): Promise<void> {
  await scope.db.$transaction(async (tx) => {
    const current = await lockedNote(tx, scope.organizationId, id);
    if (!versionMatches(expected, current.updatedAt)) throw changedSince();
    checkAuthor(scope, current);
    await tx.note.delete({ where: { id } });
  });
}

/** The notes on one record, newest first (the caller checked that the record exists). */
async function notesOf(db: TenantDb, target: Target): Promise<NoteDto[]> {
  const notes = await db.note.findMany({
    where: { targets: { some: { targetType: target.type, targetId: target.id } } },
    include: noteInclude,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  return notes.map(toNoteDto);
}

/** Notes: the kernel's behaviour (record.ts: lists, reads, sync), the note's own writes, a record's notes. */
export const noteService = { ...recordService<NoteRow, NoteDto>(noteRecord), create, update, remove, notesOf };
export type NoteService = typeof noteService;
