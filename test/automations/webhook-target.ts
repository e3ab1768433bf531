// A local HTTP server the automation tests point webhooks at: records each request and answers a scripted status.
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body exactly as received (what the signature covers). */
  body: string;
}

export interface WebhookTarget {
  url: string;
  requests: ReceivedRequest[];
  /** Statuses for the next requests, in order (0: never answer); afterwards (and by default) 200. */
  respondWith: number[];
  /** Extra headers on every answer (e.g. `location` for a redirect). */
  headers: Record<string, string>;
  /** Resolves once `count` requests arrived in total. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

export async function startWebhookTarget(t: Test): Promise<WebhookTarget> {
  const waiters = new Set<() => void>();
  const target: WebhookTarget = {
    url: '',
    requests: [],
    respondWith: [],
    headers: {},
    waitForRequests(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (target.requests.length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(target.requests);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${count} webhook requests within ${timeoutMs} ms, got ${target.requests.length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      target.requests.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const status = target.respondWith.shift() ?? 200;
      if (status !== 0) response.writeHead(status, target.headers).end('ok');
      for (const wake of waiters) wake();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  target.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return target;
}

/** A URL on a local port nothing listens on (bound, then released): connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}
