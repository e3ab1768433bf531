// Request and response schemas of the installation administrators' API (named components, registered in app.ts).
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Nullable, StrictObject, Timestamp, Uuid } from '../../lib/http-schemas.js';
import { PageQuerySchema } from '../../lib/pagination.js';
import { READINESS_KEYS } from './readiness.js';

/** A closed set of strings as one named `{"type": "string", "enum": [...]}` component. */
const stringEnum = <const V extends readonly string[]>(values: V, $id: string, description: string) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], $id, title: $id, description });

export const ReadinessCheckKeySchema = stringEnum(
  READINESS_KEYS,
  'ReadinessCheckKey',
  'The production-readiness checks, in the order of the answer; `guidance` of each says what it verifies.',
);
export const ReadinessCheckStatusSchema = stringEnum(['pass', 'fail'] as const, 'ReadinessCheckStatus', '`pass` or `fail`.');

export const ReadinessCheckSchema = Type.Object(
  {
    key: Type.Ref(ReadinessCheckKeySchema),
    status: Type.Ref(ReadinessCheckStatusSchema),
    guidance: Type.String({ description: 'What to set, by variable name (never a value).' }),
  },
  { $id: 'ReadinessCheck', title: 'ReadinessCheck' },
);

export const ProductionReadinessSchema = Type.Object(
  {
    ready: Type.Boolean({ description: 'Every check passes.' }),
    passed: Type.Integer(),
    total: Type.Integer(),
    checks: Type.Array(Type.Ref(ReadinessCheckSchema)),
  },
  { $id: 'ProductionReadiness', title: 'ProductionReadiness' },
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
  { $id: 'SystemInformation', title: 'SystemInformation' },
);

export const AuditEntrySchema = Type.Object(
  {
    id: Uuid(),
    created_at: Timestamp(),
    actor_type: Type.String({ description: '`user`, `setup` or `system`.' }),
    actor_user_id: Nullable(Uuid()),
    actor_username: Nullable(Type.String({ description: 'The username when the entry was written.' })),
    action: Type.String({ description: 'What happened, e.g. `member.removed` (the console lists every action).' }),
    target_type: Type.String(),
    target_id: Nullable(Type.String()),
    organization_id: Nullable(Uuid()),
    client_ip: Nullable(Type.String()),
  },
  { $id: 'AuditEntry', title: 'AuditEntry' },
);
export type AuditEntryDto = Static<typeof AuditEntrySchema>;

export const AuditLogQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 150, description: 'A user id, or a username (exact, case-insensitive).' })),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'One action, e.g. `admin.signed_in`.' })),
  since: Type.Optional(Timestamp({ description: 'Only entries written at or after this instant.' })),
});

const BACKUP_STATES = ['current', 'stale', 'failed', 'unknown'] as const;
export const BackupStateSchema = stringEnum(
  BACKUP_STATES,
  'BackupState',
  'From the latest event of the kind: `failed` after a failure, `stale` when its success is older than the configured ' +
    'age, `current` otherwise, `unknown` before any event.',
);
export const BackupKindStatusSchema = Type.Object(
  {
    status: Type.Ref(BackupStateSchema),
    completed_at: Nullable(Timestamp(), { description: 'When the latest event of the kind was reported.' }),
  },
  { $id: 'BackupKindStatus', title: 'BackupKindStatus' },
);
export type BackupKindStatusDto = { status: (typeof BACKUP_STATES)[number]; completed_at: string | null };

export const BackupStatusSchema = Type.Object(
  {
    backup: Type.Ref(BackupKindStatusSchema),
    restore_test: Type.Ref(BackupKindStatusSchema),
    backup_max_age_hours: Type.Integer({ description: 'BACKUP_MAX_AGE_HOURS.' }),
    restore_test_max_age_days: Type.Integer({ description: 'RESTORE_TEST_MAX_AGE_DAYS.' }),
  },
  { $id: 'BackupStatus', title: 'BackupStatus' },
);

const BACKUP_EVENT_KINDS = ['backup', 'restore_test'] as const;
const BACKUP_EVENT_STATUSES = ['success', 'failure'] as const;
export type BackupEventKindValue = (typeof BACKUP_EVENT_KINDS)[number];
export type BackupEventStatusValue = (typeof BACKUP_EVENT_STATUSES)[number];

export const BackupEventCreateSchema = StrictObject(
  {
    kind: Type.Unsafe<BackupEventKindValue>({ type: 'string', enum: [...BACKUP_EVENT_KINDS], description: '`backup` or `restore_test`.' }),
    status: Type.Unsafe<BackupEventStatusValue>({
      type: 'string',
      enum: [...BACKUP_EVENT_STATUSES],
      description: '`success` or `failure`.',
    }),
  },
  { title: 'BackupEventCreate' },
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
];
