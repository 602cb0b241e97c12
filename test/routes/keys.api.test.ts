import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSecret } from '../../src/domain/api-key-format.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';

const GENERATED_FIELDS = ['appId', 'createdAt', 'environment', 'id', 'keyHint', 'name', 'rawSecret'];

forEachDialect('API keys', (dialect) => {
  let h: Harness;
  let sandbox: Tenant;
  useHarness(dialect, (...suite) => ([h, sandbox] = suite));

  const generate = (tenant: Tenant, body: Record<string, unknown>) =>
    h.app.inject({ method: 'POST', url: '/org/v1/keys', headers: tenant.auth, payload: body });

  test('generate returns 201 with exactly the key fields and the raw secret once', async () => {
    const res = await generate(sandbox, { appId: sandbox.appId, name: 'checkout-server', environment: 'sandbox' });
    assert.equal(res.statusCode, 201);
    const key = res.json().data;
    assert.deepEqual(Object.keys(key).sort(), GENERATED_FIELDS);
    assert.match(key.id, /^key_/);
    assert.match(key.rawSecret, /^sk_test_/);
    assert.equal(parseSecret(key.rawSecret), 'sandbox');
    assert.equal(key.keyHint, `sk_test_${'*'.repeat(34)}${key.rawSecret.slice(-4)}`);
    const works = await h.app.inject({
      method: 'GET',
      url: '/org/v1/apps',
      headers: { authorization: `Bearer ${key.rawSecret}` },
    });
    assert.equal(works.statusCode, 200);
    const list = await h.app.inject({
      method: 'GET',
      url: `/org/v1/keys?appId=${sandbox.appId}`,
      headers: sandbox.auth,
    });
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(key.rawSecret));
    assert.ok(
      list.json().data.some((k: { id: string; keyHint: string }) => k.id === key.id && k.keyHint === key.keyHint),
    );
    for (const k of list.json().data) assert.equal(k.rawSecret, undefined);
  });

  test('live applications get sk_live_ keys', async () => {
    const live = await h.bootstrap('live');
    assert.match(live.secret, /^sk_live_/);
    const res = await generate(live, { appId: live.appId, name: 'prod', environment: 'live' });
    assert.equal(res.statusCode, 201);
    assert.match(res.json().data.rawSecret, /^sk_live_/);
  });

  test('environment differing from the app is a 400; a live app from a sandbox key is a 403', async () => {
    const mismatch = await generate(sandbox, { appId: sandbox.appId, name: 'x', environment: 'live' });
    assert.equal(mismatch.statusCode, 400);
    assert.equal(mismatch.json().error.param, 'environment');
    const live = await h.bootstrap('live');
    const sandboxKeyForLiveApp = await generate(sandbox, { appId: live.appId, name: 'x', environment: 'live' });
    assert.equal(sandboxKeyForLiveApp.statusCode, 404, 'another org: not revealed');
  });

  test('within one organization, a sandbox key cannot mint keys for its live app (403)', async () => {
    const live = await h.bootstrap('live');
    // A sandbox app in the same organization, created directly in the store the way the CLI would.
    const { insertNewApplication } = await import('../../src/services/applications.ts');
    const { issueKey } = await import('../../src/services/api-keys.ts');
    const sandboxApp = await insertNewApplication(h.store.db, { clock: h.clock }, live.orgId, {
      name: 'sbx',
      environment: 'sandbox',
    });
    const sandboxKey = await issueKey(h.store.db, { clock: h.clock }, sandboxApp, 'sbx');
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { authorization: `Bearer ${sandboxKey.rawSecret}` },
      payload: { appId: live.appId, name: 'escalate', environment: 'live' },
    });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'forbidden');
    const details = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/${live.appId}`,
      headers: { authorization: `Bearer ${sandboxKey.rawSecret}` },
    });
    assert.equal(details.statusCode, 403);
    const revokeLive = await h.app.inject({
      method: 'DELETE',
      url: `/org/v1/keys/${live.keyId}`,
      headers: { authorization: `Bearer ${sandboxKey.rawSecret}` },
    });
    assert.equal(revokeLive.statusCode, 403);
    // Listing apps shows both environments of the organization.
    const list = (
      await h.app.inject({
        method: 'GET',
        url: '/org/v1/apps',
        headers: { authorization: `Bearer ${sandboxKey.rawSecret}` },
      })
    ).json().data;
    assert.deepEqual(new Set(list.map((a: { environment: string }) => a.environment)), new Set(['sandbox', 'live']));
  });

  test('revoke: the next request with the key is 401 key_revoked; revoking again is 404', async () => {
    const created = (
      await generate(sandbox, { appId: sandbox.appId, name: 'short-lived', environment: 'sandbox' })
    ).json().data;
    const auth = { authorization: `Bearer ${created.rawSecret}` };
    assert.equal((await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: auth })).statusCode, 200);
    const revoked = await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${created.id}`, headers: sandbox.auth });
    assert.equal(revoked.statusCode, 200);
    assert.deepEqual(revoked.json().data, { id: created.id, revoked: true, revokedAt: h.clock.now().toISOString() });
    const after = await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: auth });
    assert.equal(after.statusCode, 401);
    assert.equal(after.json().error.code, 'key_revoked');
    assert.equal(after.headers['www-authenticate'], 'Bearer');
    const again = await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${created.id}`, headers: sandbox.auth });
    assert.equal(again.statusCode, 404);
    const list = (
      await h.app.inject({ method: 'GET', url: `/org/v1/keys?appId=${sandbox.appId}`, headers: sandbox.auth })
    ).json().data;
    assert.ok(!list.some((k: { id: string }) => k.id === created.id));
  });

  test('revoking through one instance is refused by a second instance at once', async () => {
    const second = await h.secondInstance();
    const created = (await generate(sandbox, { appId: sandbox.appId, name: 'multi', environment: 'sandbox' })).json()
      .data;
    const auth = { authorization: `Bearer ${created.rawSecret}` };
    assert.equal((await second.inject({ method: 'GET', url: '/org/v1/apps', headers: auth })).statusCode, 200);
    assert.equal(
      (await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${created.id}`, headers: sandbox.auth })).statusCode,
      200,
    );
    const res = await second.inject({ method: 'GET', url: '/org/v1/apps', headers: auth });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, 'key_revoked');
  });

  test('a key can revoke itself, and is refused right after', async () => {
    const created = (await generate(sandbox, { appId: sandbox.appId, name: 'self', environment: 'sandbox' })).json()
      .data;
    const auth = { authorization: `Bearer ${created.rawSecret}` };
    assert.equal(
      (await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${created.id}`, headers: auth })).statusCode,
      200,
    );
    assert.equal(
      (await h.app.inject({ method: 'GET', url: '/org/v1/keys', headers: auth })).json().error.code,
      'key_revoked',
    );
  });

  test("another organization's key is a 404 to revoke and invisible to list", async () => {
    const other = await h.bootstrap('sandbox');
    const res = await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${sandbox.keyId}`, headers: other.auth });
    assert.equal(res.statusCode, 404);
    const list = await h.app.inject({ method: 'GET', url: `/org/v1/keys?appId=${sandbox.appId}`, headers: other.auth });
    assert.equal(list.statusCode, 404);
    const all = (await h.app.inject({ method: 'GET', url: '/org/v1/keys', headers: other.auth })).json().data;
    assert.deepEqual(
      all.map((k: { id: string }) => k.id),
      [other.keyId],
    );
  });

  test('missing, garbage, wrong-scheme and checksum-broken bearer tokens are 401 unauthenticated', async () => {
    const broken = sandbox.secret.slice(0, -1) + (sandbox.secret.endsWith('a') ? 'b' : 'a');
    const headerSets: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Bearer garbage' },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { authorization: `Bearer ${broken}` },
      { authorization: `Bearer sk_test_${'A'.repeat(38)}` },
      { authorization: `Bearer ${sandbox.secret} extra` },
    ];
    for (const headers of headerSets) {
      for (const [method, url] of [
        ['GET', '/org/v1/apps'],
        ['POST', '/org/v1/keys'],
        ['DELETE', `/org/v1/keys/${sandbox.keyId}`],
        ['GET', `/org/v1/apps/${sandbox.appId}`],
      ] as const) {
        const res = await h.app.inject({
          method,
          url,
          headers,
          ...(method === 'POST' ? { payload: { appId: sandbox.appId, name: 'x', environment: 'sandbox' } } : {}),
        });
        assert.equal(res.statusCode, 401, `${method} ${url} ${JSON.stringify(headers)}`);
        assert.equal(res.json().error.code, 'unauthenticated');
      }
    }
  });

  test('bad key requests are 400s naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: 'x', environment: 'sandbox' }, 'appId'],
      [{ appId: sandbox.appId, environment: 'sandbox' }, 'name'],
      [{ appId: sandbox.appId, name: 'x' }, 'environment'],
      [{ appId: sandbox.appId, name: 'x', environment: 'test' }, 'environment'],
      [{ appId: sandbox.appId, name: ['x'], environment: 'sandbox' }, 'name'],
      [{ appId: sandbox.appId, name: 'x', environment: 'sandbox', scopes: ['all'] }, 'scopes'],
    ];
    for (const [body, param] of cases) {
      const res = await generate(sandbox, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.param, param);
    }
    const unknownApp = await generate(sandbox, {
      appId: 'app_00000000000000000000000000',
      name: 'x',
      environment: 'sandbox',
    });
    assert.equal(unknownApp.statusCode, 404);
    assert.equal(unknownApp.json().error.param, 'appId');
  });
});
