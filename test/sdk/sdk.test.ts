import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Matricula, MatriculaError, WebhookVerificationError } from '../../packages/sdk/src/index.ts';
import { signPayload, signStandardWebhook } from '../../src/webhooks/signature.ts';
import { newSigningSecret } from '../../src/webhooks/secrets.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { listeningApp, unusedPort } from '../support/server.ts';

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

  test('webhooks.create: the secret is a string; a replay, which cannot carry it, is a clear error', async () => {
    const body = { appId, url: 'https://93.184.215.14/hooks', events: ['consent.approved' as const] };
    const idempotencyKey = `sdk-secret-${dialect}`;
    const created = await matricula.webhooks.create(body, { idempotencyKey });
    assert.match(created.secret, /^whsec_/);
    await assert.rejects(
      matricula.webhooks.create(body, { idempotencyKey }),
      (err: unknown) =>
        err instanceof MatriculaError && err.code === 'secret_not_replayed' && /rotate/.test(err.message),
    );
    assert.match((await matricula.webhooks.rotateSecret(created.id)).secret, /^whsec_/);
    await matricula.webhooks.delete(created.id);
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

  test('sessions.redact: an ended session loses its data; an open one is a 409 MatriculaError', async () => {
    const created = await matricula.sessions.create({
      appId,
      purpose: 'SDK redaction',
      requiredClaims: ['is_active_student'],
      metadata: { customer: 'sdk-customer' },
      clientReference: 'sdk-order',
    });
    const open = await matricula.sessions.redact(created.sessionId).catch((e: unknown) => e);
    assert.ok(open instanceof MatriculaError);
    assert.equal(open.code, 'invalid_state');
    assert.equal(open.status, 409);

    await matricula.sessions.cancel(created.sessionId);
    const redacted = await matricula.sessions.redact(created.sessionId);
    assert.equal(redacted.status, 'cancelled');
    assert.equal(redacted.redacted, true);
    assert.ok(redacted.redactedAt);
    assert.equal(redacted.metadata, null);
    assert.equal(redacted.clientReference, null);
    assert.deepEqual(await matricula.sessions.retrieve(created.sessionId), redacted);
    const events = await matricula.events.list({ appId, event: 'verification.redacted' }).toArray();
    assert.deepEqual(
      events.map((e) => e.data),
      [{ sessionId: created.sessionId, redactedAt: redacted.redactedAt }],
    );
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

  test('a reset connection is retried with the same Idempotency-Key: the replay, not a second session', async () => {
    // The first request reaches the server and is committed, then its connection is reset before
    // any answer: the client cannot know, so it retries with the same key and gets the replay.
    const seen: Array<string | string[] | undefined> = [];
    const createdIds: string[] = [];
    const proxy: Server = createServer((req, res) => {
      seen.push(req.headers['idempotency-key']);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        fetch(`${baseUrl}${req.url}`, {
          method: req.method,
          headers: {
            authorization: req.headers.authorization!,
            'content-type': 'application/json',
            'idempotency-key': String(req.headers['idempotency-key']),
          },
          body: Buffer.concat(chunks),
        })
          .then(async (answer) => {
            const text = await answer.text();
            createdIds.push((JSON.parse(text) as { data: { sessionId: string } }).data.sessionId);
            if (seen.length === 1) return res.socket?.resetAndDestroy();
            res.writeHead(answer.status, { 'content-type': 'application/json' });
            res.end(text);
          })
          .catch(() => res.destroy());
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = proxy.address() as AddressInfo;
      const client = new Matricula({ apiKey: secret, baseUrl: `http://127.0.0.1:${port}`, maxRetries: 2 });
      const created = await client.sessions.create({ appId, purpose: 'Reset', requiredClaims: ['is_active_student'] });
      assert.equal(seen.length, 2, 'one reset attempt, one retry');
      assert.equal(new Set(seen).size, 1, 'the retry carries the same key');
      assert.deepEqual(createdIds, [created.sessionId, created.sessionId], 'the retry got the replay of the first');
      const reset = await matricula.sessions.list({ appId }).toArray();
      assert.equal(reset.filter((s) => s.purpose === 'Reset').length, 1, 'one session, not two');
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });

  test('a refused connection is retried until the server listens; after maxRetries it is network_error', async () => {
    // The one place a port is chosen before anything listens: the point is a refused connection
    // first, then a server on that same port. Port 0 cannot express that.
    const port = await unusedPort();
    const proxy = await flakyProxy(baseUrl, 0, 200);
    // Nothing listens on `port` at first: the attempt is refused by the kernel. After the first
    // refusal a forwarder starts listening there, and the retry goes through.
    let forwarder: Server | undefined;
    const attempts: Array<{ key: string | undefined; error?: string }> = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const key = (init?.headers as Record<string, string> | undefined)?.['idempotency-key'];
      try {
        const answer = await fetch(input, init);
        attempts.push({ key });
        return answer;
      } catch (error) {
        attempts.push({ key, error: ((error as Error).cause as { code?: string } | undefined)?.code });
        if (!forwarder) {
          forwarder = createServer((req, res) => {
            const target = new URL(req.url!, proxy.url);
            const chunks: Buffer[] = [];
            req.on('data', (c: Buffer) => chunks.push(c));
            req.on('end', () => {
              const upstream = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
                res.writeHead(answer.statusCode!, answer.headers);
                answer.pipe(res);
              });
              upstream.end(Buffer.concat(chunks));
            });
          });
          await new Promise<void>((resolve) => forwarder!.listen(port, '127.0.0.1', resolve));
        }
        throw error;
      }
    };
    try {
      const client = new Matricula({ apiKey: secret, baseUrl: `http://127.0.0.1:${port}`, fetch: recordingFetch });
      const created = await client.sessions.create({
        appId,
        purpose: 'Refused',
        requiredClaims: ['is_active_student'],
      });
      assert.match(created.sessionId, /^sess_/);
      assert.deepEqual(
        attempts.map((a) => a.error),
        ['ECONNREFUSED', undefined],
      );
      assert.equal(new Set(attempts.map((a) => a.key)).size, 1, 'the same key on both attempts');
      assert.equal(proxy.seen.length, 1);
      assert.equal(proxy.seen[0]['idempotency-key'], attempts[0].key);

      const closedPort = await unusedPort();
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls++;
        return fetch(input, init);
      };
      const refused = new Matricula({
        apiKey: secret,
        baseUrl: `http://127.0.0.1:${closedPort}`,
        maxRetries: 1,
        fetch: counting,
      });
      const error = await refused.sessions.retrieve('sess_x').catch((e: unknown) => e);
      assert.ok(error instanceof MatriculaError);
      assert.deepEqual([error.code, error.status, calls], ['network_error', 0, 2]);
    } finally {
      await proxy.close();
      await new Promise((r) => (forwarder ? forwarder.close(r) : r(undefined)));
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

describe('Matricula.webhooks, the receiver side', () => {
  const secret = newSigningSecret();
  const t = Math.floor(Date.now() / 1000);
  const sign = (body: string) => ({
    'x-service-signature': signPayload(body, [secret], t),
    'webhook-id': 'evt_sdk',
    'webhook-timestamp': String(t),
    'webhook-signature': signStandardWebhook('evt_sdk', body, [secret], t),
  });

  test('verify returns the event; a signed body that is not an event is invalid_payload, not a crash', () => {
    const body = JSON.stringify({ id: 'evt_sdk', event: 'webhook.test', data: {} });
    assert.deepEqual(Matricula.webhooks.verify(body, sign(body), secret), JSON.parse(body));
    for (const signed of ['not json', '[]', '{"id":1}']) {
      assert.throws(
        () => Matricula.webhooks.verify(signed, sign(signed), secret),
        (error: unknown) => error instanceof WebhookVerificationError && error.reason === 'invalid_payload',
        signed,
      );
    }
  });

  test('verifySignature answers a value; no secret at all is a TypeError (a misconfiguration)', () => {
    const body = '{"id":"evt_sdk","event":"webhook.test","data":{}}';
    const outcome = Matricula.webhooks.verifySignature(body, sign(body), secret);
    assert.deepEqual(outcome.ok && outcome.schemes, ['standard-webhooks', 'x-service']);
    const stale = Matricula.webhooks.verifySignature(body, sign(body), secret, { now: (t + 301) * 1000 });
    assert.equal(!stale.ok && stale.reason, 'timestamp_outside_tolerance');
    assert.throws(() => Matricula.webhooks.verify(body, sign(body), ''), TypeError);
    assert.throws(() => Matricula.webhooks.verify(body, sign(body), []), TypeError);
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
