import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { FixedWindowLimiter, MAX_CLIENTS_PER_WINDOW } from '../../src/domain/rate-limit.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, type CreatedSession } from '../support/sessions.ts';

/**
 * Abuse limits (issue 10): per client address on the routes without a key, per API key on the
 * others, a much tighter budget on /verify; per session on a session's public routes for the calls
 * that name it with its secret (issue 24: a campus behind one address). Time moves only with
 * the test clock: a limit resets when the clock reaches the next minute.
 */

const STUDENT = { university: 'sandbox-state.example', active: true, academicLevel: 'postgraduate', expired: false };

function assertLimited(res: LightMyRequestResponse, limit: number): void {
  assert.equal(res.statusCode, 429, res.body);
  const body = res.json();
  assert.equal(body.success, false);
  assert.equal(body.error.code, 'rate_limited');
  assert.ok(typeof body.error.requestId === 'string');
  assert.equal(res.headers['ratelimit-limit'], String(limit));
  assert.equal(res.headers['ratelimit-remaining'], '0');
  // The test clock stands at 10:00:00.000: the window ends in a minute.
  assert.equal(res.headers['retry-after'], '60');
  assert.equal(res.headers['ratelimit-reset'], '60');
}

forEachDialect('rate limits', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let neighbour: Tenant;
  let session: CreatedSession;
  before(async () => {
    h = await startHarness(dialect, {
      RATE_LIMIT_PUBLIC_PER_MINUTE: '3',
      RATE_LIMIT_HEAVY_PER_MINUTE: '2',
      RATE_LIMIT_API_KEY_PER_MINUTE: '4',
      RATE_LIMIT_SESSION_PER_MINUTE: '5',
      PROOF_WORKERS: '0',
    });
    tenant = await h.bootstrap('sandbox');
    neighbour = await h.bootstrap('sandbox');
    session = await createSession(h, tenant);
    // Every test starts at the beginning of a fresh window.
    h.clock.advance(60_000);
  });
  after(() => h.close());

  // A well-formed id of no session: what a scanner or a flood sends.
  const junk = (address: string) =>
    h.app.inject({
      method: 'GET',
      url: '/verification/v1/sessions/sess_00000000000000000000000000/status',
      remoteAddress: address,
    });
  const status = (address: string, s: CreatedSession = session) =>
    h.app.inject({ method: 'GET', url: `/verification/v1/sessions/${s.sessionId}/status`, remoteAddress: address });
  const apps = (who: Tenant, address = '198.51.100.7') =>
    h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: who.auth, remoteAddress: address });
  const build = (address: string, s: CreatedSession) =>
    h.app.inject({
      method: 'POST',
      url: '/wallet/sandbox/presentation',
      remoteAddress: address,
      payload: { sessionId: s.sessionId, nonce: s.challengeNonce, format: 'sd-jwt-vc', student: STUDENT },
    });

  describe('per client address, without a key', () => {
    test('the limit counts down in RateLimit-* headers, then a 429; other addresses are not affected', async () => {
      for (const remaining of ['2', '1', '0']) {
        const res = await junk('203.0.113.1');
        assert.equal(res.statusCode, 404, res.body);
        assert.equal(res.headers['ratelimit-limit'], '3');
        assert.equal(res.headers['ratelimit-remaining'], remaining);
      }
      assertLimited(await junk('203.0.113.1'), 3);
      assert.equal((await junk('203.0.113.2')).statusCode, 404);
      h.clock.advance(60_000);
    });

    test('the limit resets when the clock reaches the next window', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await junk('203.0.113.3')).statusCode, 404);
      assertLimited(await junk('203.0.113.3'), 3);
      h.clock.advance(59_999);
      assert.equal((await junk('203.0.113.3')).statusCode, 429, 'still the same window');
      h.clock.advance(1);
      const res = await junk('203.0.113.3');
      assert.equal(res.statusCode, 404);
      assert.equal(res.headers['ratelimit-remaining'], '2');
    });

    test('unknown paths count too: a scanner is cut off like any client', async () => {
      for (let i = 0; i < 3; i++)
        assert.equal((await h.app.inject({ url: '/nothing', remoteAddress: '203.0.113.4' })).statusCode, 404);
      assertLimited(await h.app.inject({ url: '/nothing', remoteAddress: '203.0.113.4' }), 3);
      h.clock.advance(60_000);
    });

    test('probes and metrics are never limited', async () => {
      for (let i = 0; i < 6; i++) {
        for (const url of ['/healthz', '/readyz', '/metrics']) {
          const res = await h.app.inject({ url, remoteAddress: '203.0.113.5' });
          assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
          assert.equal(res.headers['ratelimit-limit'], undefined);
        }
      }
    });
  });

  describe("a session's public routes", () => {
    test('calls naming a session with its nonce count per session, not per address', async () => {
      const s = await createSession(h, tenant);
      const other = await createSession(h, tenant);
      // Five a minute per session (RATE_LIMIT_SESSION_PER_MINUTE), although the address may send three.
      for (const remaining of ['4', '3', '2', '1', '0']) {
        const res = await build('203.0.113.10', s);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['ratelimit-limit'], '5');
        assert.equal(res.headers['ratelimit-remaining'], remaining);
      }
      const refused = await build('203.0.113.10', s);
      assertLimited(refused, 5);
      assert.match(refused.json().error.message, /this session/);
      // Another session from the same address has its own budget, and the address's is whole.
      assert.equal((await build('203.0.113.10', other)).statusCode, 200);
      for (let i = 0; i < 3; i++) assert.equal((await junk('203.0.113.10')).statusCode, 404);
      assertLimited(await junk('203.0.113.10'), 3);
      h.clock.advance(60_000);
    });

    test('a wrong nonce, a malformed body or an unknown session counts against the address', async () => {
      const s = await createSession(h, tenant);
      const wrong = { ...s, challengeNonce: 'nonce_wrong' };
      assert.equal((await build('203.0.113.12', wrong)).statusCode, 404);
      const malformed = await h.app.inject({
        method: 'POST',
        url: '/wallet/sandbox/presentation',
        remoteAddress: '203.0.113.12',
        payload: { sessionId: s.sessionId },
      });
      assert.equal(malformed.statusCode, 400);
      assert.equal((await junk('203.0.113.12')).statusCode, 404);
      // The address's budget is spent: even a good call from it is refused before anything is read.
      assertLimited(await build('203.0.113.12', s), 3);
      assert.equal((await build('203.0.113.13', s)).statusCode, 200, 'another address is not affected');
      h.clock.advance(60_000);
    });

    test('the page and its status count apart from the wallet: the session id alone cannot spend its budget', async () => {
      const s = await createSession(h, tenant);
      for (let i = 0; i < 5; i++) assert.equal((await status('203.0.113.14', s)).statusCode, 200);
      assertLimited(await status('203.0.113.14', s), 5);
      assert.equal((await build('203.0.113.14', s)).statusCode, 200, "the wallet's budget is whole");
      h.clock.advance(60_000);
    });
  });

  describe('the heavy routes', () => {
    test('/verification/v1/verify is limited per API key, not per address', async () => {
      const verify = (address: string) =>
        h.app.inject({
          method: 'POST',
          url: '/verification/v1/verify',
          headers: tenant.auth,
          remoteAddress: address,
          payload: { format: 'sd-jwt-vc', presentation: 'not-a-presentation', nonce: 'nonce_x' },
        });
      assert.notEqual((await verify('203.0.113.20')).statusCode, 429);
      assert.notEqual((await verify('203.0.113.21')).statusCode, 429);
      const third = await verify('203.0.113.22');
      assertLimited(third, 2);
      assert.match(third.json().error.message, /API key/);
      h.clock.advance(60_000);
    });
  });

  describe('per API key', () => {
    test("one tenant's flood leaves another tenant's budget whole, from the same address", async () => {
      for (let i = 0; i < 4; i++) assert.equal((await apps(tenant)).statusCode, 200);
      const refused = await apps(tenant);
      assertLimited(refused, 4);
      assert.match(refused.json().error.message, /API key/);
      // Another address does not help: the key is the client.
      assert.equal((await apps(tenant, '198.51.100.99')).statusCode, 429);
      const other = await apps(neighbour);
      assert.equal(other.statusCode, 200);
      assert.equal(other.headers['ratelimit-remaining'], '3');
      h.clock.advance(60_000);
      assert.equal((await apps(tenant)).statusCode, 200);
      h.clock.advance(60_000);
    });

    test('a request with a bad key is refused by authentication and counts against nobody', async () => {
      for (let i = 0; i < 6; i++) {
        const res = await h.app.inject({
          url: '/org/v1/apps',
          headers: { authorization: 'Bearer sk_test_nonsense' },
          remoteAddress: '198.51.100.8',
        });
        assert.equal(res.statusCode, 401);
      }
      assert.equal((await apps(tenant, '198.51.100.8')).headers['ratelimit-remaining'], '3');
      h.clock.advance(60_000);
    });
  });

  test('OpenAPI documents the 429 and its headers on limited operations, not on the probes', async () => {
    const doc = (await h.app.inject({ url: '/openapi.json' })).json();
    const limited = doc.paths['/org/v1/apps'].get.responses;
    assert.ok(limited['429'], 'GET /org/v1/apps documents 429');
    assert.ok(limited['429'].headers['Retry-After']);
    assert.ok(limited['200'].headers['RateLimit-Remaining']);
    assert.ok(doc.paths['/wallet/sandbox/presentation'].post.responses['429']);
    assert.equal(doc.paths['/healthz'].get.responses['429'], undefined);
  });
});

describe('rate limit configuration', () => {
  test('defaults, 0 to turn a limit off, and a clear error for a bad value', () => {
    const defaults = loadConfig({}).rateLimits;
    assert.deepEqual(defaults, {
      publicPerMinute: 300,
      heavyPerMinute: 30,
      apiKeyPerMinute: 1200,
      sessionPerMinute: 60,
    });
    assert.equal(loadConfig({ RATE_LIMIT_HEAVY_PER_MINUTE: '0' }).rateLimits.heavyPerMinute, 0);
    assert.throws(() => loadConfig({ RATE_LIMIT_PUBLIC_PER_MINUTE: 'lots' }), /RATE_LIMIT_PUBLIC_PER_MINUTE/);
  });

  test('TRUST_PROXY: off by default, true, a hop count, or addresses', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, ['10.0.0.0/8', '127.0.0.1']);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'the balancer' }), /TRUST_PROXY/);
  });

  test('behind a trusted proxy, X-Forwarded-For names the client', async () => {
    const h = await startHarness('sqlite', { RATE_LIMIT_PUBLIC_PER_MINUTE: '1', TRUST_PROXY: '127.0.0.1' });
    try {
      const get = (client: string) =>
        h.app.inject({ url: '/openapi.json', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': client } });
      assert.equal((await get('203.0.113.30')).statusCode, 200);
      assert.equal((await get('203.0.113.30')).statusCode, 429);
      assert.equal((await get('203.0.113.31')).statusCode, 200);
    } finally {
      await h.close();
    }
  });
});

describe('the fixed window', () => {
  test('a request given back frees its place in its own window only', () => {
    const clock = new TestClock(new Date('2026-01-01T10:00:00.000Z'));
    const limiter = new FixedWindowLimiter(clock, 2, 60_000);
    const at = clock.now();
    limiter.take('ip:a');
    assert.equal(limiter.take('ip:a').remaining, 0);
    limiter.giveBack('ip:a', at);
    assert.equal(limiter.take('ip:a').allowed, true, 'the place given back is taken again');
    assert.equal(limiter.take('ip:a').allowed, false);
    clock.advance(60_000);
    limiter.take('ip:a');
    limiter.giveBack('ip:a', at);
    assert.equal(limiter.take('ip:a').remaining, 0, 'a request of the last window gives nothing back in this one');
  });

  test('once a window counts its most clients, new ones share one count and those counted keep theirs', () => {
    const clock = new TestClock(new Date('2026-01-01T10:00:00.000Z'));
    const limiter = new FixedWindowLimiter(clock, 2, 60_000);
    for (let i = 0; i < MAX_CLIENTS_PER_WINDOW; i++) assert.equal(limiter.take(`ip:${i}`).allowed, true);
    assert.equal(limiter.take('ip:0').remaining, 0, 'a client counted before keeps its own count');
    assert.equal(limiter.take('ip:1').allowed, true);
    assert.equal(limiter.take('ip:new-1').remaining, 1, 'a new client counts in the shared overflow');
    assert.equal(limiter.take('ip:new-2').remaining, 0);
    assert.equal(limiter.take('ip:new-3').allowed, false, 'the flood of new clients is limited as a whole');
    clock.advance(60_000);
    assert.equal(limiter.take('ip:new-3').remaining, 1, 'the next window starts every count again');
  });
});
