// The change feed's SQL, bound to one workspace: the event log read in the order of the writing transactions, the
// workspace's stream tickets, and its open streams counted against the per-workspace limit.
import type pg from 'pg';
import { SYNC_HORIZON } from './sync-changes.js';

/** Where a reader of the log stands: after this event (its writing transaction, then its id). */
export interface EventPosition {
  xid: string;
  id: string;
}

/** One event as the feed hands it out. */
export interface EventRow {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  xid: string;
}

/** A stream row not refreshed for this long no longer counts (its instance died without closing it). */
export const STREAM_STALE_SECONDS = 60;

export function scopeEvents(pool: pg.Pool, organizationId: string) {
  return {
    /** The position of one of the workspace's retained events; undefined when it keeps no such event. */
    async position(id: string): Promise<EventPosition | undefined> {
      const { rows } = await pool.query<EventPosition>({
        name: 'event-position',
        text: 'SELECT changed_xid::text AS xid, id FROM crm_events WHERE organization_id = $1 AND id = $2',
        values: [organizationId, id],
      });
      return rows[0];
    },

    /** The newest handed-out position: where a stream opened without a cursor starts (new events only). */
    async newest(): Promise<EventPosition | undefined> {
      const { rows } = await pool.query<EventPosition>({
        name: 'event-newest',
        text:
          `SELECT changed_xid::text AS xid, id FROM crm_events WHERE organization_id = $1 AND changed_xid < ${SYNC_HORIZON} ` +
          'ORDER BY changed_xid DESC, id DESC LIMIT 1',
        values: [organizationId],
      });
      return rows[0];
    },

    /**
     * Up to `limit` events after `after` (from the oldest without one), in the order of their transactions, then id.
     * Only events of transactions older than every one still running: one that commits later cannot land behind a
     * position already handed out (as the incremental sync, db/sync-changes.ts).
     */
    async after(after: EventPosition | undefined, limit: number): Promise<EventRow[]> {
      const { rows } = await pool.query<EventRow>({
        name: after ? 'events-after' : 'events-first',
        text:
          'SELECT id, type::text AS type, payload, changed_xid::text AS xid FROM crm_events ' +
          `WHERE organization_id = $1 AND changed_xid < ${SYNC_HORIZON}` +
          (after ? ' AND (changed_xid, id) > ($3::xid8, $4::uuid)' : '') +
          ' ORDER BY changed_xid, id LIMIT $2',
        values: after ? [organizationId, limit, after.xid, after.id] : [organizationId, limit],
      });
      return rows;
    },

    /** Stores a ticket's hash for its holder (a membership or an API key) until `expiresAt`. */
    async storeTicket(tokenHash: string, holder: { membershipId: string | null; apiKeyId: string | null }, expiresAt: Date) {
      await pool.query({
        name: 'event-ticket-store',
        text: 'INSERT INTO event_stream_tickets (token_hash, organization_id, membership_id, api_key_id, expires_at) VALUES ($2, $1, $3, $4, $5)',
        values: [organizationId, tokenHash, holder.membershipId, holder.apiKeyId, expiresAt],
      });
    },

    /**
     * Counts the workspace's open streams and, below `limit`, records one more (its id), else null. Serialised per
     * workspace by a transaction-level advisory lock, so concurrent opens on any instance never pass the limit.
     */
    async openStream(id: string, limit: number): Promise<string | null> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended('event_streams:' || $1, 0))", [organizationId]);
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO event_streams (id, organization_id) SELECT $2, $1 WHERE (SELECT count(*) FROM event_streams ` +
            `WHERE organization_id = $1 AND seen_at > now() - make_interval(secs => $4)) < $3 RETURNING id`,
          [organizationId, id, limit, STREAM_STALE_SECONDS],
        );
        await client.query('COMMIT');
        return rows[0]?.id ?? null;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },

    /** Marks the workspace's streams open on this instance as alive. */
    async touchStreams(ids: string[]): Promise<void> {
      await pool.query({
        name: 'event-streams-touch',
        text: 'UPDATE event_streams SET seen_at = now() WHERE organization_id = $1 AND id = ANY($2::uuid[])',
        values: [organizationId, ids],
      });
    },

    async closeStream(id: string): Promise<void> {
      await pool.query({
        name: 'event-stream-close',
        text: 'DELETE FROM event_streams WHERE organization_id = $1 AND id = $2',
        values: [organizationId, id],
      });
    },
  };
}

export type TenantEvents = ReturnType<typeof scopeEvents>;
