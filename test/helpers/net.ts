// Network helpers for tests that start real servers: a free loopback port.
import { createServer } from 'node:net';
import { once } from 'node:events';

/** A port free on 127.0.0.1 right now (the caller binds it soon after). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
