// Schemas of the records' archive state (every record type) and of the activity timeline (companies, contacts).
import { Type, type Static } from '@sinclair/typebox';
import { named, Nullable, Ref, StringEnum, Timestamp, Uuid } from '../lib/http-schemas.js';
import { PageQuerySchema } from '../lib/pagination.js';

export const ArchivedFilterSchema = StringEnum(['active', 'archived', 'all'], {
  $id: 'ArchivedFilter',
  description: 'Which records a list holds: `active` (not archived, the default), `archived`, or `all`.',
});

/** The `archived` query parameter of a CRM list. */
export const ArchivedQuery = Type.Optional(Ref(ArchivedFilterSchema, { description: 'Default `active`.' }));

/**
 * What a timeline entry records. Other record types add their kinds here (and write rows of them into
 * `crm_activities`, a text column: no migration needed).
 */
export const ACTIVITY_KINDS = [
  'created',
  'updated',
  'assigned',
  'archived',
  'restored',
  'deal_attached',
  'deal_detached',
  'task_attached',
  'task_detached',
  'note_added',
] as const;

export const ActivityKindSchema = StringEnum(ACTIVITY_KINDS, {
  $id: 'ActivityKind',
  description:
    '`created`; `updated` (`fields` names the changed fields, never their values); `assigned` (`subject_id`: the new ' +
    'assignee, null when unassigned); `archived`; `restored`; `deal_attached` / `task_attached` (a deal or task was ' +
    'created for this company or contact, or moved to it; `subject_id`: the deal or task) and `deal_detached` / ' +
    '`task_detached` (it was moved away from it, or its contact cleared); `note_added` (a note was written on the record, ' +
    "or the record added to a note's targets; `subject_id`: the note).",
});

export const ActivityActorTypeSchema = StringEnum(['user', 'api_key'], {
  $id: 'ActivityActorType',
  description: 'Who acted: a signed-in `user` or a workspace `api_key`.',
});

export const ActivitySchema = Type.Object(
  {
    id: Uuid(),
    kind: Ref(ActivityKindSchema),
    fields: Type.Array(Type.String(), { description: 'The names of the fields an `updated` entry changed; empty otherwise.' }),
    subject_id: Nullable(Uuid(), {
      description:
        'The other record the entry is about (the assignee of `assigned`, the deal or task of `*_attached` and `*_detached`), or null.',
    }),
    actor_type: Ref(ActivityActorTypeSchema),
    actor_id: Nullable(Uuid(), { description: "The user's or API key's id." }),
    actor_name: Nullable(Type.String(), { description: 'Their username or key name at the time.' }),
    created_at: Timestamp(),
  },
  { ...named('Activity'), description: 'One entry of a company or contact timeline.' },
);
export type ActivityDto = Static<typeof ActivitySchema>;

export const ActivityQuerySchema = Type.Object({ ...PageQuerySchema.properties });

/** The named components of the CRM records' shared parts, for app.addSchema (src/http/components.ts). */
export const CRM_ACTIVITY_SCHEMAS = [ArchivedFilterSchema, ActivityKindSchema, ActivityActorTypeSchema, ActivitySchema];
