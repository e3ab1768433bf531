// The change feed of a workspace: its event log as pages and as streams, the tickets that open a stream, the stream limit.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { scopeEvents, type EventPosition, type EventRow, type TenantEvents } from '../../db/event-log.js';
import { organizationPool } from '../../db/organization-setting.js';
import type { Tenant } from '../../db/tenant.js';
import { isUuid } from '../../lib/http-schemas.js';
import { ProblemError, tooManyRequests, validationFailed } from '../../lib/problem.js';
import type { EventHub } from './hub.js';
import { feedItem, startStream, type OpenStream } from './stream.js';

/** A ticket is redeemable this long after its creation. */
export const TICKET_TTL_MS = 60_000;

const cursorExpired = () =>
  new ProblemError({
    status: 410,
    code: 'cursor_expired',
    title: 'Gone',
    detail: 'The workspace keeps no such event (older than the 7 days events are kept, or unknown): read the records again.',
  });

/** The SHA-256 (hex) under which a ticket is stored; the ticket itself never is. */
export const ticketHash = (ticket: string) => createHash('sha256').update(ticket).digest('hex');

export interface EventServiceDeps {
  /** The serving role's pool on the primary: the feed's cursors and stream slots are never read from a replica. */
  pool: pg.Pool;
  hub: EventHub;
  streamsPerWorkspace: number;
  log: { warn(object: object, message: string): void };
}

export function createEventService(deps: EventServiceDeps) {
  const open = new Set<OpenStream>();
  // Reads of the instance's streams started in this turn of the event loop, by workspace and position: the streams of
  // a workspace that stand at the same event (the live ones, woken together by one notification or their settle timer)
  // share one statement instead of one each. Only within the turn: a read started before a notification may miss its
  // event, so a stream woken later never joins it.
  const reading = new Map<string, Promise<EventRow[]>>();
  const sharedReads = (organizationId: string, events: TenantEvents): TenantEvents => ({
    ...events,
    after(after, limit) {
      const key = `${organizationId}:${after ? `${after.xid}:${after.id}` : ''}:${limit}`;
      const pending = reading.get(key);
      if (pending) return pending;
      const read = events.after(after, limit);
      if (reading.size === 0) setImmediate(() => reading.clear());
      reading.set(key, read);
      return read;
    },
  });
  const eventsOf = (tenant: Tenant): TenantEvents =>
    scopeEvents(organizationPool(deps.pool, tenant.organization.id), tenant.organization.id);

  /** The position an `after` (or Last-Event-ID) names: 400 when it is no event id, 410 when the workspace keeps no such event. */
  async function positionOf(events: TenantEvents, after: string, field: string): Promise<EventPosition> {
    if (!isUuid(after)) throw validationFailed({ [field]: ['An event id (a UUID) is expected.'] }, 'Query parameters are invalid.');
    const position = await events.position(after.toLowerCase());
    if (!position) throw cursorExpired();
    return position;
  }

  return {
    /**
     * Up to `limit` events after `after` (from the oldest kept), oldest first, and the id the next page continues
     * after: the last one handed out, or `after` again when there was none (the feed never ends; poll it).
     */
    async list(tenant: Tenant, after: string | undefined, limit: number) {
      const events = eventsOf(tenant);
      const position = after === undefined ? undefined : await positionOf(events, after, 'after');
      const rows = await events.after(position, limit);
      return { items: rows.map(feedItem), next: rows.at(-1)?.id ?? after };
    },

    /** A single-use ticket for the caller (a member or an API key), valid TICKET_TTL_MS; only its hash is kept. */
    async createTicket(tenant: Tenant, holder: { membershipId: string | null; apiKeyId: string | null }) {
      const ticket = `crm_stream_${randomBytes(32).toString('base64url')}`;
      const expiresAt = new Date(Date.now() + TICKET_TTL_MS);
      await eventsOf(tenant).storeTicket(ticketHash(ticket), holder, expiresAt);
      return { ticket, expires_at: expiresAt.toISOString() };
    },

    /**
     * Opens a stream after `after` (new events only without one): 400 or 410 for a bad cursor, checked before a slot
     * is taken; 429 when the workspace holds EVENT_STREAMS_PER_WORKSPACE open streams on all instances together.
     */
    async openStream(tenant: Tenant, after: { value: string; field: string } | undefined): Promise<OpenStream> {
      const events = eventsOf(tenant);
      const start = after ? await positionOf(events, after.value, after.field) : await events.newest();
      const streamId = randomUUID();
      if (!(await events.openStream(streamId, deps.streamsPerWorkspace))) {
        throw tooManyRequests(
          'event_streams_exhausted',
          `The workspace already holds ${deps.streamsPerWorkspace} open change streams; close one first.`,
          { 'Retry-After': '60' },
        );
      }
      const stream = startStream({
        organizationId: tenant.organization.id,
        events: sharedReads(tenant.organization.id, events),
        start,
        streamId,
        hub: deps.hub,
        log: deps.log,
        onEnd: () => {
          open.delete(stream);
          events.closeStream(streamId).catch((error: unknown) => deps.log.warn({ err: error }, 'change stream slot not freed'));
        },
      });
      open.add(stream);
      return stream;
    },

    /** Ends every stream of this instance (a shutdown): their clients resume on another with Last-Event-ID. */
    async close(): Promise<void> {
      for (const stream of [...open]) stream.end();
      await deps.hub.close();
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
