// Routes of CSV imports: upload (multipart, the only body besides JSON, parsed by @fastify/multipart for this plugin
// alone), progress, failed rows as CSV, and cancel.
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart, { type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { OrganizationParamsSchema, Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageOfRows, pageResponse, positionOfApiRow } from '../../lib/pagination.js';
import { sendPage } from '../../http/pagination.js';
import { requestActor, requestAudit, requireTenant } from '../../http/request.js';
import { IMPORT_FILE_LIMIT } from './import-file.js';
import { ImportCreateSchema, ImportListQuerySchema, ImportParamsSchema, ImportSchema, type ImportDto } from './schemas.js';

const documented = { tags: ['imports'] };
const base = '/imports/';
const ImportRef = Ref(ImportSchema);

/** Where a request's uploaded file was spooled, while the body carries only its digest (for Idempotency-Key). */
const uploads = new WeakMap<FastifyRequest, string>();

/**
 * Streams the file part to a temporary file (never whole in memory: the multipart size limit still applies) and
 * leaves its sha256 as the body's `file`.
 */
async function spool(this: FastifyRequest, part: MultipartFile) {
  const path = join(tmpdir(), `crm-import-${randomUUID()}.csv`);
  uploads.set(this, path);
  const digest = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      digest.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(part.file, hashing, createWriteStream(path));
  (part as MultipartFile & { value: string }).value = digest.digest('hex');
}

/** The spooled file goes once it is stored or refused; the hooks catch requests refused before the handler. */
async function unspool(request: FastifyRequest) {
  const path = uploads.get(request);
  if (path) await rm(path, { force: true });
}

interface ImportForm {
  file: string;
  kind: 'companies' | 'contacts';
  mapping?: string;
  mode?: 'create' | 'upsert';
}

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // `keyValues`: the parts become a plain body (the file as its digest) validated against `ImportCreate` like JSON bodies.
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    onFile: spool,
    limits: { fileSize: IMPORT_FILE_LIMIT, files: 1, fields: 5 },
  });
  app.addHook('onResponse', unspool);
  app.addHook('onRequestAbort', unspool);
  const imports = app.services.imports;

  app.post(
    base,
    {
      schema: {
        ...documented,
        operationId: 'createImport',
        summary: 'Import companies or contacts from a CSV file (MANAGE_CRM).',
        description:
          `\`multipart/form-data\` up to ${IMPORT_FILE_LIMIT / 1024 / 1024} MiB (the one exception to JSON bodies and their 1 MiB ` +
          'limit). The whole file is checked first: not UTF-8, not CSV, no header row, a column that is no field and not ' +
          'mapped, or no column for a required field answer 400 (`invalid_import_file`), over the limit 413, and nothing ' +
          'is stored. Then the file is stored and a job imports it in batches of 1,000 rows, each committed with its ' +
          'progress; follow it with `getImport`. A row that fails (the same field messages as the create endpoint) is ' +
          'listed by `listImportErrors` and the others go in. **No per-row automation runs**: an import dispatches no ' +
          '`company.created`/`contact.created` events, only one `import.finished` when it ends. Each record it creates ' +
          'or changes gets its timeline entries (`created`; `updated` with the changed field names, `assigned`) in its ' +
          "batch's transaction, with the import's starter (user or API key) as actor.",
        consumes: ['multipart/form-data'],
        params: OrganizationParamsSchema,
        body: Ref(ImportCreateSchema),
        response: responses({ 202: ImportRef }, 401, 403, 404, 409, 413),
      },
      config: { access: 'MANAGE_CRM', apiKeys: true, idempotent: true },
    },
    async (request, reply) => {
      const form = request.body as ImportForm;
      const tenant = requireTenant(request);
      const created = await imports
        .create(tenant.db, tenant.organization.id, {
          // A `file` sent as a plain field (not a file part) is its own small text.
          open: () => {
            const path = uploads.get(request);
            return path ? createReadStream(path) : Readable.from([Buffer.from(form.file)]);
          },
          kind: form.kind,
          mode: form.mode ?? 'create',
          ...(form.mapping !== undefined ? { mapping: form.mapping } : {}),
          actor: requestActor(request),
          audit: requestAudit(request),
        })
        // Stored (or refused): the spooled copy goes before the answer, not some time after it.
        .finally(() => unspool(request));
      reply.code(202);
      return created;
    },
  );

  app.get(
    base,
    {
      schema: {
        ...documented,
        operationId: 'listImports',
        summary: 'Imports of the workspace, newest first (VIEW_CRM).',
        params: OrganizationParamsSchema,
        querystring: ImportListQuerySchema,
        response: responses({ 200: pageResponse(ImportRef, 'Imports, newest first.') }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      const rows = await imports.list(requireTenant(request).db, page);
      return sendPage(request, reply, pageOfRows<ImportDto>(rows, page.limit, positionOfApiRow), page.limit);
    },
  );

  app.get(
    `${base}:import_id/`,
    {
      schema: {
        ...documented,
        operationId: 'getImport',
        summary: 'An import and its progress (VIEW_CRM).',
        params: ImportParamsSchema,
        response: responses({ 200: ImportRef }, 401, 403, 404),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request) => imports.get(requireTenant(request).db, request.params.import_id),
  );

  app.get(
    `${base}:import_id/errors/`,
    {
      schema: {
        ...documented,
        operationId: 'listImportErrors',
        summary: "The import's failed rows as CSV (VIEW_CRM).",
        description:
          "Columns: `line` (in the file, the header being line 1), the file's own columns, then `error` (`field: message`, " +
          "the messages the API gives for that field, `; `-separated). Cells starting with `=`, `+`, `-` or `@` get a leading `'`.",
        params: ImportParamsSchema,
        response: responses(
          {
            200: {
              description: 'The failed rows as CSV.',
              headers: { 'Content-Disposition': Type.String({ description: 'attachment; filename="import-errors.csv"' }) },
              content: { 'text/csv': { schema: Type.String({ description: 'RFC 4180 CSV with a header row.' }) } },
            },
          },
          401,
          403,
          404,
        ),
      },
      config: { access: 'VIEW_CRM', apiKeys: true },
    },
    async (request, reply) => {
      const stream = await imports.errors(requireTenant(request).db, request.params.import_id);
      return reply.type('text/csv; charset=utf-8').header('Content-Disposition', 'attachment; filename="import-errors.csv"').send(stream);
    },
  );

  app.post(
    `${base}:import_id/cancel/`,
    {
      schema: {
        ...documented,
        operationId: 'cancelImport',
        summary: 'Stop a queued or running import (MANAGE_CRM).',
        description:
          'No batch starts after this; the batches committed before stay and are counted. 409 (`import_finished`) once ' +
          'it has ended. Dispatches `import.finished`.',
        params: ImportParamsSchema,
        response: responses({ 200: ImportRef }, 401, 403, 404, 409),
      },
      config: { access: 'MANAGE_CRM', apiKeys: true },
    },
    async (request) => {
      const tenant = requireTenant(request);
      return imports.cancel(tenant.db, tenant.organization.id, request.params.import_id);
    },
  );
};
