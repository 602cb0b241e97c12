import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Matricula, MatriculaError } from '../packages/sdk/src/index.ts';
import { TestClock } from '../src/domain/clock.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { seedSandboxIssuers } from '../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from './support/harness.ts';
import { listeningApp } from './support/server.ts';

/**
 * The SDK (packages/sdk) against the real app listening on loopback, on both databases: no mocks.
 * Retries are checked through a proxy the test starts, which answers 503/429 before passing
 * requests on.
 */

/** A loopback proxy to `target` that answers the first `failures` requests with `status`. */
async function flakyProxy(target: string, failures: number, status: number) {
  const seen: IncomingHttpHeaders[] = [];
  let left = failures;
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (left > 0) {
        left--;
        res.writeHead(status, { 'retry-after': '0', 'content-type': 'application/json' });
        res.end('{"success":false}');
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name)),
      ) as Record<string, string>;
      fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      })
        .then(async (answer) => {
          res.writeHead(answer.status, Object.fromEntries(answer.headers));
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((r) => server.close(r)) };
}

forEachDialect('SDK against a real server', (dialect) => {
  let db: TestStore;
  let server: FastifyInstance;
  let baseUrl: string;
  let matricula: Matricula;
  let appId: string;
  let secret: string;

  before(async () => {
    db = await createTestStore(dialect);
    const clock = new TestClock();
    await seedSandboxIssuers(db.store.db, clock);
    ({ app: server, baseUrl } = await listeningApp(db.store, clock));
    const created = await createOrganization({ db: db.store.db, clock }, { name: 'SDK org', environment: 'sandbox' });
    appId = created.application.id;
    secret = created.apiKey.rawSecret;
    matricula = new Matricula({ apiKey: secret, baseUrl });
  });

  after(async () => {
    await server?.close();
    await db?.drop();
  });

  test('sessions: create, retrieve, list across pages, cancel; result only once completed', async () => {
    const created = await matricula.sessions.create({
      appId,
      purpose: 'SDK test',
      requiredClaims: ['is_active_student'],
    });
    assert.equal(created.status, 'pending');
    assert.match(created.sessionId, /^sess_/);
    const session = await matricula.sessions.retrieve(created.sessionId);
    assert.equal(session.status, 'pending');
    assert.equal('result' in session, false);

    for (let i = 0; i < 2; i++)
      await matricula.sessions.create({ appId, purpose: `SDK page ${i}`, requiredClaims: ['is_active_student'] });
    const ids: string[] = [];
    for await (const s of matricula.sessions.list({ appId, limit: 1 })) ids.push(s.sessionId);
    assert.equal(ids.length, 3, 'three pages of one, followed by the cursor');
    assert.equal(new Set(ids).size, 3);
    const firstTwo = await matricula.sessions.list({ appId, limit: 2 }).toArray(2);
    assert.deepEqual(
      firstTwo.map((s) => s.sessionId),
      ids.slice(0, 2),
    );

    const cancelled = await matricula.sessions.cancel(created.sessionId);
    assert.equal(cancelled.status, 'cancelled');
    const events = await matricula.events.list({ appId, event: 'verification.cancelled' }).toArray();
    assert.equal(events.length, 1);
    assert.equal(events[0].event, 'verification.cancelled');
    const event = await matricula.events.retrieve(events[0].id);
    assert.deepEqual(event.data, { sessionId: created.sessionId });
  });

  test('an error answer is a MatriculaError with code, status, requestId and param', async () => {
    const missing = await matricula.sessions.retrieve('sess_00000000000000000000000000').catch((e: unknown) => e);
    assert.ok(missing instanceof MatriculaError);
    assert.equal(missing.code, 'not_found');
    assert.equal(missing.status, 404);
    assert.match(missing.requestId ?? '', /^req_/);

    const invalid = await matricula.sessions
      .create({ appId, purpose: 'x', requiredClaims: ['shoe_size' as 'is_active_student'] })
      .catch((e: unknown) => e);
    assert.ok(invalid instanceof MatriculaError);
    assert.equal(invalid.code, 'invalid_request');
    assert.equal(invalid.param, 'requiredClaims');

    const stranger = new Matricula({ apiKey: 'sk_test_not-a-key', baseUrl });
    const refused = await stranger.apps
      .list()
      .toArray()
      .catch((e: unknown) => e);
    assert.ok(refused instanceof MatriculaError);
    assert.equal(refused.status, 401);
    assert.equal(refused.code, 'unauthenticated');

    const nobody = new Matricula({ apiKey: secret, baseUrl: 'http://127.0.0.1:9', maxRetries: 0 });
    const unreachable = await nobody.apps
      .list()
      .toArray()
      .catch((e: unknown) => e);
    assert.ok(unreachable instanceof MatriculaError);
    assert.equal(unreachable.code, 'network_error');
    assert.equal(unreachable.status, 0);
  });

  test('POSTs carry an Idempotency-Key: the given one replays, a generated one is new each call', async () => {
    const body = { appId, purpose: 'Idempotent', requiredClaims: ['is_active_student' as const] };
    const first = await matricula.sessions.create(body, { idempotencyKey: `sdk-${dialect}` });
    const again = await matricula.sessions.create(body, { idempotencyKey: `sdk-${dialect}` });
    assert.equal(again.sessionId, first.sessionId);
    const other = await matricula.sessions.create(body);
    assert.notEqual(other.sessionId, first.sessionId);
  });

  test('503 and 429 are retried with the same Idempotency-Key, honouring Retry-After', async () => {
    for (const status of [503, 429]) {
      const proxy = await flakyProxy(baseUrl, 2, status);
      try {
        const client = new Matricula({ apiKey: secret, baseUrl: proxy.url, maxRetries: 2 });
        const created = await client.sessions.create({
          appId,
          purpose: 'Retried',
          requiredClaims: ['is_active_student'],
        });
        assert.match(created.sessionId, /^sess_/);
        assert.equal(proxy.seen.length, 3);
        const keys = new Set(proxy.seen.map((h) => h['idempotency-key']));
        assert.equal(keys.size, 1, 'one key for every attempt');
        assert.ok([...keys][0]);
      } finally {
        await proxy.close();
      }
      const exhausted = await flakyProxy(baseUrl, 5, status);
      try {
        const client = new Matricula({ apiKey: secret, baseUrl: exhausted.url, maxRetries: 1 });
        const error = await client.apps
          .list()
          .toArray()
          .catch((e: unknown) => e);
        assert.ok(error instanceof MatriculaError);
        assert.equal(error.status, status);
        assert.equal(exhausted.seen.length, 2, 'one try and one retry');
      } finally {
        await exhausted.close();
      }
    }
  });

  test('apps, keys, webhooks and deliveries, and verify', async () => {
    const app = await matricula.apps.create({ name: 'SDK app', environment: 'sandbox' });
    assert.ok((await matricula.apps.list().toArray()).some((a) => a.id === app.id));
    assert.equal((await matricula.apps.update(app.id, { name: 'SDK app 2' })).name, 'SDK app 2');

    const key = await matricula.keys.create({ appId: app.id, name: 'SDK key', environment: 'sandbox' });
    assert.match(key.rawSecret ?? '', /^sk_test_/);
    assert.ok((await matricula.keys.list({ appId: app.id }).toArray()).some((k) => k.id === key.id));
    assert.equal((await matricula.keys.revoke(key.id)).revoked, true);

    const endpoint = await matricula.webhooks.create({
      appId: app.id,
      url: 'http://127.0.0.1:9/sdk',
      events: ['verification.completed'],
    });
    assert.match(endpoint.secret ?? '', /^whsec_/);
    const delivery = await matricula.webhooks.test(endpoint.id);
    assert.equal(delivery.event, 'webhook.test');
    const deliveries = await matricula.webhooks.deliveries.list(endpoint.id).toArray();
    assert.deepEqual(
      deliveries.map((d) => d.id),
      [delivery.id],
    );
    assert.equal((await matricula.webhooks.deliveries.retrieve(endpoint.id, delivery.id)).id, delivery.id);
    assert.equal((await matricula.webhooks.update(endpoint.id, { enabled: false })).enabled, false);
    assert.notEqual((await matricula.webhooks.rotateSecret(endpoint.id)).secret, endpoint.secret);
    assert.equal((await matricula.webhooks.delete(endpoint.id)).deleted, true);

    const outcome = await matricula.verify({ format: 'sd-jwt-vc', presentation: 'not-a-presentation', nonce: 'n' });
    assert.equal(outcome.verified, false);
    assert.equal(outcome.failureReason, 'malformed_presentation');

    assert.equal((await matricula.apps.archive(app.id)).status, 'archived');
  });
});

describe('the SDK as published', () => {
  test('compiles to JavaScript that plain node imports, with no runtime dependency', () => {
    const pkg = JSON.parse(readFileSync('packages/sdk/package.json', 'utf8')) as Record<string, unknown>;
    assert.equal(pkg.dependencies, undefined, 'zero runtime dependencies');
    const out = mkdtempSync(join(tmpdir(), 'matricula-sdk-'));
    try {
      execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'packages/sdk', '--outDir', out]);
      const script = `
        const { Matricula, MatriculaError, default: Default } = await import(${JSON.stringify(join(out, 'index.js'))});
        const client = new Matricula({ apiKey: 'sk_test_x', baseUrl: 'http://127.0.0.1:9' });
        console.log(JSON.stringify({
          same: Default === Matricula,
          resources: ['apps', 'keys', 'sessions', 'events', 'webhooks'].every((r) => typeof client[r] === 'object'),
          error: new MatriculaError({ message: 'm', status: 400, code: 'invalid_request' }).code,
        }));`;
      // Plain node: no tsx, no loader.
      const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
      assert.deepEqual(JSON.parse(printed), { same: true, resources: true, error: 'invalid_request' });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
