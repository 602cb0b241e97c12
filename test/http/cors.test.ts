import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, type CreatedSession } from '../support/sessions.ts';

const SHOP = 'https://shop.example';
const ELSEWHERE = 'https://evil.example';

describe('CORS_ORIGINS', () => {
  test('is a comma-separated list of origins, empty by default', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: ' https://shop.example , http://localhost:3000 ' }).corsOrigins, [
      'https://shop.example',
      'http://localhost:3000',
    ]);
    for (const bad of ['https://shop.example/', 'https://shop.example/path', 'shop.example', '*', 'ftp://x.example'])
      assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), ConfigError, bad);
  });
});

forEachDialect('CORS', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let session: CreatedSession;
  before(async () => {
    h = await startHarness(dialect, { CORS_ORIGINS: `${SHOP},http://localhost:3000` });
    tenant = await h.bootstrap('sandbox');
    session = await createSession(h, tenant);
  });
  after(() => h.close());

  const statusUrl = () => `/verification/v1/sessions/${session.sessionId}/status`;

  test('the public status answers an allowed origin, and no other', async () => {
    const allowed = await h.app.inject({ method: 'GET', url: statusUrl(), headers: { origin: SHOP } });
    assert.equal(allowed.statusCode, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], SHOP);
    assert.equal(allowed.headers['access-control-expose-headers'], 'x-request-id');
    assert.match(String(allowed.headers.vary), /Origin/);
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined);

    const other = await h.app.inject({ method: 'GET', url: statusUrl(), headers: { origin: ELSEWHERE } });
    assert.equal(other.statusCode, 200);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    assert.match(String(other.headers.vary), /Origin/, 'a cache must not serve one origin the answer of another');
  });

  test('wallet endpoints answer an allowed origin, errors included', async () => {
    const request = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${session.sessionId}/request?nonce=${encodeURIComponent(session.challengeNonce)}`,
      headers: { origin: SHOP },
    });
    assert.equal(request.statusCode, 200);
    assert.equal(request.headers['access-control-allow-origin'], SHOP);
    const wrongNonce = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      headers: { origin: SHOP },
      payload: { nonce: 'nonce_wrong', decision: 'approved' },
    });
    assert.equal(wrongNonce.statusCode, 404);
    assert.equal(wrongNonce.headers['access-control-allow-origin'], SHOP, 'the browser may read the error');
  });

  test('a preflight for a wallet POST from an allowed origin is granted', async () => {
    const res = await h.app.inject({
      method: 'OPTIONS',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      headers: {
        origin: SHOP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    assert.equal(res.statusCode, 204);
    assert.equal(res.headers['access-control-allow-origin'], SHOP);
    assert.equal(res.headers['access-control-allow-methods'], 'POST');
    assert.match(String(res.headers['access-control-allow-headers']), /content-type/);
    assert.equal(res.headers['access-control-max-age'], '600');
    assert.equal(res.headers.allow, 'POST, OPTIONS');
  });

  test('a preflight from another origin, or for a method the route does not answer, is not granted', async () => {
    const url = `/verification/v1/sessions/${session.sessionId}/consent`;
    for (const [origin, method] of [
      [ELSEWHERE, 'POST'],
      [SHOP, 'DELETE'],
    ]) {
      const res = await h.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin, 'access-control-request-method': method },
      });
      assert.equal(res.statusCode, 204, `${origin} ${method}`);
      assert.equal(res.headers['access-control-allow-origin'], undefined, `${origin} ${method}`);
      assert.equal(res.headers.allow, 'POST, OPTIONS', 'the ordinary OPTIONS answer');
    }
  });

  test('secret-key endpoints never send Access-Control-Allow-Origin, even to an allowed origin', async () => {
    const get = await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: { ...tenant.auth, origin: SHOP } });
    assert.equal(get.statusCode, 200);
    assert.equal(get.headers['access-control-allow-origin'], undefined);
    const session = await h.app.inject({
      method: 'GET',
      url: statusUrl().replace(/\/status$/, ''),
      headers: { ...tenant.auth, origin: SHOP },
    });
    assert.equal(session.statusCode, 200);
    assert.equal(session.headers['access-control-allow-origin'], undefined);
    for (const [url, method] of [
      ['/org/v1/apps', 'GET'],
      ['/verification/v1/sessions', 'POST'],
      ['/verification/v1/verify', 'POST'],
    ]) {
      const preflight = await h.app.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin: SHOP,
          'access-control-request-method': method,
          'access-control-request-headers': 'authorization',
        },
      });
      assert.equal(preflight.statusCode, 204, url);
      assert.equal(preflight.headers['access-control-allow-origin'], undefined, url);
      assert.equal(preflight.headers['access-control-allow-headers'], undefined, url);
    }
  });
});

forEachDialect('CORS off by default', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  test('no origin is allowed anywhere', async () => {
    const session = await createSession(h, tenant);
    const res = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${session.sessionId}/status`,
      headers: { origin: SHOP },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const preflight = await h.app.inject({
      method: 'OPTIONS',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      headers: { origin: SHOP, 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });
});
