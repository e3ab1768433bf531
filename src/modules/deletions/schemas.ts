// Schemas of the deletions feed: the CRM records (companies, contacts, deals, tasks) deleted in a workspace, for
// clients that keep a copy.
import { Type, type Static } from '@sinclair/typebox';
import { PageQuerySchema } from '../../lib/pagination.js';
import { Ref, StringEnum, Uuid } from '../../lib/http-schemas.js';

export const RecordTypeSchema = StringEnum(['company', 'contact', 'deal', 'task', 'note'], {
  $id: 'RecordType',
  description: 'The kind of CRM record: `company`, `contact`, `deal`, `task` or `note`.',
});

export const DeletionSchema = Type.Object(
  {
    record_type: Ref(RecordTypeSchema),
    id: Uuid({ description: 'The deleted record.' }),
    deleted_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Deletion', title: 'Deletion', additionalProperties: false, description: 'A deleted company, contact, deal, task or note.' },
);
export type DeletionDto = Static<typeof DeletionSchema>;

export const DeletionListQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  since: Type.String({
    format: 'date-time',
    description:
      'The deletions after this instant (RFC 3339): use the time the local copy was loaded or last synchronised. ' +
      'Tombstones are kept 30 days: an older instant answers 410 `deletions_expired` (reload the list instead).',
  }),
  record_type: Type.Optional(Ref(RecordTypeSchema)),
});

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const DELETION_SCHEMAS = [RecordTypeSchema, DeletionSchema];
