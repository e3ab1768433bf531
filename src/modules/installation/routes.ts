// Routes of the installation administrators' API (registered in the `installation` context: admins only).
import { Readable } from 'node:stream';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requestTransport, requireUser, userAudit } from '../../http/request.js';
import { sendPage } from '../../http/pagination.js';
import { Ref, responses } from '../../lib/http-schemas.js';
import { pageOf, pageOfRows, pageResponse, positionOfApiRow } from '../../lib/pagination.js';
import {
  AuditEntrySchema,
  AuditLogQuerySchema,
  BackupEventCreateSchema,
  BackupStatusSchema,
  ProductionReadinessSchema,
  SystemInformationSchema,
} from './schemas.js';

const tags = ['installation'];

export const installationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const installation = app.services.installation;

  app.get(
    '/installation/production-readiness/',
    {
      schema: {
        tags,
        operationId: 'getProductionReadiness',
        summary: 'Whether this installation is configured for production, check by check (installation administrators).',
        description:
          'Twelve checks in a fixed order, each `pass` or `fail` with guidance naming the variable to set; no value of ' +
          'any variable is ever part of the answer. `served_over_https` and `trust_proxy` are judged from the request ' +
          'that asks: call it through the same proxy as clients do.',
        response: responses({ 200: Ref(ProductionReadinessSchema) }),
      },
    },
    async (request) => installation.readiness(requestTransport(request, app.config.trustProxy)),
  );

  app.get(
    '/installation/system-information/',
    {
      schema: {
        tags,
        operationId: 'getSystemInformation',
        summary: 'Versions, uptime, database size and installation-wide counts (installation administrators).',
        response: responses({ 200: Ref(SystemInformationSchema) }),
      },
    },
    async () => installation.systemInformation(),
  );

  app.get(
    '/installation/audit-log/',
    {
      schema: {
        tags,
        operationId: 'listAuditLog',
        summary: 'The audit log, newest first (installation administrators).',
        description: 'The same entries as the console\'s audit page; filters combine. Keyset pages (`Link: rel="next"`).',
        querystring: AuditLogQuerySchema,
        response: responses({ 200: pageResponse(Ref(AuditEntrySchema), 'Audit entries, newest first.') }),
      },
    },
    async (request, reply) => {
      const page = pageOf(request.query);
      const { actor, action, since } = request.query;
      const rows = await installation.auditLog(requireUser(request), { actor, action, since }, page);
      return sendPage(request, reply, pageOfRows(rows, page.limit, positionOfApiRow), page.limit);
    },
  );

  app.get(
    '/installation/backup-status/',
    {
      schema: {
        tags,
        operationId: 'getBackupStatus',
        summary: 'The last backup and the last restore test, each judged against its configured age.',
        description:
          'Each kind is `failed` when its latest event is a failure, `stale` when its latest success is older than ' +
          '`BACKUP_MAX_AGE_HOURS` (backups) or `RESTORE_TEST_MAX_AGE_DAYS` (restore tests), `current` otherwise, and ' +
          '`unknown` before any event. `make backup` and `make restore-test` record their outcome themselves.',
        response: responses({ 200: Ref(BackupStatusSchema) }),
      },
    },
    async () => installation.backupStatus(),
  );

  app.post(
    '/installation/backup-status/events/',
    {
      schema: {
        tags,
        operationId: 'recordBackupEvent',
        summary: "Record the outcome of a backup or restore test (an operator's backup script).",
        description: 'Answers the backup status with the event counted. Written to the audit log.',
        body: Ref(BackupEventCreateSchema),
        response: responses({ 201: Ref(BackupStatusSchema) }),
      },
    },
    async (request, reply) => {
      const user = requireUser(request);
      // Type.Unsafe enums inside a body leave the type provider's inference at unknown; the validator checked it.
      const { kind, status: outcome } = request.body as Static<typeof BackupEventCreateSchema>;
      const status = await installation.recordBackupEvent(kind, outcome, user.username, userAudit(request));
      reply.code(201);
      return status;
    },
  );

  app.get(
    '/installation/data-export/',
    {
      schema: {
        tags,
        operationId: 'exportInstallationData',
        summary: "The installation's records as JSON lines, streamed (installation administrators).",
        description:
          'One JSON object a line, `{"type": …, "data": …}`: first `export`, then `installation_settings`, `user`, ' +
          '`workspace`, `membership`, `invitation` (its state, never its token), `installation_admin_invitation`, ' +
          '`audit_entry`, `backup_event`, then the CRM records (`company` and `contact`, archived ones included, ' +
          '`automation`, `deal`, `task`, `note`, each in its API shape with its `workspace_id`) of the workspaces **the caller ' +
          'is a member of** only: an installation administrator sees no ' +
          "other workspace's data (a copy of every tenant is what backups are for); last `end`, whose absence means a " +
          'cut-off download. Password hashes, tokens, stored SMTP passwords and webhook secrets are never part of it. ' +
          'The export is written to the audit log.',
        response: {
          ...responses({}),
          200: {
            description: 'JSON lines (`application/x-ndjson`), streamed.',
            content: { 'application/x-ndjson': { schema: Type.String() } },
          },
        },
      },
    },
    async (request, reply) => {
      const lines = installation.exportData(requireUser(request), userAudit(request));
      const stamp = new Date().toISOString().slice(0, 10);
      reply
        .type('application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="installation-export-${stamp}.jsonl"`);
      return reply.send(Readable.from(lines) as never);
    },
  );
};
