// A TCP forwarder on a fixed local port, so a server under test keeps one DATABASE_URL while PostgreSQL restarts on another port.
import { createConnection, createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import type { Test } from 'tap';

export interface Forwarder {
  port: number;
  /** Where new connections go from now on. */
  setTarget(port: number): void;
}

export async function startForwarder(t: Test, targetPort: number): Promise<Forwarder> {
  let target = targetPort;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: target });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // Either side failing ends both: the client sees what a dropped database connection looks like.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    port: (server.address() as { port: number }).port,
    setTarget: (port) => {
      target = port;
    },
  };
}
