import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real local HTTP receiver for webhook tests: it records every request and answers each one as
 * the test scripted it. Nothing sleeps: a delayed answer waits for a promise the test resolves, a
 * hanging one waits until close().
 */

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/hooks?x=1`. */
  path: string;
  /** Lower-cased names, as node parses them. */
  headers: IncomingHttpHeaders;
  /** Names and values exactly as sent, alternating. */
  rawHeaders: string[];
  /** The body bytes exactly as received. */
  body: Buffer;
}

/** How to answer one request. */
export type ScriptedResponse =
  | {
      kind?: 'respond';
      status?: number;
      body?: string;
      headers?: Record<string, string>;
      /** Answer only once this settles (the test decides when). */
      after?: Promise<unknown>;
    }
  | { kind: 'redirect'; location: string; status?: 301 | 302 | 303 | 307 | 308 }
  /** Never answer; the connection stays open until close(). */
  | { kind: 'hang' }
  /** Send the status line, headers and a first body chunk, then stall until close(). */
  | { kind: 'stall_body'; status?: number };

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hooks` */
  url: string;
  port: number;
  /** Every request so far, in arrival order. */
  requests: RecordedRequest[];
  /** TCP connections accepted so far (keep-alive reuses one for many requests). */
  readonly connections: number;
  /** Queue answers for the next requests, in order. */
  respondWith(...responses: ScriptedResponse[]): void;
  /** The answer once the queue is empty (initially 200 `ok`). */
  setDefaultResponse(response: ScriptedResponse): void;
  /** Resolves when at least `count` requests have been recorded. */
  waitForRequests(count: number): Promise<RecordedRequest[]>;
  /** Destroys open connections (ending hanging answers) and stops listening. */
  close(): Promise<void>;
}

/** Starts a receiver on an ephemeral port of 127.0.0.1. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const requests: RecordedRequest[] = [];
  const queue: ScriptedResponse[] = [];
  let fallback: ScriptedResponse = { status: 200, body: 'ok' };
  const waiters: Array<{ count: number; resolve: (r: RecordedRequest[]) => void }> = [];

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
      });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(requests.slice());
      }
      void answer(res, queue.shift() ?? fallback);
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    requests,
    get connections() {
      return connections;
    },
    respondWith: (...responses) => queue.push(...responses),
    setDefaultResponse: (response) => {
      fallback = response;
    },
    waitForRequests: (count) =>
      requests.length >= count
        ? Promise.resolve(requests.slice())
        : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answer(res: ServerResponse, response: ScriptedResponse): Promise<void> {
  switch (response.kind) {
    case 'hang':
      return;
    case 'stall_body':
      res.writeHead(response.status ?? 200, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('partial');
      return;
    case 'redirect':
      res.writeHead(response.status ?? 302, { location: response.location });
      res.end();
      return;
    default:
      if (response.after) await response.after.catch(() => undefined);
      if (res.destroyed) return;
      res.writeHead(response.status ?? 200, { 'content-type': 'text/plain', ...response.headers });
      res.end(response.body ?? '');
  }
}
