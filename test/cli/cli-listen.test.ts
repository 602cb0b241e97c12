import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { runCli } from '../../src/cli/main.ts';
import type { CliContext } from '../../src/cli/command.ts';
import { TestClock, type TimerHandle } from '../../src/domain/clock.ts';
import { verifyWebhookSignature } from '../../packages/sdk/src/webhooks.ts';
import {
  buildTestApp,
  forEachDialect,
  startHarness,
  testConfig,
  type Harness,
  type Tenant,
} from '../support/harness.ts';
import { listeningApp } from '../support/server.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { startWebhookReceiver, type RecordedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, emitEvent, within, workerFor } from '../support/webhooks.ts';

/**
 * `matricula listen`, `events tail` and `webhooks test`, run in-process against the real app
 * listening on loopback and a local receiver. The CLI's clock is a TestClock that also says when
 * a timer is set: once the loop has set its next poll timer, the step before it is complete, so
 * the test moves time and waits for that, never sleeps.
 */
class SteppingClock extends TestClock {
  #waiters: Array<{ ms: number; resolve: () => void }> = [];

  override setTimeout(callback: () => void, ms: number): TimerHandle {
    const handle = super.setTimeout(callback, ms);
    for (const waiter of this.#waiters.filter((w) => w.ms === ms)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    return handle;
  }

  /** Resolves when a timer of exactly `ms` is next set (the loop going to sleep for that long). */
  nextTimer(ms: number): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ ms, resolve }));
  }
}

const POLL = 1500;

interface RunningCli {
  clock: SteppingClock;
  stdout: string[];
  stderr: string[];
  exit: Promise<number>;
  stop(): Promise<number>;
}

function startCli(argv: string[]): RunningCli {
  const clock = new SteppingClock(new Date());
  const stdout: string[] = [];
  const stderr: string[] = [];
  const controller = new AbortController();
  const ctx: CliContext = {
    env: {},
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
    clock,
    openStore: () => Promise.reject(new Error('these commands must not open the database')),
    config: () => {
      throw new Error('these commands must not read the service configuration');
    },
    signal: controller.signal,
  };
  const exit = runCli(argv, ctx);
  return {
    clock,
    stdout,
    stderr,
    exit,
    stop: () => {
      controller.abort();
      return within(5_000, exit, 'the command to stop');
    },
  };
}

function flatHeaders(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v!]));
}

forEachDialect('matricula listen, events tail, webhooks test', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let server: FastifyInstance;
  let baseUrl: string;
  let receiver: WebhookReceiver;
  const running: RunningCli[] = [];
  const cli = (...argv: string[]) => {
    const r = startCli([...argv, '--api-key', tenant.secret, '--base-url', baseUrl, '--poll-interval', String(POLL)]);
    running.push(r);
    return r;
  };

  /** Completes a session as a student would: consent.approved, then verification.completed. */
  async function completeSession() {
    const session = await createSession(h, tenant);
    assert.equal((await consent(h, session)).statusCode, 200);
    h.clock.advance(1); // ids of one millisecond sort at random; events are forwarded in id order
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: session.challengeNonce });
    assert.equal((await submit(h, session, 'sd-jwt-vc', presentation)).statusCode, 200);
    return session;
  }

  /** Moves the CLI's clock by `ms` and waits until the loop has gone back to sleep for `nextMs`. */
  async function step(r: RunningCli, ms: number, nextMs = POLL) {
    const asleep = r.clock.nextTimer(nextMs);
    r.clock.advance(ms);
    await within(10_000, asleep, 'the loop to finish its step');
  }

  before(async () => {
    h = await startHarness(dialect);
    h.clock.set(new Date());
    ({ app: server, baseUrl } = await listeningApp(h.store, h.clock));
  });
  beforeEach(async () => {
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await receiver.close();
  });
  after(async () => {
    await server.close();
    await h.close();
  });

  test('listen forwards new events, signed like real deliveries with the printed secret, and resumes after an outage', async () => {
    await emitEvent(h, tenant); // before start: not forwarded
    const asleep = startCliAsleep(
      'listen',
      '--forward-to',
      receiver.url,
      '--events',
      'consent.approved,verification.completed',
    );
    const r = await asleep;
    const ready = r.stdout.join('\n').match(/Ready! Your webhook signing secret is (whsec_[0-9A-Za-z]{44})/);
    assert.ok(ready, r.stdout.join('\n'));
    const secret = ready[1];

    const session = await completeSession();
    await emitEvent(h, tenant, 'verification.cancelled', { sessionId: 'sess_filtered_out' });
    await step(r, POLL);

    assert.deepEqual(
      receiver.requests.map((req) => req.headers['x-service-event']),
      ['consent.approved', 'verification.completed'],
    );
    for (const request of receiver.requests) {
      const body = request.body.toString('utf8');
      const envelope = new StandardWebhook(secret).verify(body, flatHeaders(request)) as { id: string; data: object };
      assert.equal(request.headers['webhook-id'], envelope.id);
      assert.deepEqual(envelope.data, { ...envelope.data, sessionId: session.sessionId });
      const ours = verifyWebhookSignature(request.body, request.headers, secret, { now: r.clock.now() });
      assert.deepEqual(ours.ok && ours.schemes, ['standard-webhooks', 'x-service']);
      assert.match(String(request.headers['x-service-delivery']), /^del_/);
      assert.equal(request.headers['user-agent'], 'Service-Webhooks/1.0');
    }
    assert.equal(r.stdout.filter((line) => line.includes('<-- [200] POST')).length, 2);

    // Nothing new: nothing forwarded again.
    await step(r, POLL);
    assert.equal(receiver.requests.length, 2);

    // The API goes away: the loop reports it and backs off (1 s, then 2 s)…
    const port = new URL(baseUrl).port;
    await server.close();
    await step(r, POLL, 1000);
    await step(r, 1000, 2000);
    assert.match(r.stderr.join('\n'), /cannot reach .*; trying again in 1 s/);
    assert.match(r.stderr.join('\n'), /trying again in 2 s/);
    // …events happen meanwhile…
    const missed = await emitEvent(h, tenant, 'verification.completed');
    // …and once it is back, the loop resumes where it stopped.
    ({ app: server } = await buildTestApp(h.store, h.clock, testConfig({ BASE_URL: baseUrl, PORT: port })));
    await server.listen({ port: Number(port), host: '127.0.0.1' });
    await step(r, 2000);
    assert.match(r.stderr.join('\n'), /Reconnected/);
    assert.equal(receiver.requests.length, 3);
    assert.equal(receiver.requests[2].headers['webhook-id'], missed.id);
    new StandardWebhook(secret).verify(receiver.requests[2].body.toString('utf8'), flatHeaders(receiver.requests[2]));

    assert.equal(await r.stop(), 0);
  });

  test('events tail --json prints each new event of the app as one JSON line', async () => {
    const r = await startCliAsleep('events', 'tail', '--json', '--app', tenant.appId);
    const first = await emitEvent(h, tenant, 'verification.completed');
    h.clock.advance(1); // ids of one millisecond sort at random; the listing is in id order
    const second = await emitEvent(h, tenant, 'consent.declined', { sessionId: 'sess_x' });
    const other = await h.bootstrap('sandbox');
    await emitEvent(h, other, 'verification.completed'); // another organization: never visible
    await step(r, POLL);
    assert.deepEqual(
      r.stdout.map((line) => JSON.parse(line) as unknown),
      [first, second],
    );
    assert.equal(await r.stop(), 0);
  });

  test('webhooks test sends a webhook.test delivery to the endpoint', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const r = startCli(['webhooks', 'test', endpoint.id, '--api-key', tenant.secret, '--base-url', baseUrl]);
    assert.equal(await within(10_000, r.exit, 'webhooks test'), 0);
    assert.match(r.stdout.join('\n'), new RegExp(`Sent webhook.test to ${endpoint.id}: delivery del_\\w+`));
    const worker = workerFor(h);
    assert.equal((await worker.runOnce()).succeeded, 1);
    assert.equal(receiver.requests[0].headers['x-service-event'], 'webhook.test');
  });

  test('a refused key stops listen with exit code 1; bad arguments are usage errors (2)', async () => {
    const refused = startCli([
      'listen',
      '--forward-to',
      receiver.url,
      '--api-key',
      'sk_test_nope',
      '--base-url',
      baseUrl,
    ]);
    assert.equal(await within(10_000, refused.exit, 'listen to give up'), 1);
    assert.match(refused.stderr.join('\n'), /401|API key|authenticat/i);
    assert.equal(await startCli(['listen', '--forward-to', receiver.url]).exit, 2);
    const noUrl = startCli(['listen', '--api-key', tenant.secret]);
    assert.equal(await noUrl.exit, 2);
    assert.match(noUrl.stderr.join('\n'), /--forward-to is required/);
    const badEvents = startCli(['listen', '--forward-to', receiver.url, '--api-key', tenant.secret, '--events', 'x.y']);
    assert.equal(await badEvents.exit, 2);
    assert.equal(await startCli(['webhooks', 'test', '--api-key', tenant.secret]).exit, 2);
  });

  /** Starts a following command and resolves once it is primed and asleep until its next poll. */
  async function startCliAsleep(...argv: string[]): Promise<RunningCli> {
    const r = cli(...argv);
    // The first timer set is the sleep after priming (nothing is forwarded while priming).
    const asleep = r.clock.nextTimer(POLL);
    await within(
      10_000,
      Promise.race([asleep, r.exit.then((code) => assert.fail(`exited ${code}: ${r.stderr.join('\n')}`))]),
      'the command to start following',
    );
    return r;
  }
});
