// One LISTEN connection per instance that wakes the instance's open change streams when their workspace logs events,
// and one timer that wakes them all periodically.
import pg from 'pg';

/** The channel crm_events' insert trigger notifies, with the workspace's id as payload (migration crm_events). */
export const EVENTS_CHANNEL = 'crm_events';

/** How long after a lost connection the hub connects again. */
const RECONNECT_DELAY_MS = 1_000;
/**
 * Every stream is woken this often whatever the notifications (events held back behind a then-running transaction, a
 * lost listener): all at once from one timer, so the streams of a workspace standing at the same event share the read.
 */
export const POLL_MS = 2_000;

interface HubLog {
  warn(object: object, message: string): void;
}

/**
 * Listens on PostgreSQL itself (the session URL: LISTEN does not work through a transaction-mode pooler), connecting
 * while any stream is open. A lost connection is reopened and every stream woken, so none waits on a notification
 * sent meanwhile; the periodic wake-up covers the rest.
 */
export function createEventHub(options: { connectionString: string | undefined; log: HubLog }) {
  const listeners = new Map<string, Set<() => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let retry: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  let closed = false;

  const wake = (organizationId: string) => {
    for (const listener of listeners.get(organizationId) ?? []) listener();
  };
  const wakeAll = () => {
    for (const organizationId of listeners.keys()) wake(organizationId);
  };

  const connect = () => {
    if (client || connecting || closed || listeners.size === 0 || !options.connectionString) return;
    const next = new pg.Client({ connectionString: options.connectionString });
    const lost = (error?: Error) => {
      if (client !== next) return;
      client = null;
      next.end().catch(() => {});
      if (error) options.log.warn({ err: error }, 'change feed listener lost its connection; reconnecting');
      clearTimeout(retry);
      retry = setTimeout(connect, RECONNECT_DELAY_MS);
    };
    next.on('notification', (message) => {
      if (message.payload) wake(message.payload);
    });
    next.on('error', lost);
    next.on('end', () => lost());
    connecting = (async () => {
      try {
        await next.connect();
        await next.query(`LISTEN ${EVENTS_CHANNEL}`);
        client = next;
        wakeAll();
      } catch (error) {
        next.end().catch(() => {});
        options.log.warn({ err: error }, 'change feed listener could not connect; retrying');
        if (!closed) retry = setTimeout(connect, RECONNECT_DELAY_MS);
      } finally {
        connecting = null;
      }
    })();
  };

  return {
    /** Calls `listener` whenever the workspace logs events (and after a reconnect); answers the unsubscribe. */
    subscribe(organizationId: string, listener: () => void): () => void {
      const set = listeners.get(organizationId) ?? new Set<() => void>();
      listeners.set(organizationId, set);
      set.add(listener);
      connect();
      poll ??= setInterval(wakeAll, POLL_MS);
      return () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(organizationId);
        if (listeners.size === 0) {
          clearInterval(poll);
          poll = undefined;
        }
      };
    },
    /** Whether the hub is listening now (a stream opened while it is not still reads periodically). */
    listening: () => client !== null,
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retry);
      clearInterval(poll);
      await connecting;
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}

export type EventHub = ReturnType<typeof createEventHub>;
