import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, getSession } from '../support/sessions.ts';

// The creation fields, plus openid4vpUri (issue 11: the same request for standard OpenID4VP wallets).
const CREATED_FIELDS = [
  'challengeNonce',
  'expiresAt',
  'openid4vpUri',
  'qrPayload',
  'sessionId',
  'status',
  'verificationUrl',
];

forEachDialect('verification sessions API', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite), {
    APP_SCHEME: 'matricula',
    PORTAL_URL: 'https://portal.example',
  });

  const post = (body: Record<string, unknown>, auth = tenant.auth) =>
    h.app.inject({ method: 'POST', url: '/verification/v1/sessions', headers: auth, payload: body });

  test('create returns exactly the creation fields', async () => {
    const res = await post({
      appId: tenant.appId,
      purpose: 'Student discount',
      requiredClaims: ['is_active_student', 'university_domain'],
      expiresInSeconds: 600,
    });
    assert.equal(res.statusCode, 201);
    const s = res.json().data;
    assert.deepEqual(Object.keys(s).sort(), CREATED_FIELDS);
    assert.match(s.sessionId, /^sess_[0-9a-z]{26}$/);
    assert.equal(s.status, 'pending');
    assert.match(s.challengeNonce, /^nonce_[A-Za-z0-9_-]{43}$/);
    assert.equal(s.qrPayload, `matricula://verify?session=${s.sessionId}&nonce=${s.challengeNonce}`);
    const qr = new URL(s.qrPayload);
    assert.equal(qr.protocol, 'matricula:');
    assert.equal(qr.host, 'verify');
    assert.equal(qr.searchParams.get('session'), s.sessionId);
    assert.equal(qr.searchParams.get('nonce'), s.challengeNonce);
    assert.equal(s.verificationUrl, `https://portal.example/verify/${s.sessionId}`);
    assert.equal(s.expiresAt, '2026-11-21T10:10:00.000Z');
    assert.match(s.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('default validity is 300 s; every session gets its own nonce', async () => {
    const a = await createSession(h, tenant);
    const b = await createSession(h, tenant);
    assert.equal(Date.parse(a.expiresAt) - h.clock.now().getTime(), 300_000);
    assert.notEqual(a.challengeNonce, b.challengeNonce);
    assert.notEqual(a.sessionId, b.sessionId);
  });

  test('get returns the state, creation fields and context; metadata and clientReference round-trip', async () => {
    const s = await createSession(h, tenant, { metadata: { orderId: '42' }, clientReference: 'cart-9' });
    const res = await getSession(h, tenant, s.sessionId);
    assert.equal(res.statusCode, 200);
    const data = res.json().data;
    for (const field of CREATED_FIELDS)
      assert.equal(data[field], (s as unknown as Record<string, unknown>)[field], field);
    assert.equal(data.appId, tenant.appId);
    assert.equal(data.environment, 'sandbox');
    assert.equal(data.purpose, 'Student discount at checkout');
    assert.deepEqual(data.requiredClaims, ['is_active_student', 'university_domain']);
    assert.deepEqual(data.metadata, { orderId: '42' });
    assert.equal(data.clientReference, 'cart-9');
    assert.equal(data.completedAt, null);
    assert.equal(data.result, undefined);
  });

  test('validation: expiresInSeconds 30..900, claims from the catalogue, purpose required, no unknown fields', async () => {
    const base = { appId: tenant.appId, purpose: 'x', requiredClaims: ['is_active_student'] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...base, expiresInSeconds: 901 }, 'expiresInSeconds'],
      [{ ...base, expiresInSeconds: 29 }, 'expiresInSeconds'],
      [{ ...base, expiresInSeconds: 60.5 }, 'expiresInSeconds'],
      [{ ...base, expiresInSeconds: '60' }, 'expiresInSeconds'],
      [{ ...base, requiredClaims: [] }, 'requiredClaims'],
      [{ ...base, requiredClaims: ['favourite_colour'] }, 'requiredClaims'],
      [{ ...base, requiredClaims: 'is_active_student' }, 'requiredClaims'],
      [{ appId: tenant.appId, requiredClaims: ['is_active_student'] }, 'purpose'],
      [{ ...base, purpose: '' }, 'purpose'],
      [{ purpose: 'x', requiredClaims: ['is_active_student'] }, 'appId'],
      [{ ...base, callbackUrl: 'https://x' }, 'callbackUrl'],
      [{ ...base, metadata: { a: 1 } }, 'metadata.a'],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.param, param, JSON.stringify(body));
    }
    const unknownClaim = await post({ ...base, requiredClaims: ['favourite_colour'] });
    assert.match(
      unknownClaim.json().error.message,
      /is_active_student, university_domain, academic_level, valid_until/,
    );
    const edge = await post({ ...base, expiresInSeconds: 900 });
    assert.equal(edge.statusCode, 201);
  });

  test("tenancy: another org's app or session is a 404; a live app from a sandbox key is a 403; an archived app is a 409", async () => {
    const other = await h.bootstrap('sandbox');
    const foreignApp = await post({ appId: other.appId, purpose: 'x', requiredClaims: ['is_active_student'] });
    assert.equal(foreignApp.statusCode, 404);
    const s = await createSession(h, tenant);
    for (const [method, url] of [
      ['GET', `/verification/v1/sessions/${s.sessionId}`],
      ['POST', `/verification/v1/sessions/${s.sessionId}/cancel`],
    ] as const) {
      const res = await h.app.inject({ method, url, headers: other.auth });
      assert.equal(res.statusCode, 404, `${method} ${url}`);
    }
    const list = (await h.app.inject({ method: 'GET', url: '/verification/v1/sessions', headers: other.auth })).json()
      .data;
    assert.ok(!list.some((x: { sessionId: string }) => x.sessionId === s.sessionId));

    const live = await h.bootstrap('live');
    const liveSession = await createSession(h, live);
    assert.equal((await getSession(h, live, liveSession.sessionId)).statusCode, 200);

    const archived = (
      await h.app.inject({
        method: 'POST',
        url: '/org/v1/apps',
        headers: tenant.auth,
        payload: { name: 'Soon archived' },
      })
    ).json().data;
    await h.app.inject({ method: 'DELETE', url: `/org/v1/apps/${archived.id}`, headers: tenant.auth });
    const onArchived = await post({ appId: archived.id, purpose: 'x', requiredClaims: ['is_active_student'] });
    assert.equal(onArchived.statusCode, 409);
  });

  test('unknown or malformed session ids are 404s; no key is 401', async () => {
    for (const id of ['sess_00000000000000000000000000', 'garbage']) {
      assert.equal((await getSession(h, tenant, id)).statusCode, 404);
    }
    const s = await createSession(h, tenant);
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `/verification/v1/sessions/${s.sessionId}` })).statusCode,
      401,
    );
    assert.equal(
      (await h.app.inject({ method: 'POST', url: '/verification/v1/sessions', payload: {} })).statusCode,
      401,
    );
  });

  test('list filters by app and status with cursor pagination', async () => {
    const t = await h.bootstrap('sandbox');
    const second = (
      await h.app.inject({ method: 'POST', url: '/org/v1/apps', headers: t.auth, payload: { name: 'Second' } })
    ).json().data;
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createSession(h, t));
    const onSecond = await createSession(h, t, { appId: second.id });
    await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${made[0].sessionId}/cancel`,
      headers: t.auth,
    });

    const all = await h.app.inject({ method: 'GET', url: '/verification/v1/sessions?limit=2', headers: t.auth });
    assert.equal(all.json().data.length, 2);
    assert.equal(all.json().pagination.hasMore, true);
    const rest = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions?limit=2&startingAfter=${all.json().pagination.nextCursor}`,
      headers: t.auth,
    });
    const ids = [...all.json().data, ...rest.json().data].map((x: { sessionId: string }) => x.sessionId);
    assert.equal(new Set(ids).size, 4);

    const byApp = (
      await h.app.inject({ method: 'GET', url: `/verification/v1/sessions?appId=${second.id}`, headers: t.auth })
    ).json().data;
    assert.deepEqual(
      byApp.map((x: { sessionId: string }) => x.sessionId),
      [onSecond.sessionId],
    );
    const cancelled = (
      await h.app.inject({ method: 'GET', url: '/verification/v1/sessions?status=cancelled', headers: t.auth })
    ).json().data;
    assert.deepEqual(
      cancelled.map((x: { sessionId: string }) => x.sessionId),
      [made[0].sessionId],
    );
    const badStatus = await h.app.inject({
      method: 'GET',
      url: '/verification/v1/sessions?status=done',
      headers: t.auth,
    });
    assert.equal(badStatus.statusCode, 400);
  });

  test('cancel: pending → cancelled with an event; cancelling again is 409 invalid_state', async () => {
    const s = await createSession(h, tenant);
    const res = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/cancel`,
      headers: tenant.auth,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.status, 'cancelled');
    const again = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/cancel`,
      headers: tenant.auth,
    });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().error.code, 'invalid_state');
    const events = (
      await h.app.inject({
        method: 'GET',
        url: `/org/v1/events?appId=${tenant.appId}&event=verification.cancelled`,
        headers: tenant.auth,
      })
    ).json().data;
    assert.ok(events.some((e: { data: { sessionId: string } }) => e.data.sessionId === s.sessionId));
  });
});
