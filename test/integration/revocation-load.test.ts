import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { systemClock, TestClock } from '../../src/domain/clock.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { listeningApp, listeningPortIn } from '../support/server.ts';
import { serviceArgs } from '../support/service-process.ts';

/**
 * The revocation guarantee under load: clients keep requests in flight against two processes over
 * one database (this one, and `src/main.ts --role api` beside it), the key is revoked through the
 * first, and every request that starts after DELETE /org/v1/keys/{id} returned is refused, by both
 * processes, on every hot path (the session read with the key in one query, the session insert,
 * a plain authenticated read). Requests in flight at the moment of revocation may go either way.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLIENTS_PER_SERVER = 6;
/** Successful requests before the revocation, and requests per client started after it returned. */
const BEFORE = 120;
const AFTER_PER_CLIENT = 8;

interface Outcome {
  server: string;
  path: string;
  startedAt: number;
  endedAt: number;
  status: number;
  code?: string;
}

/** `src/main.ts --role api` over the same database, resolved once it logged that it listens. */
async function spawnApiProcess(databaseUrl: string): Promise<{ child: ChildProcess; baseUrl: string }> {
  // PORT=0: the kernel picks the port, read back from the log (nothing here depends on BASE_URL).
  const child = spawn(process.execPath, serviceArgs('--role', 'api'), {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Matricula is listening')) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`the api process exited (${code}):\n${output}`)));
  });
  const port = listeningPortIn(output);
  if (port === undefined) throw new Error(`the api process did not log its port:\n${output}`);
  return { child, baseUrl: `http://127.0.0.1:${port}` };
}

forEachDialect('revocation under load, two processes', (dialect) => {
  let db: TestStore;
  let inProcess: FastifyInstance;
  let other: ChildProcess;
  const servers: Record<string, string> = {};
  before(async () => {
    db = await createTestStore(dialect);
    const listening = await listeningApp(db.store, new TestClock());
    inProcess = listening.app;
    servers.here = listening.baseUrl;
    const spawned = await spawnApiProcess(db.url);
    other = spawned.child;
    servers.other = spawned.baseUrl;
  });
  after(async () => {
    if (other.exitCode === null) {
      other.kill('SIGTERM');
      await once(other, 'exit');
    }
    await inProcess.close();
    await db.drop();
  });

  test('every request that starts after DELETE returned is refused, by both processes', async () => {
    const tenant = await createOrganization(
      { db: db.store.db, clock: systemClock },
      { name: 'Revocation', environment: 'sandbox' },
    );
    const admin = { authorization: `Bearer ${tenant.apiKey.rawSecret}`, 'content-type': 'application/json' };
    const generated = await fetch(`${servers.here}/org/v1/keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ appId: tenant.application.id, name: 'under load', environment: 'sandbox' }),
    });
    assert.equal(generated.status, 201);
    const key = (await generated.json()) as { data: { id: string; rawSecret: string } };
    const auth = { authorization: `Bearer ${key.data.rawSecret}`, 'content-type': 'application/json' };
    const createBody = JSON.stringify({
      appId: tenant.application.id,
      purpose: 'Load',
      requiredClaims: ['is_active_student'],
    });
    const created = await fetch(`${servers.here}/verification/v1/sessions`, {
      method: 'POST',
      headers: auth,
      body: createBody,
    });
    assert.equal(created.status, 201);
    const sessionId = ((await created.json()) as { data: { sessionId: string } }).data.sessionId;
    const requests = [
      { method: 'GET', path: `/verification/v1/sessions/${sessionId}` },
      { method: 'POST', path: '/verification/v1/sessions', body: createBody },
      { method: 'GET', path: '/org/v1/apps' },
    ];

    const outcomes: Outcome[] = [];
    let revokedAt: number | undefined;
    let succeeded = 0;
    let startRevocation!: () => void;
    const revocationDue = new Promise<void>((resolve) => (startRevocation = resolve));

    async function client(server: string, offset: number): Promise<void> {
      let startedAfter = 0;
      for (let i = offset; startedAfter < AFTER_PER_CLIENT; i++) {
        const request = requests[i % requests.length];
        const startedAt = performance.now();
        const startedAfterRevocation = revokedAt !== undefined;
        const res = await fetch(`${servers[server]}${request.path}`, {
          method: request.method,
          headers: request.body ? auth : { authorization: auth.authorization },
          body: request.body,
        });
        const body = (await res.json()) as { error?: { code: string } };
        outcomes.push({
          server,
          path: request.path,
          startedAt,
          endedAt: performance.now(),
          status: res.status,
          code: body.error?.code,
        });
        if (res.status < 300 && ++succeeded === BEFORE) startRevocation();
        if (startedAfterRevocation) startedAfter++;
      }
    }

    async function revokeMidLoad(): Promise<void> {
      await revocationDue;
      const res = await fetch(`${servers.here}/org/v1/keys/${key.data.id}`, {
        method: 'DELETE',
        headers: { authorization: admin.authorization },
      });
      revokedAt = performance.now();
      assert.equal(res.status, 200);
    }

    await Promise.all([
      revokeMidLoad(),
      ...Object.keys(servers).flatMap((server) =>
        Array.from({ length: CLIENTS_PER_SERVER }, (_, n) => client(server, n)),
      ),
    ]);

    assert.ok(revokedAt !== undefined);
    const startedAfter = outcomes.filter((o) => o.startedAt > revokedAt!);
    const wrongly = startedAfter.filter((o) => o.status !== 401 || o.code !== 'key_revoked');
    assert.deepEqual(wrongly, [], 'a request started after the revocation returned was not refused');
    for (const server of Object.keys(servers)) {
      assert.ok(
        startedAfter.filter((o) => o.server === server).length >= CLIENTS_PER_SERVER * AFTER_PER_CLIENT,
        `${server}: requests after the revocation`,
      );
      for (const request of requests)
        assert.ok(
          outcomes.some((o) => o.server === server && o.path === request.path && o.status < 300),
          `${server} served ${request.method} ${request.path} before the revocation`,
        );
    }
    const inFlight = outcomes.filter((o) => o.startedAt < revokedAt! && o.endedAt > revokedAt!);
    assert.ok(inFlight.length > 0, 'requests were in flight while the key was revoked');
    assert.deepEqual(
      outcomes.filter((o) => o.status >= 500),
      [],
      'no request failed',
    );
  });
});
