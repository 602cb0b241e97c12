import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expireDueSessions } from '../src/services/expiry.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from './support/harness.ts';
import { buildPresentation, consent, createSession, submit } from './support/sessions.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';
import { createEndpoint, workerFor } from './support/webhooks.ts';

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
});
