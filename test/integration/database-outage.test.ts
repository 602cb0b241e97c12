import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';
import { sdJwtVcBuilder } from '../../src/proofs/sd-jwt-vc/builder.ts';
import { PG_SKIP_MESSAGE, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { ACTIVE_STUDENT } from '../support/sessions.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, waitForReceiver, within } from '../support/webhooks.ts';
import { spawnService, type WorkerProcess } from '../support/worker-process.ts';

/**
 * The service as an operator runs it (a real process, role `all`) while PostgreSQL misbehaves:
 * its connections terminated (by this test's application_name only: the server is shared), the
 * server gone (a TCP proxy in front of it closed, as in a restart), the server silent (the proxy
 * stops carrying bytes). No process may die; requests answer 503 with Retry-After in bounded time;
 * once the database is back, requests succeed and deliveries flow again, with nothing lost.
 */

const PG_URL = process.env.TEST_DATABASE_URL;
// The test's bounds on the service's own timeouts (set small below, so the test stays short).
const CONNECT_TIMEOUT_MS = 1_000;
const QUERY_TIMEOUT_MS = 2_000;
/** The longest a request may take while the database is down or silent: a timeout, and slack. */
const BOUNDED_MS = CONNECT_TIMEOUT_MS + QUERY_TIMEOUT_MS + 2_000;

interface Answer {
  status: number;
  body: { data?: Record<string, unknown>; error?: { code: string } };
  retryAfter: string | null;
  ms: number;
}

function describePostgres(name: string, body: () => void): void {
  if (PG_URL) describe(`${name} [postgres]`, body);
  else describe(`${name} [postgres]`, () => test(`${name} [postgres]`, { skip: PG_SKIP_MESSAGE }, () => {}));
}

describePostgres('PostgreSQL outages', () => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  let proxy: TcpProxy;
  let service: WorkerProcess | undefined;
  let applicationName: string;

  before(async () => {
    h = await startHarness('postgres');
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
    await createEndpoint(h, tenant, receiver.url, ['verification.completed']);
    const target = new URL(PG_URL!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  });
  afterEach(async () => {
    if (service && service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    service = undefined;
    await proxy.up();
  });
  after(async () => {
    await proxy.close();
    await receiver.close();
    await h.close();
  });

  /** The service's database URL: through the proxy, under an application_name of this test's own. */
  function serviceDatabaseUrl(): string {
    applicationName = `matricula_outage_${randomBytes(4).toString('hex')}`;
    const url = new URL(h.testStore.url);
    url.host = `127.0.0.1:${proxy.port}`;
    url.searchParams.set('application_name', applicationName);
    return url.toString();
  }

  /**
   * The service's BASE_URL: the audience its presentations name. It need not be the address it
   * listens on (PORT=0: the kernel picks one, read back with `service.port()`).
   */
  const baseUrl = 'http://matricula.test';

  function startService(): WorkerProcess {
    service = spawnService(
      serviceDatabaseUrl(),
      {
        HOST: '127.0.0.1',
        BASE_URL: baseUrl,
        DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        // The load below is one client address; this test is about the database, not rate limits.
        RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
        RATE_LIMIT_HEAVY_PER_MINUTE: '100000',
      },
      'all',
    );
    return service;
  }

  async function call(method: string, path: string, body?: unknown, auth = false): Promise<Answer> {
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${service!.port()}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(auth ? tenant.auth : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? JSON.parse(text) : {},
      retryAfter: res.headers.get('retry-after'),
      ms: performance.now() - started,
    };
  }

  /** A 503 as the issue asks: the error code, a Retry-After, and an answer in bounded time. */
  function assertUnavailable(answer: Answer, what: string): void {
    assert.equal(answer.status, 503, `${what}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.error?.code, 'service_unavailable', what);
    assert.ok(answer.retryAfter !== null && Number(answer.retryAfter) > 0, `${what}: Retry-After`);
    assert.ok(answer.ms < BOUNDED_MS, `${what}: answered after ${Math.round(answer.ms)} ms`);
  }

  /**
   * Sends one request as a careful client does: again while the answer is 503 (the database is
   * away), never on anything else. A 500 fails the test.
   */
  async function retrying(method: string, path: string, body?: unknown, auth = false): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const answer = await call(method, path, body, auth);
      if (answer.status !== 503) return answer;
      assertUnavailable(answer, `${method} ${path}`);
      assert.ok(attempt < 200, `${method} ${path} kept answering 503`);
    }
  }

  /** Creates a session, consents and presents: the id of a session the service said it completed. */
  async function completeOne(): Promise<string> {
    const created = await retrying(
      'POST',
      '/verification/v1/sessions',
      { appId: tenant.appId, purpose: 'Outage test', requiredClaims: ['is_active_student', 'university_domain'] },
      true,
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { sessionId, challengeNonce } = created.body.data as { sessionId: string; challengeNonce: string };
    const consented = await retrying('POST', `/verification/v1/sessions/${sessionId}/consent`, {
      nonce: challengeNonce,
      decision: 'approved',
    });
    // A consent whose answer was lost to a dropped connection may have committed: 409 then.
    assert.ok([200, 409].includes(consented.status), JSON.stringify(consented.body));
    const presentation = await sdJwtVcBuilder.present(ACTIVE_STUDENT, {
      nonce: challengeNonce,
      audience: baseUrl,
      now: new Date(),
      disclose: ['is_active_student', 'university_domain'],
    });
    const presented = await retrying('POST', `/verification/v1/sessions/${sessionId}/presentation`, {
      nonce: challengeNonce,
      format: 'sd-jwt-vc',
      presentation,
    });
    if (presented.status !== 200) {
      // Completed by an earlier try whose answer was lost: the session says so.
      const read = await retrying('GET', `/verification/v1/sessions/${sessionId}`, undefined, true);
      assert.equal((read.body.data as { status: string }).status, 'completed', JSON.stringify(presented.body));
    }
    return sessionId;
  }

  /** Terminates this test's own connections to the shared server, and only those. */
  async function terminateOwnConnections(): Promise<number> {
    const { rows } = await h.store.pgPool!.query<{ terminated: boolean }>(
      'select pg_terminate_backend(pid) as terminated from pg_stat_activity where application_name = $1',
      [applicationName],
    );
    return rows.length;
  }

  const deliveredSessions = () =>
    new Set(
      receiver.requests.map((r) => (JSON.parse(r.body.toString()) as { data: { sessionId: string } }).data.sessionId),
    );

  async function assertEveryCompletionDelivered(sessionIds: string[], ms: number): Promise<void> {
    await waitForReceiver(
      receiver,
      () => sessionIds.every((id) => deliveredSessions().has(id)),
      ms,
      `deliveries for all ${sessionIds.length} completed sessions`,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nservice output:\n${service?.output()}`);
    });
  }

  function assertAlive(): void {
    assert.equal(service!.child.exitCode, null, `the service exited:\n${service!.output()}`);
    assert.equal(service!.child.signalCode, null, `the service was killed:\n${service!.output()}`);
  }

  test('connections terminated mid-load: no process dies, nothing is lost', { timeout: 120_000 }, async () => {
    await within(30_000, startService().ready, 'the service to start');
    const completed: string[] = [];
    let terminations = 0;
    for (let i = 0; i < 12; i++) {
      // Every third session, the server drops every connection of the service (a restart, a
      // failover, an operator's pg_terminate_backend), pooled, idle and LISTEN alike.
      if (i % 3 === 1) {
        const count = await terminateOwnConnections();
        if (count > 0) terminations++;
      }
      completed.push(await completeOne());
      assertAlive();
    }
    assert.ok(terminations >= 3, `connections terminated ${terminations} times`);
    await assertEveryCompletionDelivered(completed, 15_000);
    assertAlive();
    const ready = await call('GET', '/readyz');
    assert.equal(ready.status, 200);
    // The lost connections are reported, not thrown.
    assert.match(service!.output(), /lost a database connection/);
  });

  test(
    'PostgreSQL gone: 503 with Retry-After, then 2xx and deliveries within 5 s of its return',
    {
      timeout: 120_000,
    },
    async () => {
      await within(30_000, startService().ready, 'the service to start');
      const before = await completeOne();
      await assertEveryCompletionDelivered([before], 15_000);

      await proxy.down();
      for (let i = 0; i < 3; i++) {
        assertUnavailable(
          await call('POST', '/verification/v1/sessions', { appId: tenant.appId, purpose: 'Down' }, true),
          'create while down',
        );
        assertUnavailable(await call('GET', '/readyz'), 'readyz while down');
      }
      assertAlive();

      await proxy.up();
      const backAt = performance.now();
      let answer: Answer;
      do answer = await call('GET', '/readyz');
      while (answer.status === 503 && performance.now() - backAt < 5_000);
      assert.equal(answer.status, 200, `readyz 5 s after the database came back: ${JSON.stringify(answer.body)}`);
      const afterId = await completeOne();
      await assertEveryCompletionDelivered([afterId], 5_000);
      assertAlive();
    },
  );

  test('PostgreSQL silent: requests answer 503 within the timeouts, never hang', { timeout: 120_000 }, async () => {
    await within(30_000, startService().ready, 'the service to start');
    const warm = await completeOne();
    await assertEveryCompletionDelivered([warm], 15_000);

    proxy.silent();
    // A pooled connection's query gets no answer (the query deadline closes it); a new
    // connection is accepted and never answered (the connect timeout gives up).
    for (let i = 0; i < 3; i++) {
      assertUnavailable(
        await call('GET', `/verification/v1/sessions/${warm}`, undefined, true),
        'read while the database is silent',
      );
    }
    assertUnavailable(await call('GET', '/readyz'), 'readyz while silent');
    assertAlive();

    await proxy.up();
    const afterId = await completeOne();
    await assertEveryCompletionDelivered([afterId], 5_000);
  });

  test('started while PostgreSQL is down: waits, then comes up', { timeout: 120_000 }, async () => {
    await proxy.down();
    const starting = startService();
    const waiting = async () => {
      while ((starting.output().match(/the database is unreachable; waiting for it/g) ?? []).length < 2)
        await new Promise((resolve) => starting.child.stdout!.once('data', resolve));
    };
    await within(30_000, waiting(), 'the service to report that it waits for the database');
    assertAlive();
    await proxy.up();
    await within(30_000, starting.ready, 'the service to start once the database is back');
    const ready = await call('GET', '/readyz');
    assert.equal(ready.status, 200);
  });
});
