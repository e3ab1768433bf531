// The change feed's hourly cleanup job: events past their retention, tickets past their minute, streams of dead instances.
import { parseCronItems, type ParsedCronItem, type TaskList } from 'graphile-worker';
import type { Db } from '../../db/client.js';
import { STREAM_STALE_SECONDS } from '../../db/event-log.js';

/** Events are kept at least this long (the contract's 7 days); the feed's 410 `cursor_expired` says so. */
export const EVENT_RETENTION_DAYS = 7;

export const EVENTS_PURGE_TASK = 'crm_events_purge';

/**
 * Deletes, across workspaces, what the feed no longer keeps. Installation-wide work, hence the owner's client (which
 * row-level security does not bind), like the console's reads; it runs on one instance per hour (graphile-worker's
 * cron, which also catches up on a missed hour).
 */
export async function purgeEvents(db: Db): Promise<void> {
  await db.$executeRaw`DELETE FROM crm_events WHERE created_at < now() - make_interval(days => ${EVENT_RETENTION_DAYS})`;
  await db.$executeRaw`DELETE FROM event_stream_tickets WHERE expires_at < now()`;
  await db.$executeRaw`DELETE FROM event_streams WHERE seen_at < now() - make_interval(secs => ${STREAM_STALE_SECONDS})`;
}

export const eventTasks = (deps: { db: Db }): TaskList => ({
  [EVENTS_PURGE_TASK]: () => purgeEvents(deps.db),
});

/** Every hour, at minute 17; a run missed within the last hour (all instances down) is run when one starts. */
export const EVENT_CRON_ITEMS: ParsedCronItem[] = parseCronItems([
  { task: EVENTS_PURGE_TASK, match: '17 * * * *', identifier: EVENTS_PURGE_TASK, options: { backfillPeriod: 3_600_000 } },
]);
