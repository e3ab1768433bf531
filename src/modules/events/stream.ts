// One open change stream: Server-Sent Events of a workspace's log after a position, woken by the hub, with heartbeats.
import { PassThrough } from 'node:stream';
import type { EventPosition, EventRow, TenantEvents } from '../../db/event-log.js';
import type { EventHub } from './hub.js';

/** Events read per statement; a full batch is followed by the next at once. */
const BATCH = 200;
/** A comment line this often keeps proxies and browsers from closing an idle stream (the contract asks ≤ 15 s). */
export const HEARTBEAT_MS = 10_000;
/** A second read this soon after a notification: its events may have waited for an older transaction to end. */
const SETTLE_MS = 200;
/** How often the stream's row is marked alive (well within STREAM_STALE_SECONDS). */
const TOUCH_MS = 20_000;

interface StreamLog {
  warn(object: object, message: string): void;
}

/** The feed's item: the event JSON (as a webhook receives it) with the event's id. */
export const feedItem = (row: EventRow) => ({ id: row.id, ...row.payload });

/** Frames already written, by row: the streams of a workspace that share a read (service.ts) serialize each event once. */
const frames = new WeakMap<EventRow, string>();

/** An event as Server-Sent Events: its id (what Last-Event-ID resumes after), its type, its item as data. */
function frame(row: EventRow): string {
  let text = frames.get(row);
  if (text === undefined) {
    text = `id: ${row.id}\nevent: ${row.type}\ndata: ${JSON.stringify(feedItem(row))}\n\n`;
    frames.set(row, text);
  }
  return text;
}

export interface OpenStream {
  body: PassThrough;
  /** Ends the stream (a shutdown: the client resumes elsewhere with Last-Event-ID). */
  end(): void;
}

/**
 * Starts streaming the workspace's events after `start` (every event logged from now on without one) into the body,
 * until the client goes away or `end` is called; then `onEnd` (which frees the stream's slot) runs once.
 */
export function startStream(options: {
  organizationId: string;
  events: TenantEvents;
  start: EventPosition | undefined;
  streamId: string;
  hub: EventHub;
  log: StreamLog;
  onEnd: () => void;
}): OpenStream {
  const { events, hub, log } = options;
  const body = new PassThrough();
  let cursor = options.start;
  let reading = false;
  let again = false;
  let ended = false;
  const timers: NodeJS.Timeout[] = [];

  const end = () => {
    if (ended) return;
    ended = true;
    for (const timer of timers) clearInterval(timer);
    clearTimeout(settle);
    unsubscribe();
    body.end();
    options.onEnd();
  };

  /** Reads and writes everything after the cursor; a wake-up during a read makes it read once more. */
  const pump = async (): Promise<void> => {
    if (ended) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        let rows: EventRow[];
        do {
          rows = await events.after(cursor, BATCH);
          if (ended) return;
          if (rows.length > 0) {
            body.write(rows.map(frame).join(''));
            const last = rows[rows.length - 1] as EventRow;
            cursor = { xid: last.xid, id: last.id };
          }
        } while (rows.length === BATCH);
      } while (again);
    } catch (error) {
      // The client reconnects with Last-Event-ID and loses nothing: what was written was written in order.
      log.warn({ err: error }, 'change stream read failed; closing it');
      end();
    } finally {
      reading = false;
    }
  };

  let settle: NodeJS.Timeout | undefined;
  const unsubscribe = hub.subscribe(options.organizationId, () => {
    void pump();
    clearTimeout(settle);
    settle = setTimeout(() => void pump(), SETTLE_MS);
  });
  timers.push(
    setInterval(() => body.write(': keep-alive\n\n'), HEARTBEAT_MS),
    setInterval(() => {
      events.touchStreams([options.streamId]).catch((error: unknown) => log.warn({ err: error }, 'change stream touch failed'));
    }, TOUCH_MS),
  );
  body.on('close', end);
  body.on('error', end);
  // Reconnect after 1 s when the connection drops; the comment flushes the headers to the client at once.
  body.write('retry: 1000\n: stream open\n\n');
  void pump();
  return { body, end };
}
