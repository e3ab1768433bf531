// CSV imports of one workspace: accepting a file (checked, stored and queued in one transaction), reading progress
// and failed rows, cancelling, and finishing with the one `import.finished` event.
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import { transactionView, type TenantDb } from '../../db/tenant-scope.js';
import type { Import as ImportRow } from '../../generated/prisma/client.js';
import { enqueueJob, JOBS } from '../../jobs/queue.js';
import { isUuid } from '../../lib/http-schemas.js';
import { afterPosition, newestFirst, type PageRequest } from '../../lib/pagination.js';
import { conflict, notFound } from '../../lib/problem.js';
import { dispatchEvent } from '../automations/dispatch.js';
import { exportCell } from '../../records/record-export.js';
import {
  columnFields,
  decodeImportFile,
  IMPORT_KIND_SPECS,
  invalidFile,
  parseImportFile,
  withDelimiter,
  type ColumnFields,
} from './import-file.js';
import { countRows } from './import-thread.js';
import { loadCustomFields } from '../../records/custom-fields/definitions.js';
import type { ImportDto, ImportStatus } from './schemas.js';
import type { Actor } from '../../lib/current-user.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';

export function toImportDto(row: ImportRow): ImportDto {
  return {
    id: row.id,
    kind: row.kind,
    mode: row.mode,
    status: row.status,
    total_rows: row.totalRows,
    processed_rows: row.processedRows,
    created: row.created,
    updated: row.updated,
    failed_rows: row.failedRows,
    created_by: row.createdById,
    created_by_api_key_id: row.createdByApiKeyId,
    created_at: row.createdAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
  };
}

/** What a request brings: the uploaded file and the form's other fields. */
export interface ImportRequest {
  /** Reads the uploaded file from its start; it is read twice (checked, then stored), never held whole. */
  open: () => AsyncIterable<Buffer>;
  kind: 'companies' | 'contacts';
  mode: 'create' | 'upsert';
  mapping?: string;
  /** Who starts it (recorded on the import and in the audit log). */
  actor: Actor;
  audit: AuditContext;
}

/** Characters per stored piece of a file: few rows to write, little to hold while reading one. */
const CHUNK_CHARS = 1024 * 1024;
/** Storing a 50 MiB file is some 50 inserts: more than the default 5 s on a busy machine. */
const STORE_TIMEOUT_MS = 120_000;

/** The stored file's text, one piece at a time in order (the job's and the errors CSV's source). */
export async function* storedFile(db: TenantDb, importId: string): AsyncGenerator<string> {
  for (let seq = 0; ; seq++) {
    const chunk = await db.importChunk.findFirst({ where: { importId, seq }, select: { text: true } });
    if (!chunk) return;
    yield chunk.text;
  }
}

const importNotFound = () => notFound('Import not found.', 'import_not_found');
const ACTIVE: ImportStatus[] = ['queued', 'running'];

/** The import row of this workspace, or 404 (a malformed id too). */
async function find(db: TenantDb, id: string): Promise<ImportRow> {
  const row = isUuid(id) ? await db.import.findFirst({ where: { id } }) : null;
  if (!row) throw importNotFound();
  return row;
}

/**
 * Ends an active import with `status` (or, without one, `succeeded` unless no row could be written) and offers
 * `import.finished` to the workspace's rules in the same transaction; an import already ended is left alone.
 */
export async function finishImport(
  db: TenantDb,
  organizationId: string,
  id: string,
  status?: ImportStatus,
): Promise<ImportRow | undefined> {
  return db.$transaction(async (tx) => {
    const row = await tx.import.findFirst({ where: { id } });
    if (!row || !ACTIVE.includes(row.status)) return undefined;
    const final = status ?? (row.failedRows > 0 && row.created + row.updated === 0 ? 'failed' : 'succeeded');
    const { count } = await tx.import.updateMany({
      where: { id, status: { in: ACTIVE } },
      data: { status: final, finishedAt: new Date() },
    });
    if (count === 0) return undefined;
    const finished = { ...row, status: final, finishedAt: new Date() };
    await dispatchEvent(transactionView(tx), { organizationId, name: 'import.finished', data: toImportDto(finished) });
    return finished;
  });
}

/** The imports of a workspace; every method takes the request's tenant-bound client. */
export function createImportService() {
  return {
    /**
     * Checks the whole file as it streams (400 before anything is written), then reads it again into pieces stored
     * with the import and its job in one transaction.
     */
    async create(db: TenantDb, organizationId: string, request: ImportRequest): Promise<ImportDto> {
      const kind = IMPORT_KIND_SPECS[request.kind];
      const { delimiter, texts } = await withDelimiter(decodeImportFile(request.open()));
      // Parsed on the import thread: a file of 100,000 rows is a second of the parser's work.
      const { header, rows: totalRows } = await countRows(texts, delimiter);
      if (!header || header.every((cell) => cell.trim() === '')) throw invalidFile('The file has no header row.');
      const fields = columnFields(kind, header, request.mapping, await loadCustomFields(db, kind.object));
      const row = await db.$transaction(
        async (tx) => {
          const created = await tx.import.create({
            data: {
              organizationId,
              kind: request.kind,
              mode: request.mode,
              fields,
              delimiter,
              totalRows,
              createdById: request.actor.userId,
              createdByApiKeyId: request.actor.apiKeyId,
            },
          });
          await recordAudit(tx, { ...request.audit, action: 'import.started', target: { type: 'import', id: created.id }, organizationId });
          let seq = 0;
          let piece = '';
          const store = async () => {
            await tx.importChunk.create({ data: { importId: created.id, organizationId, seq: seq++, text: piece } });
            piece = '';
          };
          for await (const text of decodeImportFile(request.open())) {
            piece += text;
            if (piece.length >= CHUNK_CHARS) await store();
          }
          if (piece !== '') await store();
          await enqueueJob(transactionView(tx), JOBS.import, created.id);
          return created;
        },
        { timeout: STORE_TIMEOUT_MS },
      );
      return toImportDto(row);
    },

    async list(db: TenantDb, page: PageRequest): Promise<(ImportDto & { createdAt: Date })[]> {
      const rows = await db.import.findMany({ where: afterPosition(page.after), orderBy: newestFirst, take: page.limit + 1 });
      return rows.map((row) => ({ ...toImportDto(row), createdAt: row.createdAt }));
    },

    get: async (db: TenantDb, id: string) => toImportDto(await find(db, id)),

    /** Stops an active import: the batches committed so far stay and are counted; 409 once it has ended. */
    async cancel(db: TenantDb, organizationId: string, id: string): Promise<ImportDto> {
      const row = await find(db, id);
      const cancelled = await finishImport(db, organizationId, row.id, 'cancelled');
      if (!cancelled) throw conflict('import_finished', `The import has already ended (${(await find(db, id)).status}).`);
      return toImportDto(cancelled);
    },

    /** The failed rows as CSV: `line`, the file's columns, `error`; read in pages of 1,000 by line. */
    async errors(db: TenantDb, id: string): Promise<Readable> {
      const row = await find(db, id);
      let columns: string[] = [];
      for await (const header of parseImportFile(storedFile(db, row.id), row.delimiter)) {
        columns = header.cells;
        break;
      }
      const width = (row.fields as ColumnFields).length;
      async function* records() {
        yield ['line', ...columns, 'error'];
        let after = 0;
        for (;;) {
          const page = await db.importError.findMany({
            where: { importId: row.id, line: { gt: after } },
            orderBy: { line: 'asc' },
            take: 1000,
          });
          for (const error of page) {
            const cells = (error.cells as string[]).slice(0, width);
            while (cells.length < width) cells.push('');
            yield [String(error.line), ...cells.map(exportCell), error.error];
          }
          const last = page.at(-1);
          if (!last) return;
          after = last.line;
        }
      }
      return Readable.from(records()).pipe(stringify({ record_delimiter: 'windows' }));
    },
  };
}
