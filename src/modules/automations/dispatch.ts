// Dispatches a CRM event to the organization's active automation rules by queueing their runs in the caller's transaction.
import { Prisma } from '../../generated/prisma/client.js';
import type { AutomationTrigger } from '../../generated/prisma/enums.js';
import { WAKE_RUNS_SQL } from '../../jobs/automation-runs.js';

import type { CrmEventName } from '../../lib/crm-events.js';

export type { CrmEventName };

/** The event JSON: a run's `payload`, and the body a webhook receives. */
export interface EventPayload {
  event: CrmEventName;
  organization_id: string;
  /** The record after the change, as the API returns it. */
  data: Record<string, unknown>;
  occurred_at: string;
  /** Present (true) only on runs started through the test endpoint. */
  test?: boolean;
}

/** The database enum spells `company.created` as `company_created`. */
export const eventNameOf = (trigger: AutomationTrigger): CrmEventName => trigger.replace('_', '.') as CrmEventName;
export const triggerOf = (name: CrmEventName): AutomationTrigger => name.replace('.', '_') as AutomationTrigger;

/**
 * Call inside the transaction of the CRM write: records the event in the log (crm_events, whether or not a rule
 * matches it) and queues one run of it per active rule of the organization for this trigger, so the event and its
 * runs exist exactly when the change commits (and the run dispatchers are woken then). Never executes an action itself
 * (a dispatcher does), so a failing action can neither fail nor slow the write. One statement, served by the (organization_id,
 * trigger, is_active) index, whatever the number of rules.
 */
export async function dispatchEvent(
  // Only raw SQL is used, so the tenant-scoped transaction client (TenantTx) fits as well as the plain one.
  tx: Pick<Prisma.TransactionClient, '$executeRaw'>,
  event: { organizationId: string; name: CrmEventName; data: Record<string, unknown> },
): Promise<void> {
  const payload: EventPayload = {
    event: event.name,
    organization_id: event.organizationId,
    data: event.data,
    occurred_at: new Date().toISOString(),
  };
  // `automation_trigger` stores the dotted name (the Prisma enum maps it), hence the cast of the event name itself.
  await tx.$executeRaw`
    WITH event AS (
      INSERT INTO crm_events (organization_id, type, payload)
      VALUES (${event.organizationId}::uuid, ${event.name}::automation_trigger, ${JSON.stringify(payload)}::jsonb)
      RETURNING id, type, payload
    ), runs AS (
      INSERT INTO automation_runs (id, organization_id, automation_id, event_id, trigger, payload)
      SELECT crm_new_id(), a.organization_id, a.id, event.id, a.trigger, event.payload
      FROM automations a CROSS JOIN event
      WHERE a.organization_id = ${event.organizationId}::uuid
        AND a.trigger = event.type
        AND a.is_active
      RETURNING id
    )
    SELECT ${Prisma.raw(WAKE_RUNS_SQL)}`;
}
