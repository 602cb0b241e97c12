import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Clock } from '../../src/domain/clock.ts';
import type { Store } from '../../src/store/db.ts';
import { testConfig } from './harness.ts';

/** A free loopback port (the listening app must know its own BASE_URL before it listens). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The real app listening on loopback, with BASE_URL and PORTAL_URL pointing at itself. */
export async function listeningApp(
  store: Store,
  clock: Clock,
  overrides: Record<string, string> = {},
): Promise<{ app: FastifyInstance; baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const app = await buildApp({
    store,
    clock,
    config: testConfig({ BASE_URL: baseUrl, PORT: String(port), ...overrides }),
    logger: false,
  });
  await app.listen({ port, host: '127.0.0.1' });
  return { app, baseUrl };
}
