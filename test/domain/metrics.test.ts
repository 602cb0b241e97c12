import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildOperationsApp } from '../../src/app.ts';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, emitEvent, within, workerFor } from '../support/webhooks.ts';
import { listeningPortIn } from '../support/server.ts';
import { spawnWorker } from '../support/worker-process.ts';

/** The value of one sample of the exposition text, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.trim()) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      present[key] = value;
    if (Object.entries(labels).every(([key, value]) => present[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const TOKEN = 'metrics-token-0123456789abcdef';

forEachDialect('GET /metrics', (dialect) => {
  describe('after a real flow', () => {
    let h: Harness;
    let tenant: Tenant;
    let receiver: WebhookReceiver;
    useHarness(dialect, (harness, t) => {
      h = harness;
      tenant = t;
    });
    before(async () => {
      receiver = await startWebhookReceiver();
    });
    after(() => receiver?.close());

    const scrape = async () => {
      const res = await h.app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      return res.body;
    };

    test('sessions, presentations, requests, the outbox and deliveries move the counters', async () => {
      await createEndpoint(h, tenant, receiver.url);
      const verified = await createSession(h, tenant);
      assert.equal((await consent(h, verified)).statusCode, 200);
      const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: verified.challengeNonce });
      const submitted = await submit(h, verified, 'sd-jwt-vc', presentation);
      assert.equal(submitted.statusCode, 200, submitted.body);
      const declined = await createSession(h, tenant);
      assert.equal((await consent(h, declined, 'declined')).statusCode, 200);
      const rejected = await createSession(h, tenant);
      assert.equal((await consent(h, rejected)).statusCode, 200);
      assert.equal((await submit(h, rejected, 'sd-jwt-vc', 'not-a-presentation')).statusCode, 400);

      const cancelled = await createSession(h, tenant);
      const cancel = await h.app.inject({
        method: 'POST',
        url: `/verification/v1/sessions/${cancelled.sessionId}/cancel`,
        headers: tenant.auth,
      });
      assert.equal(cancel.statusCode, 200, cancel.body);
      await createSession(h, tenant, { expiresInSeconds: 30 });

      h.clock.advance(30_000);
      assert.equal(await expireDueSessions(h.services), 1);
      let text = await scrape();
      assert.equal(sample(text, 'matricula_sessions_created_total', { environment: 'sandbox' }), 5);
      assert.equal(sample(text, 'matricula_sessions_completed_total', { outcome: 'cancelled', format: 'none' }), 1);
      assert.equal(sample(text, 'matricula_sessions_completed_total', { outcome: 'expired', format: 'none' }), 1);
      assert.equal(sample(text, 'matricula_sessions_completed_total', { outcome: 'verified', format: 'sd-jwt-vc' }), 1);
      assert.equal(sample(text, 'matricula_sessions_completed_total', { outcome: 'declined', format: 'none' }), 1);
      assert.equal(
        sample(text, 'matricula_presentation_verification_seconds_count', { format: 'sd-jwt-vc', result: 'verified' }),
        1,
      );
      assert.equal(
        sample(text, 'matricula_presentation_verification_seconds_count', { format: 'sd-jwt-vc', result: 'rejected' }),
        1,
      );
      const consentRoute = { method: 'POST', route: '/verification/v1/sessions/:sessionId/consent', status: '200' };
      assert.equal(sample(text, 'matricula_http_requests_total', consentRoute), 3);
      assert.equal(sample(text, 'matricula_http_request_duration_seconds_count', consentRoute), 3);
      assert.equal(
        sample(text, 'matricula_http_requests_total', {
          method: 'POST',
          route: '/verification/v1/sessions/:sessionId/presentation',
          status: '400',
        }),
        1,
      );
      for (const secret of [verified.sessionId, verified.challengeNonce, declined.challengeNonce, tenant.secret])
        assert.ok(!text.includes(secret), 'no id, nonce or key appears in a label');

      // The completed event waits in the outbox, due since 30 s on the test clock.
      assert.equal(sample(text, 'matricula_outbox_due_deliveries'), 1);
      assert.equal(sample(text, 'matricula_outbox_oldest_due_age_seconds'), 30);
      const pool = sample(text, 'matricula_db_pool_connections');
      if (dialect === 'postgres') assert.ok(pool !== undefined && pool >= 1, 'the PostgreSQL pool is reported');
      else assert.equal(pool, undefined, 'SQLite has no pool');

      const summary = await workerFor(h, { metrics: h.services.metrics }).runOnce();
      assert.equal(summary.succeeded, 1);
      text = await scrape();
      assert.equal(sample(text, 'matricula_webhook_deliveries_total', { result: 'succeeded' }), 1);
      assert.equal(sample(text, 'matricula_outbox_due_deliveries'), 0);
      assert.equal(sample(text, 'matricula_outbox_oldest_due_age_seconds'), 0);
    });

    test('each app instance has a registry of its own', async () => {
      const second = await h.secondInstance();
      const res = await second.inject({ method: 'GET', url: '/metrics' });
      assert.equal(sample(res.body, 'matricula_sessions_created_total', { environment: 'sandbox' }), undefined);
    });
  });

  describe('with METRICS_TOKEN set', () => {
    let h: Harness;
    useHarness(
      dialect,
      (harness) => {
        h = harness;
      },
      { METRICS_TOKEN: TOKEN },
    );

    test('no token or a wrong one is a 401; the token opens it', async () => {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Basic ${TOKEN}` }]) {
        const res = await h.app.inject({ method: 'GET', url: '/metrics', headers });
        assert.equal(res.statusCode, 401, res.body);
        assert.equal(res.json().error.code, 'unauthenticated');
        assert.equal(res.headers['www-authenticate'], 'Bearer');
      }
      const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /matricula_http_requests_total/);
    });
  });

  describe('the worker role (METRICS_PORT)', () => {
    let h: Harness;
    let tenant: Tenant;
    let receiver: WebhookReceiver;
    useHarness(
      dialect,
      (harness, t) => {
        h = harness;
        tenant = t;
      },
      { METRICS_TOKEN: TOKEN },
    );
    before(async () => {
      receiver = await startWebhookReceiver();
    });
    after(() => receiver?.close());
    const auth = { authorization: `Bearer ${TOKEN}` };

    test('the operations app serves the delivery counters and the outbox, health, and nothing else', async () => {
      const ops = await buildOperationsApp({ store: h.store, services: h.services, logger: false });
      try {
        await createEndpoint(h, tenant, receiver.url);
        await emitEvent(h, tenant);
        let text = (await ops.inject({ method: 'GET', url: '/metrics', headers: auth })).body;
        assert.equal(sample(text, 'matricula_outbox_due_deliveries'), 1);
        assert.equal((await workerFor(h, { metrics: h.services.metrics }).runOnce()).succeeded, 1);
        text = (await ops.inject({ method: 'GET', url: '/metrics', headers: auth })).body;
        assert.equal(sample(text, 'matricula_webhook_deliveries_total', { result: 'succeeded' }), 1);
        assert.equal(sample(text, 'matricula_outbox_due_deliveries'), 0);

        const open = await ops.inject({ method: 'GET', url: '/metrics' });
        assert.equal(open.statusCode, 401, 'METRICS_TOKEN guards it here too');
        assert.equal(open.json().error.code, 'unauthenticated');
        assert.equal((await ops.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
        assert.equal((await ops.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
        for (const url of ['/org/v1/apps', '/docs', '/openapi.json', '/']) {
          const res = await ops.inject({ method: 'GET', url, headers: tenant.auth });
          assert.equal(res.statusCode, 404, url);
          assert.equal(res.json().error.code, 'not_found', url);
        }
      } finally {
        await ops.close();
      }
    });

    test(
      'a real `--role worker` process with METRICS_PORT is scraped for what it delivered',
      { timeout: 180_000 },
      async () => {
        h.clock.set(new Date());
        // An event only this endpoint subscribes to: one delivery.
        await createEndpoint(h, tenant, receiver.url, ['verification.cancelled']);
        const before = receiver.requests.length;
        // METRICS_PORT=0: the kernel picks the port, and the worker logs it.
        const worker = spawnWorker(h.testStore.url, {
          METRICS_PORT: '0',
          METRICS_TOKEN: TOKEN,
          HOST: '127.0.0.1',
        });
        try {
          await within(150_000, worker.ready, 'the worker to start');
          const port: number = listeningPortIn(worker.output(), 'metrics') ?? assert.fail(worker.output());
          await emitEvent(h, tenant, 'verification.cancelled', { sessionId: 'sess_metrics_worker' });
          await within(30_000, receiver.waitForRequests(before + 1), 'the worker to deliver');
          // The outcome is recorded just after the answer: scrape (each a real round trip, no sleep)
          // until the counter shows it, for at most 30 s.
          let delivered: number | undefined;
          for (const deadline = Date.now() + 30_000; delivered !== 1 && Date.now() < deadline;) {
            const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: auth });
            assert.equal(res.status, 200);
            delivered = sample(await res.text(), 'matricula_webhook_deliveries_total', { result: 'succeeded' });
          }
          assert.equal(delivered, 1, worker.output());
          assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
          assert.equal((await fetch(`http://127.0.0.1:${port}/org/v1/apps`)).status, 404);
        } finally {
          worker.child.kill('SIGTERM');
          await worker.exited;
        }
      },
    );
  });
});
