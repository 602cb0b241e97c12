import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  maxAttempts,
  nextAttemptDelayMs,
  parseRetrySchedule,
  RetryScheduleError,
} from '../../src/domain/backoff.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { buildDeliveryHeaders, RESPONSE_BODY_LIMIT_BYTES, sendWebhook } from '../../src/webhooks/sender.ts';
import { signPayload, signStandardWebhook } from '../../src/webhooks/signature.ts';
import { newSigningSecret } from '../../src/webhooks/secrets.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';
import { verifyWebhookSignature } from '../../packages/sdk/src/webhooks.ts';
import { plainNodeProject, type PlainNodeProject } from '../support/plain-node.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const BODY = JSON.stringify({
  id: 'evt_01jd0000000000000000000000',
  event: 'webhook.test',
  createdAt: '2026-11-21T10:00:00.000Z',
  appId: 'app_01jd0000000000000000000000',
  environment: 'sandbox',
  data: { message: 'héllo ✓' },
});

describe('sendWebhook against a real local receiver', () => {
  let receiver: WebhookReceiver;
  // Loopback is a private target: these tests run with the development policy, through the same
  // guarded dispatcher production uses.
  const dispatcher = createGuardedDispatcher({ allowPrivateTargets: true });
  const secret = newSigningSecret();
  const t = 1_795_000_000;
  const headers = buildDeliveryHeaders({
    eventName: 'webhook.test',
    deliveryId: 'del_01jd0000000000000000000000',
    attempt: 3,
    signature: signPayload(BODY, [secret], t),
    standard: {
      id: 'evt_01jd0000000000000000000000',
      timestamp: t,
      signature: signStandardWebhook('evt_01jd0000000000000000000000', BODY, [secret], t),
    },
  });
  const send = (timeoutMs?: number) => sendWebhook({ url: receiver.url, body: BODY, headers, dispatcher, timeoutMs });

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  afterEach(() => receiver.setDefaultResponse({ status: 200, body: 'ok' }));
  after(async () => {
    await dispatcher.close();
    await receiver.close();
  });

  it('delivers exactly the headers and body of the contract, and a 2xx acknowledges', async () => {
    receiver.respondWith({ status: 204 });
    const outcome = await send();
    assert.equal(outcome.ok, true);
    assert.equal(outcome.status, 204);
    assert.equal(outcome.error, undefined);
    const request = receiver.requests.at(-1)!;
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/hooks');
    assert.equal(request.body.toString('utf8'), BODY);
    const sent: Record<string, string> = {};
    for (let i = 0; i < request.rawHeaders.length; i += 2) sent[request.rawHeaders[i]] = request.rawHeaders[i + 1];
    assert.deepEqual(sent, {
      host: `127.0.0.1:${receiver.port}`,
      connection: 'keep-alive',
      'content-length': String(Buffer.byteLength(BODY)),
      'Content-Type': 'application/json',
      'User-Agent': 'Service-Webhooks/1.0',
      'X-Service-Signature': `t=${t},${headers['X-Service-Signature'].split(',')[1]}`,
      'X-Service-Event': 'webhook.test',
      'X-Service-Delivery': 'del_01jd0000000000000000000000',
      'X-Service-Delivery-Attempt': '3',
      'webhook-id': 'evt_01jd0000000000000000000000',
      'webhook-timestamp': String(t),
      'webhook-signature': headers['webhook-signature'],
    });
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
    // What arrived verifies with the receiver-side verifier, over the raw bytes.
    const verified = verifyWebhookSignature(request.body, request.headers['x-service-signature'], secret, {
      now: t * 1000,
    });
    assert.deepEqual(verified, { ok: true, timestamp: t });
  });

  it('any 2xx acknowledges (202 with a body)', async () => {
    receiver.respondWith({ status: 202, body: 'queued' });
    const outcome = await send();
    assert.deepEqual([outcome.ok, outcome.status, outcome.responseBody], [true, 202, 'queued']);
  });

  it('a 500 is a failure that keeps the status and the response body', async () => {
    receiver.respondWith({ status: 500, body: 'database down' });
    const outcome = await send();
    assert.equal(outcome.ok, false);
    assert.equal(outcome.status, 500);
    assert.equal(outcome.error, 'http_error');
    assert.equal(outcome.responseBody, 'database down');
  });

  it('a 410 is reported with its status (the worker disables the endpoint on it)', async () => {
    receiver.respondWith({ status: 410, body: 'gone' });
    const outcome = await send();
    assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, 410, 'http_error']);
  });

  it('a 302 is a failure and is not followed', async () => {
    const before = receiver.requests.length;
    receiver.respondWith({ kind: 'redirect', status: 302, location: `${receiver.url}/elsewhere` });
    const outcome = await send();
    assert.equal(outcome.ok, false);
    assert.equal(outcome.status, 302);
    assert.equal(outcome.error, 'redirect_not_followed');
    assert.match(outcome.errorMessage ?? '', /\/hooks\/elsewhere/);
    assert.equal(receiver.requests.length, before + 1, 'no second request to the redirect target');
    assert.ok(!receiver.requests.some((r) => r.path === '/hooks/elsewhere'));
  });

  it('a receiver that never answers times out after timeoutMs, on the injected clock', { timeout: 5000 }, async () => {
    receiver.respondWith({ kind: 'hang' });
    const clock = new TestClock();
    let settled = false;
    const pending = sendWebhook({ url: receiver.url, body: BODY, headers, dispatcher, timeoutMs: 200, clock }).finally(
      () => (settled = true),
    );
    await receiver.waitForRequests(receiver.requests.length + 1);
    clock.advance(199);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'not before the timeout');
    clock.advance(1);
    const outcome = await pending;
    assert.equal(outcome.ok, false);
    assert.equal(outcome.error, 'timeout');
    assert.equal(outcome.status, undefined);
    assert.equal(clock.pendingTimers, 0, 'the timer is cleared');
  });

  it(
    'the timeout covers the response body: a 200 whose body stalls is not an acknowledgement',
    { timeout: 5000 },
    async () => {
      receiver.respondWith({ kind: 'stall_body', status: 200 });
      const outcome = await send(200);
      assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, 200, 'timeout']);
    },
  );

  it(
    'an answer the test releases before the deadline succeeds; one released after it does not',
    { timeout: 5000 },
    async () => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      receiver.respondWith({ status: 200, body: 'late but fine', after: released });
      const pending = send(5000);
      await receiver.waitForRequests(receiver.requests.length + 1);
      release();
      const outcome = await pending;
      assert.deepEqual([outcome.ok, outcome.responseBody], [true, 'late but fine']);

      let releaseLate!: () => void;
      receiver.respondWith({ status: 200, after: new Promise<void>((resolve) => (releaseLate = resolve)) });
      const clock = new TestClock();
      const latePending = sendWebhook({ url: receiver.url, body: BODY, headers, dispatcher, timeoutMs: 200, clock });
      await receiver.waitForRequests(receiver.requests.length + 1);
      clock.advance(200);
      const late = await latePending;
      releaseLate();
      assert.equal(late.error, 'timeout');
    },
  );

  it('keeps only the first 2 KiB of a large response body', async () => {
    receiver.respondWith({ status: 200, body: 'é'.repeat(5000) });
    const outcome = await send();
    assert.equal(outcome.ok, true);
    assert.equal(outcome.responseBodyTruncated, true);
    assert.equal(Buffer.byteLength(outcome.responseBody), RESPONSE_BODY_LIMIT_BYTES);
  });

  it('a closed port is a connection failure, not a throw', async () => {
    const closed = await startWebhookReceiver();
    const url = closed.url;
    await closed.close();
    const outcome = await sendWebhook({ url, body: BODY, headers, dispatcher });
    assert.deepEqual([outcome.ok, outcome.error], [false, 'connection_failed']);
    assert.match(outcome.errorMessage ?? '', /ECONNREFUSED/);
  });
});

const NO_STANDARD = { id: 'evt_abc', timestamp: 1, signature: '' };

describe('buildDeliveryHeaders', () => {
  it('produces exactly the six delivery headers and the three Standard Webhooks headers', () => {
    const headers = buildDeliveryHeaders({
      eventName: 'verification.completed',
      deliveryId: 'del_abc',
      attempt: 1,
      signature: 't=1,v1=ab',
      standard: { id: 'evt_abc', timestamp: 1, signature: 'v1,AB==' },
    });
    assert.deepEqual(headers, {
      'Content-Type': 'application/json',
      'User-Agent': 'Service-Webhooks/1.0',
      'X-Service-Signature': 't=1,v1=ab',
      'X-Service-Event': 'verification.completed',
      'X-Service-Delivery': 'del_abc',
      'X-Service-Delivery-Attempt': '1',
      'webhook-id': 'evt_abc',
      'webhook-timestamp': '1',
      'webhook-signature': 'v1,AB==',
    });
  });

  it('refuses a non-delivery id or attempt 0', () => {
    assert.throws(
      () =>
        buildDeliveryHeaders({
          eventName: 'x',
          deliveryId: 'evt_abc',
          attempt: 1,
          signature: '',
          standard: NO_STANDARD,
        }),
      TypeError,
    );
    assert.throws(
      () =>
        buildDeliveryHeaders({
          eventName: 'x',
          deliveryId: 'del_abc',
          attempt: 0,
          signature: '',
          standard: NO_STANDARD,
        }),
      TypeError,
    );
  });
});

describe('retry schedule', () => {
  it('defaults to 10 s … 24 h, about 45 h in all, nine attempts', () => {
    assert.deepEqual(parseRetrySchedule(undefined), [10, 60, 300, 1800, 7200, 21600, 43200, 86400]);
    assert.equal(parseRetrySchedule('  '), DEFAULT_RETRY_SCHEDULE_SECONDS);
    const total = DEFAULT_RETRY_SCHEDULE_SECONDS.reduce((a, b) => a + b, 0);
    assert.ok(total / 3600 > 44 && total / 3600 < 46);
    assert.equal(maxAttempts(), 9);
  });

  it('parses a custom schedule with spaces', () => {
    assert.deepEqual(parseRetrySchedule('5, 30 ,120'), [5, 30, 120]);
  });

  const bad: Array<[string, RegExp]> = [
    ['10,abc', /entry 2 \("abc"\) is not a positive whole number/],
    ['10,,60', /entry 2 \(""\)/],
    ['0', /entry 1 \("0"\)/],
    ['-5', /entry 1 \("-5"\)/],
    ['1.5', /entry 1 \("1.5"\)/],
    ['10,', /entry 2/],
    ['1e3', /entry 1/],
    ['700000', /longer than one week/],
    [Array(51).fill('1').join(','), /at most 50/],
  ];
  for (const [value, message] of bad) {
    it(`rejects "${value.slice(0, 20)}" with a clear message`, () => {
      assert.throws(
        () => parseRetrySchedule(value),
        (err: Error) => {
          assert.ok(err instanceof RetryScheduleError);
          assert.match(err.message, message);
          return true;
        },
      );
    });
  }

  it('uses schedule[n-1] after attempt n, and null after the last', () => {
    const schedule = [10, 60, 300];
    const middle = () => 0.5; // no jitter
    assert.equal(nextAttemptDelayMs(1, schedule, middle), 10_000);
    assert.equal(nextAttemptDelayMs(2, schedule, middle), 60_000);
    assert.equal(nextAttemptDelayMs(3, schedule, middle), 300_000);
    assert.equal(nextAttemptDelayMs(4, schedule, middle), null);
    assert.equal(nextAttemptDelayMs(9, DEFAULT_RETRY_SCHEDULE_SECONDS, middle), null);
    assert.equal(nextAttemptDelayMs(8, DEFAULT_RETRY_SCHEDULE_SECONDS, middle), 86_400_000);
  });

  it('jitters within ±20 %, reaching both ends', () => {
    assert.equal(
      nextAttemptDelayMs(2, [60], () => 0),
      null,
    );
    assert.equal(
      nextAttemptDelayMs(1, [60], () => 0),
      48_000,
    );
    assert.equal(
      nextAttemptDelayMs(1, [60], () => 0.999_999_9),
      72_000,
    );
    let seed = 7;
    const lcg = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const delays = Array.from({ length: 2000 }, () => nextAttemptDelayMs(1, [300], lcg)!);
    assert.ok(delays.every((d) => d >= 240_000 && d <= 360_000));
    assert.ok(Math.min(...delays) < 245_000 && Math.max(...delays) > 355_000, 'the jitter spans the range');
  });

  it('refuses attempt numbers below 1 or fractional', () => {
    assert.throws(() => nextAttemptDelayMs(0), RangeError);
    assert.throws(() => nextAttemptDelayMs(1.5), RangeError);
  });
});

describe('the receiver example of docs/webhooks.md, under plain node', () => {
  const oldSecret = newSigningSecret();
  const newSecret = newSigningSecret();
  const dispatcher = createGuardedDispatcher({ allowPrivateTargets: true });
  let project: PlainNodeProject;
  let child: ChildProcess;
  let url: string;

  before(async () => {
    const doc = await readFile(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### A complete receiver'));
    const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(code?.includes("from '@matricula/sdk/webhooks'"), 'the example imports the published SDK');
    // An integrator's project with the SDK installed compiled: the example runs with plain node (no
    // tsx, no loader), so it resolves '@matricula/sdk/webhooks' through the package's "exports".
    project = plainNodeProject();
    writeFileSync(join(project.dir, 'receiver.mjs'), code!);
    child = spawn(process.execPath, ['receiver.mjs'], {
      cwd: project.dir,
      env: { ...process.env, PORT: '0', MATRICULA_WEBHOOK_SECRET: `${newSecret},${oldSecret}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout!.setEncoding('utf8');
    while (!/listening on http:\/\/localhost:(\d+)(\S+)/.test(output)) {
      const [chunk] = (await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])) as [string];
      assert.equal(typeof chunk, 'string', `the example exited: ${output}`);
      output += chunk;
    }
    const [, port, path] = /listening on http:\/\/localhost:(\d+)(\S+)/.exec(output)!;
    url = `http://127.0.0.1:${port}${path}`;
  });
  after(async () => {
    await dispatcher.close();
    if (child && child.exitCode === null) {
      child.kill();
      await once(child, 'exit');
    }
    project?.remove();
  });

  function deliver(deliveryId: string, options: { body?: string; secrets?: string[]; t?: number } = {}) {
    const signedBody = BODY;
    const t = options.t ?? Math.floor(Date.now() / 1000);
    const signature = signPayload(signedBody, options.secrets ?? [newSecret], t);
    const standard = {
      id: 'evt_docs_example',
      timestamp: t,
      signature: signStandardWebhook('evt_docs_example', signedBody, options.secrets ?? [newSecret], t),
    };
    const headers = buildDeliveryHeaders({ eventName: 'webhook.test', deliveryId, attempt: 1, signature, standard });
    return sendWebhook({ url, body: options.body ?? signedBody, headers, dispatcher });
  }

  it('acknowledges a genuine delivery once and deduplicates its retry', async () => {
    const first = await deliver('del_docs_example_1');
    assert.deepEqual([first.status, first.responseBody], [200, 'ok']);
    const retry = await deliver('del_docs_example_1');
    assert.deepEqual([retry.status, retry.responseBody], [200, 'duplicate']);
  });

  it('accepts a delivery signed only with the old secret during rotation', async () => {
    const outcome = await deliver('del_docs_example_2', { secrets: [oldSecret] });
    assert.deepEqual([outcome.status, outcome.responseBody], [200, 'ok']);
  });

  it('rejects a tampered body, a foreign secret and a stale timestamp with 400', async () => {
    const tampered = await deliver('del_docs_example_3', { body: BODY.replace('héllo', 'hello') });
    assert.deepEqual([tampered.status, tampered.responseBody], [400, 'rejected: signature_mismatch']);
    const foreign = await deliver('del_docs_example_4', { secrets: [newSigningSecret()] });
    assert.deepEqual([foreign.status, foreign.responseBody], [400, 'rejected: signature_mismatch']);
    const stale = await deliver('del_docs_example_5', { t: Math.floor(Date.now() / 1000) - 301 });
    assert.deepEqual([stale.status, stale.responseBody], [400, 'rejected: timestamp_outside_tolerance']);
  });
});
