import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { TestClock } from '../../src/domain/clock.ts';
import type { SessionStatus } from '../../src/domain/session-state.ts';
import { SessionWatch } from '../../src/services/session-watch.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';

/**
 * The portal page's long poll (issue 24): the public status route with `wait` and `seen` answers
 * on a change (this process at once, another process at the next recheck), at expiry, or after the
 * wait with the status unchanged; waits are bounded. No sleeps: the test clock moves.
 */

forEachDialect('status long poll', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  const statusUrl = (id: string, query = '') => `/verification/v1/sessions/${id}/status${query}`;

  /** Starts a status request and yields until the server holds it (or it answered). */
  async function waiting(url: string, app = h.app, watch = h.services.sessionWatch) {
    const before = watch.open;
    let answered: LightMyRequestResponse | undefined;
    const response = app.inject({ url }).then((res) => (answered = res));
    for (let turns = 0; watch.open === before && !answered; turns++) {
      assert.ok(turns < 100_000, 'the request neither waited nor answered');
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { response, answered: () => answered };
  }

  test('wakes on consent and on completion, with the new status', async () => {
    const s = await createSession(h, tenant);
    const first = await waiting(statusUrl(s.sessionId, '?wait=25&seen=pending'));
    assert.equal(first.answered(), undefined, 'held while nothing changes');
    const metrics = (await h.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /^matricula_status_requests_waiting 1$/m, 'the operator sees it wait');
    assert.equal((await consent(h, s)).statusCode, 200);
    const woken = await first.response;
    assert.equal(woken.statusCode, 200);
    assert.equal(woken.json().data.status, 'consented');
    assert.equal(woken.json().data.now, h.clock.now().toISOString(), 'no time passed');

    const second = await waiting(statusUrl(s.sessionId, '?wait=25&seen=consented'));
    assert.equal(second.answered(), undefined);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', presentation)).statusCode, 200);
    const done = (await second.response).json().data;
    assert.equal(done.status, 'completed');
    assert.equal(done.verified, true);
    assert.equal(h.services.sessionWatch.open, 0);
  });

  test('answers with the current status once the wait ends, and at expiry', async () => {
    const s = await createSession(h, tenant, { expiresInSeconds: 40 });
    const held = await waiting(statusUrl(s.sessionId, '?wait=25'));
    h.clock.advance(24_999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(held.answered(), undefined, 'not before the wait ends');
    h.clock.advance(1);
    const res = (await held.response).json().data;
    assert.equal(res.status, 'pending');
    assert.equal(res.now, h.clock.now().toISOString());
    // 15 s are left: the expiry ends the next wait, not its 25 s.
    const next = await waiting(statusUrl(s.sessionId, '?wait=25&seen=pending'));
    h.clock.advance(15_000);
    assert.equal((await next.response).json().data.status, 'expired');
  });

  test('answers at once when the status already differs from seen, is final, or no wait is asked', async () => {
    const s = await createSession(h, tenant);
    const differs = await h.app.inject({ url: statusUrl(s.sessionId, '?wait=25&seen=consented') });
    assert.equal(differs.json().data.status, 'pending');
    assert.equal((await h.app.inject({ url: statusUrl(s.sessionId) })).json().data.status, 'pending');
    await consent(h, s, 'declined');
    const final = await h.app.inject({ url: statusUrl(s.sessionId, '?wait=25&seen=declined') });
    assert.equal(final.json().data.status, 'declined');
    assert.equal(h.services.sessionWatch.open, 0);
  });

  test('a change committed by another process is seen at the next recheck', async () => {
    const s = await createSession(h, tenant);
    const other = await h.secondInstance();
    const held = await waiting(statusUrl(s.sessionId, '?wait=25&seen=pending'));
    const changed = await other.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/consent`,
      payload: { nonce: s.challengeNonce, decision: 'approved' },
    });
    assert.equal(changed.statusCode, 200);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(held.answered(), undefined, 'this process learns of it only by reading');
    h.clock.advance(2_000);
    const res = await held.response;
    assert.equal(res.json().data.status, 'consented');
  });

  test('at most 4 wait on one session: one more is a 429 with Retry-After; a bad wait is a 400', async () => {
    const s = await createSession(h, tenant);
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await waiting(statusUrl(s.sessionId, '?wait=30')));
    const refused = await h.app.inject({ url: statusUrl(s.sessionId, '?wait=30') });
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.equal(refused.headers['retry-after'], '5');
    // Another session is not affected.
    const other = await createSession(h, tenant);
    const elsewhere = await waiting(statusUrl(other.sessionId, '?wait=30'));
    h.clock.advance(30_000);
    for (const w of [...held, elsewhere]) assert.equal((await w.response).statusCode, 200);
    assert.equal((await h.app.inject({ url: statusUrl(s.sessionId, '?wait=31') })).statusCode, 400);
    assert.equal((await h.app.inject({ url: statusUrl(s.sessionId, '?seen=finished') })).statusCode, 400);
  });

  test('a server that stops answers its waiting requests at once, with the current status', async () => {
    const own = await startHarness(dialect);
    try {
      const s = await createSession(own, await own.bootstrap('sandbox'));
      const held = await waiting(statusUrl(s.sessionId, '?wait=30'), own.app, own.services.sessionWatch);
      const closing = own.app.close();
      const res = await held.response;
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().data.status, 'pending');
      assert.equal(res.json().data.now, own.clock.now().toISOString(), 'no time passed');
      await closing;
    } finally {
      await own.close();
    }
  });

  test('an unknown session is a 404 at once, whatever the wait', async () => {
    const res = await h.app.inject({ url: statusUrl('sess_00000000000000000000000000', '?wait=30') });
    assert.equal(res.statusCode, 404);
  });
});

describe('SessionWatch', () => {
  const stored = new Map<string, SessionStatus>();
  const setup = (limits = { maxOpen: 3, maxPerSession: 2, recheckMs: 1000 }) => {
    const clock = new TestClock();
    let reads = 0;
    const watch = new SessionWatch(
      clock,
      async (ids) => {
        reads += 1;
        return new Map(ids.filter((id) => stored.has(id)).map((id) => [id, stored.get(id)!]));
      },
      limits,
    );
    return { clock, watch, reads: () => reads };
  };
  const flush = () => new Promise((resolve) => setImmediate(resolve));

  test('refuses beyond its limits per session and per process, and frees a place when a wait ends', async () => {
    const { clock, watch } = setup();
    const until = clock.now().getTime() + 10_000;
    const a1 = watch.wait('a', 'pending', until);
    assert.ok(a1);
    assert.ok(watch.wait('a', 'pending', until));
    assert.equal(watch.wait('a', 'pending', until), undefined, 'two per session');
    assert.ok(watch.wait('b', 'pending', until));
    assert.equal(watch.wait('c', 'pending', until), undefined, 'three in all');
    watch.changed('a');
    await a1;
    assert.equal(watch.open, 1);
    assert.ok(watch.wait('c', 'pending', until));
  });

  test('a client that goes away frees its place; closing wakes everyone and refuses new waits', async () => {
    const { clock, watch } = setup();
    const gone = new AbortController();
    const until = clock.now().getTime() + 10_000;
    const w = watch.wait('a', 'pending', until, gone.signal);
    assert.equal(watch.open, 1);
    gone.abort();
    await w;
    assert.equal(watch.open, 0);
    const x = watch.wait('b', 'pending', until)!;
    watch.close();
    await x;
    assert.equal(watch.open, 0);
    assert.equal(watch.closed, true);
    assert.equal(watch.wait('b', 'pending', until), undefined);
    assert.equal(clock.pendingTimers, 0, 'no timer left behind');
  });

  test('rechecks all watched sessions in one read, only while someone waits, and wakes only the changed', async () => {
    const { clock, watch, reads } = setup({ maxOpen: 10, maxPerSession: 2, recheckMs: 1000 });
    stored.set('a', 'pending');
    stored.set('b', 'pending');
    const until = clock.now().getTime() + 60_000;
    let aWoken = false;
    let bWoken = false;
    void watch.wait('a', 'pending', until)!.then(() => (aWoken = true));
    void watch.wait('b', 'pending', until)!.then(() => (bWoken = true));
    clock.advance(1000);
    await flush();
    assert.equal(reads(), 1, 'one read for both');
    assert.equal(aWoken || bWoken, false);
    stored.set('b', 'consented');
    clock.advance(1000);
    await flush();
    assert.equal(reads(), 2);
    assert.equal(bWoken, true);
    assert.equal(aWoken, false);
    watch.changed('a');
    await flush();
    assert.equal(clock.pendingTimers, 0, 'the last waiter gone, no recheck is left set');
    clock.advance(5000);
    await flush();
    assert.equal(reads(), 2, 'no reads while nobody waits');
  });
});
