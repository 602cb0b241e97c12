import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';

forEachDialect('HTTP conventions', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const createApp = (name: string, key?: string, auth = tenant.auth) =>
    h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: { ...auth, ...(key ? { 'idempotency-key': key } : {}) },
      payload: { name },
    });

  test('every response carries X-Request-Id, errors echo it in the body', async () => {
    const ok = await h.app.inject({ method: 'GET', url: '/healthz' });
    assert.match(String(ok.headers['x-request-id']), /^req_[0-9a-z]{26}$/);
    const unauth = await h.app.inject({ method: 'GET', url: '/org/v1/apps' });
    assert.equal(unauth.json().error.requestId, unauth.headers['x-request-id']);
    const missing = await h.app.inject({ method: 'GET', url: '/nope' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'not_found');
    assert.match(String(missing.headers['content-type']), /application\/json/);
    assert.equal(missing.json().error.requestId, missing.headers['x-request-id']);
  });

  test('Idempotency-Key: same key and body replays the first response', async () => {
    const first = await createApp('Idem A', 'idem-1');
    const second = await createApp('Idem A', 'idem-1');
    assert.equal(first.statusCode, 201);
    assert.equal(second.statusCode, 201);
    assert.equal(second.json().data.id, first.json().data.id);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    const list = (await h.app.inject({ method: 'GET', url: '/org/v1/apps?limit=100', headers: tenant.auth })).json()
      .data;
    assert.equal(list.filter((a: { name: string }) => a.name === 'Idem A').length, 1);
  });

  test('Idempotency-Key: same key with another body is a 409, and keys are scoped per organization', async () => {
    await createApp('Idem B', 'idem-2');
    const conflict = await createApp('Idem C', 'idem-2');
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().error.code, 'idempotency_conflict');
    const other = await h.bootstrap('sandbox');
    const otherOrg = await createApp('Idem C', 'idem-2', other.auth);
    assert.equal(otherOrg.statusCode, 201);
  });

  test('Idempotency-Key: remembered 24 hours, then the key can be used again', async () => {
    const first = await createApp('Idem D', 'idem-3');
    h.clock.advance(24 * 60 * 60 * 1000 + 1);
    const later = await createApp('Idem D', 'idem-3');
    assert.equal(later.statusCode, 201);
    assert.notEqual(later.json().data.id, first.json().data.id);
  });

  test('Idempotency-Key: errors are replayed too, malformed keys are rejected', async () => {
    const bad = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { ...tenant.auth, 'idempotency-key': 'idem-4' },
      payload: { appId: 'app_00000000000000000000000000', name: 'x', environment: 'sandbox' },
    });
    assert.equal(bad.statusCode, 404);
    const replay = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { ...tenant.auth, 'idempotency-key': 'idem-4' },
      payload: { appId: 'app_00000000000000000000000000', name: 'x', environment: 'sandbox' },
    });
    assert.equal(replay.statusCode, 404);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const tooLong = await createApp('x', 'k'.repeat(300));
    assert.equal(tooLong.statusCode, 400);
    assert.equal(tooLong.json().error.param, 'Idempotency-Key');
  });

  test('/healthz and /readyz answer; /readyz checks the database', async () => {
    assert.deepEqual((await h.app.inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await h.app.inject({ method: 'GET', url: '/readyz' })).json(), {
      status: 'ready',
      database: 'ok',
    });
  });

  test('/openapi.json is OpenAPI 3.1 with every route, bearer security and error responses', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    const routes = [
      ['get', '/org/v1/apps'],
      ['post', '/org/v1/apps'],
      ['get', '/org/v1/apps/{appId}'],
      ['patch', '/org/v1/apps/{appId}'],
      ['delete', '/org/v1/apps/{appId}'],
      ['post', '/org/v1/keys'],
      ['get', '/org/v1/keys'],
      ['delete', '/org/v1/keys/{keyId}'],
    ];
    for (const [method, path] of routes) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path} documented`);
      assert.deepEqual(op.security, [{ bearerAuth: [] }]);
      for (const status of ['400', '401', '500'])
        assert.ok(op.responses[status], `${method} ${path} documents ${status}`);
    }
    assert.ok(doc.paths['/healthz'].get);
    assert.ok(doc.components.securitySchemes.bearerAuth);
    assert.ok(doc.components.schemas.ErrorResponse);
  });

  test('/docs renders the API reference from the same document, with no external resources', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.ok(!/(src|href)="https?:\/\//.test(page.body), 'no external scripts or styles');
  });

  test('/docs works over plain http on any host: its policy does not upgrade requests to https', async () => {
    for (const url of ['/docs/', '/docs/static/swagger-initializer.js']) {
      const res = await h.app.inject({ method: 'GET', url, headers: { host: 'matricula.internal:8080' } });
      assert.equal(res.statusCode, 200, url);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'/, `${url} keeps a policy`);
      assert.doesNotMatch(csp, /upgrade-insecure-requests/, url);
    }
  });

  const allowOf = (res: { headers: Record<string, unknown> }) => String(res.headers.allow).split(', ').sort();

  test('an unknown method on a known path is a 405 method_not_allowed with Allow', async () => {
    const res = await h.app.inject({ method: 'PUT', url: '/org/v1/apps', headers: tenant.auth, payload: {} });
    assert.equal(res.statusCode, 405);
    const body = res.json();
    assert.equal(body.success, false);
    assert.equal(body.error.code, 'method_not_allowed');
    assert.equal(body.error.requestId, res.headers['x-request-id']);
    assert.match(body.error.message, /PUT is not allowed on \/org\/v1\/apps/);
    assert.deepEqual(allowOf(res), ['GET', 'HEAD', 'OPTIONS', 'POST']);

    // A path with parameters matches as the router matches it; without a key it is still a 405.
    const withParam = await h.app.inject({ method: 'POST', url: `/org/v1/apps/${tenant.appId}?x=1` });
    assert.equal(withParam.statusCode, 405);
    assert.deepEqual(allowOf(withParam), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH']);
    const postOnly = await h.app.inject({ method: 'GET', url: '/verification/v1/verify' });
    assert.equal(postOnly.statusCode, 405);
    assert.deepEqual(allowOf(postOnly), ['OPTIONS', 'POST']);
  });

  test('HEAD answers where GET does and is a bodiless 405 elsewhere; OPTIONS lists the methods', async () => {
    assert.equal((await h.app.inject({ method: 'HEAD', url: '/healthz' })).statusCode, 200);
    const head = await h.app.inject({ method: 'HEAD', url: '/verification/v1/verify' });
    assert.equal(head.statusCode, 405);
    assert.equal(head.body, '');
    assert.deepEqual(allowOf(head), ['OPTIONS', 'POST']);

    const options = await h.app.inject({ method: 'OPTIONS', url: '/org/v1/apps' });
    assert.equal(options.statusCode, 204);
    assert.deepEqual(allowOf(options), ['GET', 'HEAD', 'OPTIONS', 'POST']);
    assert.equal(options.body, '');
    assert.ok(options.headers['x-request-id']);
  });

  test('an unknown path is a 404 whatever the method, without Allow', async () => {
    for (const method of ['GET', 'PUT', 'OPTIONS'] as const) {
      const res = await h.app.inject({ method, url: '/org/v1/nope' });
      assert.equal(res.statusCode, 404, method);
      assert.equal(res.json().error.code, 'not_found');
      assert.equal(res.headers.allow, undefined);
    }
    const missingAsset = await h.app.inject({ method: 'GET', url: '/docs/static/no-such-file.js' });
    assert.equal(missingAsset.statusCode, 404, 'a route that answers "not found" itself stays a 404');
    assert.equal(missingAsset.headers.allow, undefined);
  });
});
