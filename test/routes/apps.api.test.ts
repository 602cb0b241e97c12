import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';

const LIST_FIELDS = ['createdAt', 'environment', 'id', 'keyCount', 'name', 'status', 'webhookCount'];

forEachDialect('applications API', (dialect) => {
  let h: Harness;
  let sandbox: Tenant;
  useHarness(dialect, (...suite) => ([h, sandbox] = suite));

  test('create returns 201 with the list-entry fields', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: sandbox.auth,
      payload: { name: 'Campus shop', description: 'POS' },
    });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.equal(body.success, true);
    assert.deepEqual(Object.keys(body.data).sort(), LIST_FIELDS);
    assert.match(body.data.id, /^app_[0-9a-z]{26}$/);
    assert.equal(body.data.environment, 'sandbox');
    assert.equal(body.data.status, 'active');
    assert.equal(body.data.createdAt, '2026-11-21T10:00:00.000Z');
    assert.equal(body.data.keyCount, 0);
  });

  test('list shows active apps of the organization with exactly the list fields, paginated', async () => {
    const tenant = await h.bootstrap('sandbox');
    for (let i = 0; i < 4; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/org/v1/apps',
        headers: tenant.auth,
        payload: { name: `App ${i}` },
      });
      assert.equal(res.statusCode, 201);
    }
    const first = await h.app.inject({ method: 'GET', url: '/org/v1/apps?limit=3', headers: tenant.auth });
    assert.equal(first.statusCode, 200);
    const page1 = first.json();
    assert.equal(page1.data.length, 3);
    assert.deepEqual(page1.pagination.hasMore, true);
    for (const entry of page1.data) assert.deepEqual(Object.keys(entry).sort(), LIST_FIELDS);
    const second = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps?limit=3&startingAfter=${page1.pagination.nextCursor}`,
      headers: tenant.auth,
    });
    const page2 = second.json();
    assert.equal(page2.data.length, 2);
    assert.equal(page2.pagination.hasMore, false);
    assert.equal(page2.pagination.nextCursor, null);
    const ids = [...page1.data, ...page2.data].map((a: { id: string }) => a.id);
    assert.equal(new Set(ids).size, 5);
    assert.ok(ids.includes(tenant.appId));
    const bootstrapApp = [...page1.data, ...page2.data].find((a: { id: string }) => a.id === tenant.appId);
    assert.equal(bootstrapApp.keyCount, 1);
  });

  test('details carry description, updatedAt, key hints and metrics; never a secret', async () => {
    const res = await h.app.inject({ method: 'GET', url: `/org/v1/apps/${sandbox.appId}`, headers: sandbox.auth });
    assert.equal(res.statusCode, 200);
    const data = res.json().data;
    assert.equal(data.id, sandbox.appId);
    assert.equal(data.description, null);
    assert.equal(typeof data.updatedAt, 'string');
    assert.equal(data.keys.length, 1);
    assert.deepEqual(Object.keys(data.keys[0]).sort(), ['createdAt', 'environment', 'id', 'keyHint', 'name']);
    assert.ok(!res.body.includes(sandbox.secret));
    assert.equal(data.metrics.sessions.total, 0);
  });

  test('patch renames and describes; archive removes from the list and stops its keys', async () => {
    const tenant = await h.bootstrap('sandbox');
    const created = (
      await h.app.inject({ method: 'POST', url: '/org/v1/apps', headers: tenant.auth, payload: { name: 'Temp' } })
    ).json().data;
    h.clock.advance(1000);
    const patched = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/apps/${created.id}`,
      headers: tenant.auth,
      payload: { name: 'Renamed', description: 'notes' },
    });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().data.name, 'Renamed');
    assert.equal(patched.json().data.description, 'notes');
    assert.notEqual(patched.json().data.updatedAt, created.createdAt);

    const key = (
      await h.app.inject({
        method: 'POST',
        url: '/org/v1/keys',
        headers: tenant.auth,
        payload: { appId: created.id, name: 'pos', environment: 'sandbox' },
      })
    ).json().data;
    const archived = await h.app.inject({ method: 'DELETE', url: `/org/v1/apps/${created.id}`, headers: tenant.auth });
    assert.equal(archived.statusCode, 200);
    assert.equal(archived.json().data.status, 'archived');
    const list = (await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: tenant.auth })).json().data;
    assert.ok(!list.some((a: { id: string }) => a.id === created.id));
    const withArchivedKey = await h.app.inject({
      method: 'GET',
      url: '/org/v1/apps',
      headers: { authorization: `Bearer ${key.rawSecret}` },
    });
    assert.equal(withArchivedKey.statusCode, 401);
    assert.equal(withArchivedKey.json().error.code, 'unauthenticated');
    const details = await h.app.inject({ method: 'GET', url: `/org/v1/apps/${created.id}`, headers: tenant.auth });
    assert.equal(details.json().data.status, 'archived');
    const patchArchived = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/apps/${created.id}`,
      headers: tenant.auth,
      payload: { name: 'x' },
    });
    assert.equal(patchArchived.statusCode, 409);
    assert.equal(patchArchived.json().error.code, 'invalid_state');
  });

  test("another organization's app is a 404 for every verb", async () => {
    const other = await h.bootstrap('sandbox');
    for (const [method, payload] of [
      ['GET', undefined],
      ['PATCH', { name: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await h.app.inject({
        method,
        url: `/org/v1/apps/${sandbox.appId}`,
        headers: other.auth,
        ...(payload ? { payload } : {}),
      });
      assert.equal(res.statusCode, 404, method);
      assert.equal(res.json().error.code, 'not_found');
    }
    const list = (await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: other.auth })).json().data;
    assert.ok(!list.some((a: { id: string }) => a.id === sandbox.appId));
  });

  test('a sandbox key cannot create or touch live applications (403), and the reverse', async () => {
    const live = await h.bootstrap('live');
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: sandbox.auth,
      payload: { name: 'Live app', environment: 'live' },
    });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'forbidden');
    // Same organization, other environment: create a sandbox key in the live tenant's org via a sandbox app.
    const liveSandboxApp = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: live.auth,
      payload: { name: 'Sandbox of live org', environment: 'sandbox' },
    });
    assert.equal(liveSandboxApp.statusCode, 403);
    const liveOwn = await h.app.inject({ method: 'GET', url: `/org/v1/apps/${live.appId}`, headers: live.auth });
    assert.equal(liveOwn.statusCode, 200);
    assert.equal(liveOwn.json().data.environment, 'live');
  });

  test('bad input gets the error envelope with the right status', async () => {
    const cases: Array<{ payload: string; status: number; param?: string; contentType?: string }> = [
      { payload: '{"name": ', status: 400 },
      { payload: '[]', status: 400 },
      { payload: '{}', status: 400, param: 'name' },
      { payload: '{"name": 42}', status: 400, param: 'name' },
      { payload: '{"name": ""}', status: 400, param: 'name' },
      { payload: '{"name": "x", "environment": "prod"}', status: 400, param: 'environment' },
      { payload: '{"name": "x", "color": "red"}', status: 400, param: 'color' },
      { payload: '{"name": "x", "__proto__": {"a": 1}}', status: 400 },
      { payload: 'name=x', status: 415, contentType: 'application/x-www-form-urlencoded' },
      { payload: JSON.stringify({ name: 'x'.repeat(70000) }), status: 413 },
    ];
    for (const c of cases) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/org/v1/apps',
        headers: { ...sandbox.auth, 'content-type': c.contentType ?? 'application/json' },
        payload: c.payload,
      });
      assert.equal(res.statusCode, c.status, c.payload.slice(0, 40));
      const body = res.json();
      assert.equal(body.success, false);
      assert.equal(typeof body.error.message, 'string');
      assert.match(body.error.requestId, /^req_/);
      if (c.param) assert.equal(body.error.param, c.param, c.payload);
    }
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: sandbox.auth,
      payload: { name: 'x', color: 'red' },
    });
    assert.equal(unknown.json().error.message, "Unknown field 'color'.");
  });

  test('unknown ids and malformed ids are 404s, never 500s', async () => {
    for (const id of ['app_00000000000000000000000000', 'nonsense', 'app_' + 'z'.repeat(60)]) {
      const res = await h.app.inject({ method: 'GET', url: `/org/v1/apps/${id}`, headers: sandbox.auth });
      assert.equal(res.statusCode, 404, id);
      assert.equal(res.json().error.code, 'not_found');
    }
    const tooLong = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/${'a'.repeat(100)}`,
      headers: sandbox.auth,
    });
    assert.equal(tooLong.statusCode, 400);
    const badQuery = await h.app.inject({ method: 'GET', url: '/org/v1/apps?limit=500', headers: sandbox.auth });
    assert.equal(badQuery.statusCode, 400);
    assert.equal(badQuery.json().error.param, 'limit');
    const unknownQuery = await h.app.inject({ method: 'GET', url: '/org/v1/apps?color=red', headers: sandbox.auth });
    assert.equal(unknownQuery.statusCode, 400);
  });
});
