// Request and response schemas of the installation administrators' API (named components, registered in app.ts).
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { named, Nullable, Ref, StrictObject, Timestamp, Uuid, StringEnum } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { READINESS_KEYS } from './readiness.js';

export const ReadinessCheckKeySchema = StringEnum(READINESS_KEYS, {
  $id: 'ReadinessCheckKey',
  description: 'The production-readiness checks, in the order of the answer; `guidance` of each says what it verifies.',
});
export const ReadinessCheckStatusSchema = StringEnum(['pass', 'fail'], { $id: 'ReadinessCheckStatus', description: '`pass` or `fail`.' });

export const ReadinessCheckSchema = Type.Object(
  {
    key: Ref(ReadinessCheckKeySchema),
    status: Ref(ReadinessCheckStatusSchema),
    guidance: Type.String({ description: 'What to set, by variable name (never a value).' }),
  },
  named('ReadinessCheck'),
);

export const ProductionReadinessSchema = Type.Object(
  {
    ready: Type.Boolean({ description: 'Every check passes.' }),
    passed: Type.Integer(),
    total: Type.Integer(),
    checks: Type.Array(Ref(ReadinessCheckSchema)),
  },
  named('ProductionReadiness'),
);

export const SystemInformationSchema = Type.Object(
  {
    version: Type.String({ description: 'The service version (package.json).' }),
    commit: Nullable(Type.String(), { description: 'The git commit it runs from, when it runs from a checkout.' }),
    node_version: Type.String(),
    postgresql_version: Type.String(),
    uptime_seconds: Type.Integer({ description: 'Of the process that answered.' }),
    process_count: Type.Integer({ description: 'Server processes of this instance (WEB_CONCURRENCY).' }),
    database_size_bytes: Type.Integer(),
    counts: Type.Object({
      users: Type.Integer(),
      workspaces: Type.Integer(),
      companies: Type.Integer(),
      contacts: Type.Integer(),
      queued_jobs: Type.Integer({ description: 'Background jobs waiting or retrying.' }),
      failed_jobs: Type.Integer({ description: 'Background jobs that used up their attempts.' }),
    }),
  },
  named('SystemInformation'),
);

export const AuditEntrySchema = Type.Object(
  {
    id: Uuid(),
    created_at: Timestamp(),
    actor_type: Type.String({
      description: '`user`, `api_key` (a workspace API key: never recorded as the user who created it), `setup` or `system`.',
    }),
    actor_user_id: Nullable(Uuid()),
    actor_username: Nullable(Type.String({ description: 'The username when the entry was written.' })),
    actor_api_key_id: Nullable(Uuid({ description: 'The workspace API key of an `api_key` actor.' })),
    actor_api_key_name: Nullable(Type.String({ description: "The key's name when the entry was written." })),
    actor_api_key_prefix: Nullable(
      Type.String({ description: "The key's display prefix (its first characters, never the secret), e.g. `crm_live_AbC12dEf`." }),
    ),
    action: Type.String({ description: 'What happened, e.g. `member.removed` (the console lists every action).' }),
    target_type: Type.String(),
    target_id: Nullable(
      Type.String({
        description:
          "What the action was done to. A workspace's CRM record (target_type `automation` or `import`) is named only " +
          'to members of that workspace; otherwise null (installation answers name workspaces, never their records).',
      }),
    ),
    organization_id: Nullable(Uuid()),
    client_ip: Nullable(Type.String()),
  },
  named('AuditEntry'),
);
export type AuditEntryDto = Static<typeof AuditEntrySchema>;

export const AuditLogQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  actor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 150,
      description: 'A user id or API key id, or a username (exact, case-insensitive).',
    }),
  ),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'One action, e.g. `admin.signed_in`.' })),
  since: Type.Optional(Timestamp({ description: 'Only entries written at or after this instant.' })),
});

const BACKUP_STATES = ['current', 'stale', 'failed', 'unknown'] as const;
export const BackupStateSchema = StringEnum(BACKUP_STATES, {
  $id: 'BackupState',
  description:
    'From the latest event of the kind: `failed` after a failure, `stale` when its success is older than the configured ' +
    'age, `current` otherwise, `unknown` before any event.',
});
export const BackupKindStatusSchema = Type.Object(
  {
    status: Ref(BackupStateSchema),
    completed_at: Nullable(Timestamp(), { description: 'When the latest event of the kind was reported.' }),
  },
  named('BackupKindStatus'),
);
export type BackupKindStatusDto = { status: (typeof BACKUP_STATES)[number]; completed_at: string | null };

export const BackupStatusSchema = Type.Object(
  {
    backup: Ref(BackupKindStatusSchema),
    restore_test: Ref(BackupKindStatusSchema),
    backup_max_age_hours: Type.Integer({ description: 'BACKUP_MAX_AGE_HOURS.' }),
    restore_test_max_age_days: Type.Integer({ description: 'RESTORE_TEST_MAX_AGE_DAYS.' }),
  },
  named('BackupStatus'),
);

const BACKUP_EVENT_KINDS = ['backup', 'restore_test'] as const;
const BACKUP_EVENT_STATUSES = ['success', 'failure'] as const;
export type BackupEventKindValue = (typeof BACKUP_EVENT_KINDS)[number];
export type BackupEventStatusValue = (typeof BACKUP_EVENT_STATUSES)[number];

const BackupEventKindSchema = StringEnum(BACKUP_EVENT_KINDS, {
  $id: 'BackupEventKind',
  description: 'What ran: `backup` (a backup was taken) or `restore_test` (a backup was restored and verified).',
});
const BackupEventStatusSchema = StringEnum(BACKUP_EVENT_STATUSES, { $id: 'BackupEventStatus', description: '`success` or `failure`.' });

export const BackupEventCreateSchema = StrictObject(
  { kind: Ref(BackupEventKindSchema), status: Ref(BackupEventStatusSchema) },
  named('BackupEventCreate'),
);

/** Every named schema of this area, for app.addSchema (dependencies first). */
export const INSTALLATION_SCHEMAS: TSchema[] = [
  ReadinessCheckKeySchema,
  ReadinessCheckStatusSchema,
  ReadinessCheckSchema,
  ProductionReadinessSchema,
  SystemInformationSchema,
  AuditEntrySchema,
  BackupStateSchema,
  BackupKindStatusSchema,
  BackupStatusSchema,
  BackupEventKindSchema,
  BackupEventStatusSchema,
  BackupEventCreateSchema,
];
