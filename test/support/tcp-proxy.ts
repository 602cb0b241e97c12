import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a shared server (the test PostgreSQL), which a test can
 * take down and bring back as if the server restarted or went silent, without touching the server
 * itself or anyone else's connections to it.
 */
export interface TcpProxy {
  port: number;
  /** Closes every connection and stops listening: clients see a restart, then connection refused. */
  down(): Promise<void>;
  /**
   * Goes silent: open connections stop carrying bytes, new ones are accepted and never answered
   * (a frozen host, a cut network path).
   */
  silent(): void;
  /** Listens again on the same port and forwards as before. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let mode: 'forward' | 'silent' = 'forward';
  const server = createServer((client) => {
    if (mode === 'silent') {
      pairs.add({ client, upstream: client });
      client.on('error', () => undefined);
      return;
    }
    const upstream = createConnection(target);
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const destroyAll = () => {
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    async down() {
      destroyAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    silent() {
      mode = 'silent';
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    async up() {
      destroyAll();
      mode = 'forward';
      if (!server.listening) {
        server.listen(port, '127.0.0.1');
        await once(server, 'listening');
      }
    },
    async close() {
      destroyAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
