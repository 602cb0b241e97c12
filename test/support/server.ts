import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../src/domain/clock.ts';
import type { Store } from '../../src/store/db.ts';
import { buildTestApp, testConfig } from './harness.ts';

/**
 * A loopback port that nothing listens on right now, for the tests whose point is a refused
 * connection (test/sdk/sdk.test.ts). Not for starting a server: between this closing the port and a
 * server opening it, another process may take it. To serve, listen on port 0 and read the port back
 * ({@link loopbackServer}, {@link listeningApp}, or PORT=0 and {@link listeningPortIn} for a process).
 */
export async function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * An HTTP server already listening on 127.0.0.1 at a port the kernel chose (port 0, so no race),
 * with no handler yet: the app, whose configuration must name its own address (BASE_URL, audiences,
 * the sandbox status lists' URIs), is built once the port is known and attached with
 * {@link LoopbackServer.serve}.
 */
export interface LoopbackServer {
  server: Server;
  port: number;
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /**
   * Hands every request to `app` (through `app.routing`, the same entry `app.inject` uses) and
   * closes the server when the app closes. Call it before the app is ready (it adds an onClose hook).
   */
  serve(app: FastifyInstance): Promise<void>;
}

export async function loopbackServer(): Promise<LoopbackServer> {
  const server = createHttpServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    server,
    port,
    origin: `http://127.0.0.1:${port}`,
    async serve(app) {
      app.addHook('onClose', async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await closed;
      });
      await app.ready();
      server.on('request', (req, res) => app.routing(req, res));
    },
  };
}

/** The real app listening on loopback, with BASE_URL and PORTAL_URL pointing at itself. */
export async function listeningApp(
  store: Store,
  clock: Clock,
  overrides: Record<string, string> = {},
): Promise<{ app: FastifyInstance; baseUrl: string }> {
  const loopback = await loopbackServer();
  const baseUrl = loopback.origin;
  const { app } = await buildTestApp(
    store,
    clock,
    testConfig({ BASE_URL: baseUrl, PORT: String(loopback.port), ...overrides }),
  );
  await loopback.serve(app);
  return { app, baseUrl };
}

/**
 * The port a service process started with PORT=0 (or METRICS_PORT=0) listens on, read from its log:
 * Fastify's "Server listening at http://127.0.0.1:PORT", or the operations listener's "Metrics,
 * /healthz and /readyz on port PORT" when `which` is 'metrics'. The last such line counts: the
 * operations listener (METRICS_PORT) starts, and logs, before the API's. Undefined until logged.
 */
export function listeningPortIn(output: string, which: 'api' | 'metrics' = 'api'): number | undefined {
  const pattern =
    which === 'api'
      ? /Server listening at http:\/\/127\.0\.0\.1:(\d+)/g
      : /Metrics, \/healthz and \/readyz on port (\d+)/g;
  const matches = [...output.matchAll(pattern)];
  return matches.length ? Number(matches[matches.length - 1][1]) : undefined;
}
