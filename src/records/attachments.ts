// Timeline entries of a deal or task attached to (or detached from) a company or contact: written by the deal and
// task writes inside their own transaction, before the row itself changes, so a write that fails leaves none.
import type { TenantTx } from '../db/tenant-scope.js';
import type { ActivityActor } from '../db/tenant-writes.js';

/** Where a deal or task hangs: its company and contact (null when none, or before it exists). */
export interface Attachment {
  companyId: string | null;
  contactId: string | null;
}

export const UNATTACHED: Attachment = { companyId: null, contactId: null };

/** The company and contact a body moves the record from and to (absent fields keep the current ones). */
export function moved(
  current: { companyId: string; contactId: string | null },
  body: { company_id?: string; contact_id?: string | null },
): { before: Attachment; after: Attachment } {
  return {
    before: { companyId: current.companyId, contactId: current.contactId },
    after: {
      companyId: body.company_id ?? current.companyId,
      contactId: body.contact_id === undefined ? current.contactId : body.contact_id,
    },
  };
}

/**
 * Adds `<subject>_detached` to the timeline of each company or contact the record leaves and `<subject>_attached` to
 * each it joins (the record's id as `subject_id`), in one statement; nothing when neither changed.
 */
export async function recordAttachments(
  tx: TenantTx,
  change: { organizationId: string; actor: ActivityActor; type: 'deal' | 'task'; id: string; before: Attachment; after: Attachment },
): Promise<void> {
  const { organizationId, actor, type, id, before, after } = change;
  const entry = { organizationId, subjectId: id, actorType: actor.type, actorId: actor.id, actorName: actor.name };
  const entries = (['companyId', 'contactId'] as const).flatMap((timeline) =>
    before[timeline] === after[timeline]
      ? []
      : [
          ...(before[timeline] ? [{ ...entry, [timeline]: before[timeline], kind: `${type}_detached` }] : []),
          ...(after[timeline] ? [{ ...entry, [timeline]: after[timeline], kind: `${type}_attached` }] : []),
        ],
  );
  if (entries.length > 0) await tx.crmActivity.createMany({ data: entries });
}
