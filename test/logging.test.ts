import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { testConfig } from './support/harness.ts';
import { createLogger, loggableUrl, logStartupWarnings, redactSecrets } from '../src/logging.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from './support/harness.ts';
import { buildPresentation, consent, createSession, submit } from './support/sessions.ts';
import { createEndpoint, workerFor } from './support/webhooks.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';

/** A logger at `level` whose lines land in `lines`, exactly as they would be written to stdout. */
function capture(level: 'trace' | 'info' = 'trace', logFormat: 'json' | 'pretty' = 'json') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ logLevel: level, logFormat }, destination);
  return { lines, logger };
}

const parsed = (lines: string[]) => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe('redaction', () => {
  const nonce = 'nonce_Q2hhbGxlbmdlTm9uY2VPZlRoaXJ0eVR3b0J5dGVzMTIzNDU2Nzg5MA';
  const key = 'sk_test_0123456789ABCDEFGHIJabcdefghij01abcd';

  test('nonces, API keys, webhook secrets and bearer tokens are replaced, error codes are not', () => {
    const line = JSON.stringify({
      url: `/verification/v1/sessions/sess_1/request?nonce=${nonce}&x=1`,
      qr: `matricula://verify?session=sess_1&nonce=${encodeURIComponent(nonce)}`,
      msg: `bound to ${nonce}; key ${key}; secret whsec_abcDEF0123456789abcDEF0123456789abcDEF01234`,
      header: 'Bearer some-admin-token',
      reason: 'nonce_mismatch',
    });
    const out = redactSecrets(line);
    assert.ok(!out.includes(nonce.slice(6)), out);
    assert.ok(!out.includes(key.slice(8)), out);
    assert.ok(!out.includes('abcDEF0123456789'), out);
    assert.ok(!out.includes('some-admin-token'), out);
    assert.ok(out.includes('nonce_mismatch'), 'an error code is not a nonce');
    assert.ok(out.includes('&x=1'), 'only the nonce value goes');
    assert.doesNotThrow(() => JSON.parse(out), 'the line stays valid JSON');
  });

  test('the logged URL loses its nonce whatever its shape', () => {
    assert.equal(loggableUrl('/s/1/request?nonce=anything%20at_all&a=b'), '/s/1/request?nonce=[redacted]&a=b');
    assert.equal(loggableUrl('/healthz'), '/healthz');
  });

  test('objects logged with secret fields are censored by name, before the pattern scan', () => {
    const { lines, logger } = capture();
    logger.info({ secret: 'plain-looking', nested: { token: 'also-plain', nonce: 'xyz' } }, 'm');
    const [line] = parsed(lines);
    assert.equal(line.secret, '[redacted]');
    assert.deepEqual(line.nested, { token: '[redacted]', nonce: '[redacted]' });
  });

  test('LOG_FORMAT=pretty writes human lines, still redacted', () => {
    const { lines, logger } = capture('info', 'pretty');
    logger.info({ key }, 'made a key');
    const out = lines.join('');
    assert.match(out, /INFO.*made a key/);
    assert.throws(() => JSON.parse(out));
    assert.ok(!out.includes(key.slice(8)), out);
  });

  test('WEBHOOK_ALLOW_PRIVATE_TARGETS=true is warned about once at start, and only then', () => {
    const on = capture();
    logStartupWarnings(on.logger, testConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }));
    assert.equal(on.lines.length, 1);
    assert.equal(parsed(on.lines)[0].level, 40);
    assert.match(String(parsed(on.lines)[0].msg), /WEBHOOK_ALLOW_PRIVATE_TARGETS=true/);
    const off = capture();
    logStartupWarnings(off.logger, testConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }));
    assert.equal(off.lines.length, 0);
  });
});

forEachDialect('logs of a full flow', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const { lines, logger } = capture('trace');
  before(async () => {
    h = await startHarness(dialect, {}, { logger });
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver.close();
    await h.close();
  });

  test('no nonce, API key or webhook secret in any line, at level trace; one line per request and per failure', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const rotated = await h.app.inject({
      method: 'POST',
      url: `/org/v1/webhooks/${endpoint.id}/rotate-secret`,
      headers: tenant.auth,
      payload: {},
    });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const secrets = [tenant.secret, endpoint.secret, rotated.json().data.secret as string];

    const s = await createSession(h, tenant);
    const request = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
    });
    assert.equal(request.statusCode, 200);
    // A wrong nonce (404) and a presentation bound to another nonce (400) are logged too.
    const wrong = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=nonce_${'x'.repeat(43)}`,
    });
    assert.equal(wrong.statusCode, 404);
    assert.equal((await consent(h, s)).statusCode, 200);
    const otherNonce = `nonce_${'y'.repeat(43)}`;
    const rejected = await submit(h, s, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: otherNonce }));
    assert.equal(rejected.statusCode, 400, rejected.body);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', presentation)).statusCode, 200);

    // The receiver fails the first delivery, then accepts the retry.
    receiver.respondWith({ status: 500, body: `echo ${s.challengeNonce}` });
    const worker = workerFor(h, { log: logger });
    const firstAttemptAt = h.clock.now().getTime();
    assert.equal((await worker.runOnce()).retrying, 1);
    h.clock.advance(60_000);
    assert.equal((await worker.runOnce()).succeeded, 1);
    await worker.stop();

    const all = lines.join('');
    assert.ok(lines.length >= 9, 'the flow was logged');
    for (const secret of [s.challengeNonce, s.challengeNonce.slice(6), otherNonce.slice(6), ...secrets])
      assert.ok(!all.includes(secret), `a log line contains ${secret.slice(0, 10)}…`);
    assert.ok(!/authorization/i.test(all.replace(/"authorization":"\[redacted\]"/g, '')), 'no header is logged');

    const records = parsed(lines);
    const requestLines = records.filter((r) => r.msg === 'request');
    assert.equal(requestLines.length, 8, 'one line per request');
    assert.ok(requestLines.every((r) => typeof r.reqId === 'string' && typeof r.statusCode === 'number'));
    assert.ok(requestLines.some((r) => r.url === `/verification/v1/sessions/${s.sessionId}/request?nonce=[redacted]`));
    assert.equal(records.filter((r) => r.msg === 'incoming request' || r.msg === 'request completed').length, 0);

    const failures = records.filter((r) => String(r.msg).startsWith('webhook delivery attempt failed'));
    assert.equal(failures.length, 1, 'one line per failed attempt');
    const [failure] = failures;
    assert.equal(failure.level, 40);
    assert.equal(failure.endpointId, endpoint.id);
    assert.match(String(failure.deliveryId), /^del_/);
    assert.equal(failure.statusCode, 500);
    assert.equal(failure.outcome, 'http_error');
    // The first retry of the default schedule, 10 s after the attempt (no jitter in workerFor).
    assert.equal(failure.nextAttemptAt, new Date(firstAttemptAt + 10_000).toISOString());
  });
});

forEachDialect('request ids', (dialect) => {
  for (const trusted of [false, true]) {
    describe(`TRUST_PROXY_REQUEST_ID=${trusted}`, () => {
      let h: Harness;
      before(async () => {
        h = await startHarness(dialect, { TRUST_PROXY_REQUEST_ID: String(trusted) });
      });
      after(() => h.close());

      const idFor = async (header?: string) => {
        const res = await h.app.inject({
          method: 'GET',
          url: '/healthz',
          headers: header === undefined ? {} : { 'x-request-id': header },
        });
        return String(res.headers['x-request-id']);
      };

      test(trusted ? 'a valid incoming id is kept' : 'an incoming id is ignored', async () => {
        const id = await idFor('proxy-7f3a/abc:1');
        if (trusted) assert.equal(id, 'proxy-7f3a/abc:1');
        else assert.match(id, /^req_/);
      });

      test('an invalid or missing incoming id gets a fresh one', async () => {
        for (const bad of ['x'.repeat(129), 'has space', 'tab\there', ''])
          assert.match(await idFor(bad), /^req_/, JSON.stringify(bad));
        assert.match(await idFor(), /^req_/);
        if (trusted) assert.equal(await idFor('x'.repeat(128)), 'x'.repeat(128));
      });
    });
  }
});
