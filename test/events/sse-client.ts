// A real HTTP client of a change stream: opens it on a listening server and parses its Server-Sent Events as they arrive.
import http from 'node:http';

export interface SseEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  /** Comment lines received (heartbeats). */
  comments: string[];
  /** The body of a refused request (not a stream). */
  body: string;
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  /** Waits until `count` events arrived (or throws after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
}

/** Opens `url` (a path with query) on `origin` with Accept: text/event-stream and the given headers. */
export function openStream(origin: string, path: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${origin}${path}`, { headers: { accept: 'text/event-stream', ...headers } }, (response) => {
      response.setEncoding('utf8');
      const events: SseEvent[] = [];
      const comments: string[] = [];
      let buffer = '';
      let body = '';
      let resolveEnded = () => {};
      const ended = new Promise<void>((done) => {
        resolveEnded = done;
      });
      const isStream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
      response.on('data', (chunk: string) => {
        if (!isStream) {
          body += chunk;
          return;
        }
        buffer += chunk;
        let boundary = buffer.indexOf('\n\n');
        while (boundary !== -1) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else {
              const colon = line.indexOf(':');
              if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
            }
          }
          if (fields.id !== undefined && fields.data !== undefined) {
            events.push({ id: fields.id, event: fields.event ?? 'message', data: JSON.parse(fields.data) as Record<string, unknown> });
          }
          boundary = buffer.indexOf('\n\n');
        }
      });
      response.on('end', () => resolveEnded());
      response.on('close', () => resolveEnded());
      const stream: SseStream = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        events,
        comments,
        get body() {
          return body;
        },
        ended,
        async waitFor(count, timeoutMs = 10_000) {
          const deadline = Date.now() + timeoutMs;
          while (events.length < count) {
            if (Date.now() > deadline) throw new Error(`stream got ${events.length} events of ${count}`);
            await new Promise((r) => setTimeout(r, 20));
          }
          return events.slice(0, count);
        },
        close: () => request.destroy(),
      };
      if (isStream) resolve(stream);
      else response.on('end', () => resolve(stream));
    });
    request.on('error', reject);
  });
}
