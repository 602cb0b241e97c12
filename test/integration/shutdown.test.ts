import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { listeningPortIn } from '../support/server.ts';
import { serviceArgs } from '../support/service-process.ts';

/**
 * Issue 10, SIGTERM in the `all` role reset in-flight connections. A real process
 * (`node --import tsx src/main.ts`, ROLE=all) gets SIGTERM while a request's body is still
 * arriving: that request gets its complete answer (with Connection: close, so the process need not
 * wait out the keep-alive timeout), a request that starts afterwards on a connection still open
 * gets the 503 envelope, and the process exits 0.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Reads one HTTP/1.1 response with a Content-Length from everything a socket received. */
function parseResponse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response head in ${JSON.stringify(raw)}`);
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = raw.slice(end + 4);
  assert.equal(Buffer.byteLength(body), Number(headers['content-length']), `truncated body: ${raw}`);
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** A socket to the server, and everything it received until it closed (rejects on a reset). */
async function openSocket(port: number): Promise<{ socket: Socket; received: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
  const received = new Promise<string>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve(data));
  });
  received.catch(() => undefined);
  return { socket, received };
}

forEachDialect('Graceful stop', (dialect) => {
  let db: TestStore;
  before(async () => {
    db = await createTestStore(dialect);
  });
  after(() => db?.drop());

  test(
    'SIGTERM in the all role: in-flight request completes, a new one gets 503, exit 0',
    { timeout: 90_000 },
    async () => {
      // PORT=0: the kernel picks the port, read back from the log once it listens.
      const child = spawn(process.execPath, serviceArgs(), {
        cwd: ROOT,
        env: {
          ...process.env,
          ROLE: 'all',
          DATABASE_URL: db.url,
          PORT: '0',
          HOST: '127.0.0.1',
          // debug: the server logs a request as soon as it has begun it ('request received').
          LOG_LEVEL: 'debug',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const waiters: Array<{ text: string; resolve: () => void }> = [];
      const onOutput = (chunk: Buffer) => {
        output += chunk.toString();
        for (const w of waiters.filter((w) => output.includes(w.text))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      };
      child.stdout.on('data', onOutput);
      child.stderr.on('data', onOutput);
      const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
      const logged = (text: string) =>
        output.includes(text)
          ? Promise.resolve()
          : Promise.race([
              new Promise<void>((resolve) => waiters.push({ text, resolve })),
              exited.then(([code]) => {
                throw new Error(`exited (${code}) before logging ${JSON.stringify(text)}:\n${output}`);
              }),
            ]);
      try {
        await logged('Matricula is listening');
        const port: number = listeningPortIn(output) ?? assert.fail(output);

        // B: a request whose head is still arriving when the server stops (its connection is not idle).
        const b = await openSocket(port);
        b.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        // A: a request whose body is still arriving; the server has begun it once it logs it.
        const a = await openSocket(port);
        const body = JSON.stringify({ nonce: 'nonce_shutdown', decision: 'approved' });
        a.socket.write(
          'POST /verification/v1/sessions/sess_shutdown/consent HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        // Only A's head is complete, so the one 'request received' line is A's.
        await logged('"msg":"request received"');

        child.kill('SIGTERM');
        await logged('"msg":"stopping"');
        a.socket.write(body.slice(5));
        b.socket.write('\r\n');

        const inFlight = parseResponse(await a.received);
        assert.equal(inFlight.status, 404, inFlight.body);
        assert.equal(JSON.parse(inFlight.body).error.code, 'not_found');
        assert.equal(inFlight.headers.connection, 'close');

        const late = parseResponse(await b.received);
        assert.equal(late.status, 503, late.body);
        const error = JSON.parse(late.body).error;
        assert.equal(error.code, 'service_unavailable');
        assert.equal(error.requestId, late.headers['x-request-id']);
        assert.equal(late.headers.connection, 'close');

        const [code] = await exited;
        assert.equal(code, 0, output);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  );
});
