import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { EVENT_TYPES } from '../../src/domain/events.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createEndpoint } from '../support/webhooks.ts';

const ENDPOINT_FIELDS = [
  'appId',
  'createdAt',
  'description',
  'disabledReason',
  'enabled',
  'environment',
  'events',
  'id',
  'previousSecretExpiresAt',
  'updatedAt',
  'url',
];
const URL_OK = 'http://127.0.0.1:9/hooks';

forEachDialect('webhook endpoints API', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('create returns 201 with the record and its whsec_ secret; reads never show the secret', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/webhooks',
      headers: tenant.auth,
      payload: {
        appId: tenant.appId,
        url: URL_OK,
        events: ['verification.completed', 'consent.approved', 'verification.completed'],
        description: 'orders',
      },
    });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json().data;
    assert.deepEqual(Object.keys(created).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.match(created.id, /^whk_[0-9a-z]{26}$/);
    assert.match(created.secret, /^whsec_[0-9A-Za-z]{44}$/);
    assert.deepEqual(created.events, ['verification.completed', 'consent.approved']);
    assert.equal(created.enabled, true);
    assert.equal(created.disabledReason, null);
    assert.equal(created.environment, 'sandbox');
    assert.equal(created.description, 'orders');

    const one = await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${created.id}`, headers: tenant.auth });
    assert.equal(one.statusCode, 200);
    assert.deepEqual(Object.keys(one.json().data).sort(), ENDPOINT_FIELDS);
    assert.ok(!one.body.includes(created.secret));
    const list = await h.app.inject({
      method: 'GET',
      url: `/org/v1/webhooks?appId=${tenant.appId}`,
      headers: tenant.auth,
    });
    assert.equal(list.statusCode, 200);
    assert.ok(list.json().data.some((e: { id: string }) => e.id === created.id));
    assert.ok(!list.body.includes(created.secret));
  });

  test('webhookCount of the application counts its endpoints', async () => {
    const t = await h.bootstrap('sandbox');
    await createEndpoint(h, t, URL_OK);
    await createEndpoint(h, t, URL_OK, ['consent.declined']);
    const list = (await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: t.auth })).json().data;
    assert.equal(list.find((a: { id: string }) => a.id === t.appId).webhookCount, 2);
    const details = (await h.app.inject({ method: 'GET', url: `/org/v1/apps/${t.appId}`, headers: t.auth })).json()
      .data;
    assert.equal(details.webhookCount, 2);
  });

  test('unknown event names and bad bodies are 400s naming the field', async () => {
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/org/v1/webhooks',
      headers: tenant.auth,
      payload: { appId: tenant.appId, url: URL_OK, events: ['verification.done'] },
    });
    assert.equal(unknown.statusCode, 400);
    assert.equal(unknown.json().error.param, 'events');
    assert.match(unknown.json().error.message, /"verification\.done"/);
    for (const name of EVENT_TYPES) assert.ok(unknown.json().error.message.includes(name));

    const cases: Array<[Record<string, unknown>, string]> = [
      [{ appId: tenant.appId, url: URL_OK, events: [] }, 'events'],
      [{ appId: tenant.appId, events: ['consent.approved'] }, 'url'],
      [{ appId: tenant.appId, url: URL_OK, events: ['consent.approved'], secret: 'whsec_mine' }, 'secret'],
      [{ appId: tenant.appId, url: 'not a url', events: ['consent.approved'] }, 'url'],
    ];
    for (const [payload, param] of cases) {
      const res = await h.app.inject({ method: 'POST', url: '/org/v1/webhooks', headers: tenant.auth, payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.param, param);
    }
  });

  test('patch changes url, events, description and enabled; enabling clears the reason', async () => {
    const endpoint = await createEndpoint(h, tenant, URL_OK);
    h.clock.advance(1000);
    const disabled = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { enabled: false },
    });
    assert.equal(disabled.statusCode, 200);
    assert.equal(disabled.json().data.enabled, false);
    assert.equal(disabled.json().data.disabledReason, 'manual');
    assert.equal(disabled.json().data.updatedAt, h.clock.now().toISOString());

    const patched = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { url: 'http://127.0.0.1:10/new', events: ['consent.declined'], description: null, enabled: true },
    });
    assert.equal(patched.statusCode, 200);
    const data = patched.json().data;
    assert.deepEqual(
      [data.url, data.events, data.description, data.enabled, data.disabledReason],
      ['http://127.0.0.1:10/new', ['consent.declined'], null, true, null],
    );
    const read = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}`, headers: tenant.auth })
    ).json().data;
    assert.deepEqual(read, data);

    const empty = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: {},
    });
    assert.equal(empty.statusCode, 400);
    const bad = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { events: ['nope'] },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.param, 'events');
  });

  test('rotation returns a new secret once and keeps the old one valid for 24 h', async () => {
    const endpoint = await createEndpoint(h, tenant, URL_OK);
    const res = await h.app.inject({
      method: 'POST',
      url: `/org/v1/webhooks/${endpoint.id}/rotate-secret`,
      headers: tenant.auth,
    });
    assert.equal(res.statusCode, 200);
    const rotated = res.json().data;
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, endpoint.secret);
    assert.equal(rotated.previousSecretExpiresAt, new Date(h.clock.now().getTime() + 24 * 3600 * 1000).toISOString());
    const read = await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}`, headers: tenant.auth });
    assert.ok(!read.body.includes(rotated.secret) && !read.body.includes(endpoint.secret));
  });

  test('an idempotent replay of creation or rotation does not return the secret again', async () => {
    const payload = { appId: tenant.appId, url: URL_OK, events: ['consent.approved'] };
    const headers = { ...tenant.auth, 'idempotency-key': 'whk-create-1' };
    const first = await h.app.inject({ method: 'POST', url: '/org/v1/webhooks', headers, payload });
    const replay = await h.app.inject({ method: 'POST', url: '/org/v1/webhooks', headers, payload });
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.json().data.id, first.json().data.id);
    assert.match(first.json().data.secret, /^whsec_/);
    assert.equal(replay.json().data.secret, null);

    const rotateHeaders = { ...tenant.auth, 'idempotency-key': 'whk-rotate-1' };
    const url = `/org/v1/webhooks/${first.json().data.id}/rotate-secret`;
    const rotated = await h.app.inject({ method: 'POST', url, headers: rotateHeaders });
    const rotatedAgain = await h.app.inject({ method: 'POST', url, headers: rotateHeaders });
    assert.match(rotated.json().data.secret, /^whsec_/);
    assert.equal(rotatedAgain.json().data.secret, null);
    const stored = await h.store.db.selectFrom('idempotency_keys').select('response_body').execute();
    for (const row of stored) {
      assert.ok(!row.response_body?.includes(first.json().data.secret));
      assert.ok(!row.response_body?.includes(rotated.json().data.secret));
    }
  });

  test('delete removes the endpoint and its deliveries; it is then a 404', async () => {
    const t = await h.bootstrap('sandbox');
    const endpoint = await createEndpoint(h, t, URL_OK, ['webhook.test']);
    const test = await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/test`, headers: t.auth });
    assert.equal(test.statusCode, 201);
    const del = await h.app.inject({ method: 'DELETE', url: `/org/v1/webhooks/${endpoint.id}`, headers: t.auth });
    assert.equal(del.statusCode, 200);
    assert.deepEqual(del.json().data, { id: endpoint.id, deleted: true, deletedAt: h.clock.now().toISOString() });
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}`, headers: t.auth })).statusCode,
      404,
    );
    assert.equal(
      (await h.app.inject({ method: 'DELETE', url: `/org/v1/webhooks/${endpoint.id}`, headers: t.auth })).statusCode,
      404,
    );
    const left = await h.store.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    assert.deepEqual(left, []);
    const apps = (await h.app.inject({ method: 'GET', url: '/org/v1/apps', headers: t.auth })).json().data;
    assert.equal(apps.find((a: { id: string }) => a.id === t.appId).webhookCount, 0);
  });

  test('test event: a pending webhook.test delivery to this endpoint, listed in its log', async () => {
    const t = await h.bootstrap('sandbox');
    const endpoint = await createEndpoint(h, t, URL_OK, ['consent.approved']);
    const other = await createEndpoint(h, t, URL_OK, ['webhook.test']);
    const res = await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/test`, headers: t.auth });
    assert.equal(res.statusCode, 201);
    const delivery = res.json().data;
    assert.match(delivery.id, /^del_/);
    assert.deepEqual(
      {
        event: delivery.event,
        status: delivery.status,
        attemptCount: delivery.attemptCount,
        nextAttemptAt: delivery.nextAttemptAt,
        attempts: delivery.attempts,
      },
      {
        event: 'webhook.test',
        status: 'pending',
        attemptCount: 0,
        nextAttemptAt: h.clock.now().toISOString(),
        attempts: [],
      },
    );
    const event = (
      await h.app.inject({ method: 'GET', url: `/org/v1/events/${delivery.eventId}`, headers: t.auth })
    ).json().data;
    assert.equal(event.event, 'webhook.test');
    assert.equal(event.data.endpointId, endpoint.id);
    const log = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}/deliveries`, headers: t.auth })
    ).json();
    assert.deepEqual(
      log.data.map((d: { id: string }) => d.id),
      [delivery.id],
    );
    // Targeted: the other endpoint, though subscribed to webhook.test, gets nothing.
    const otherLog = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${other.id}/deliveries`, headers: t.auth })
    ).json();
    assert.deepEqual(otherLog.data, []);
    const one = await h.app.inject({
      method: 'GET',
      url: `/org/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}`,
      headers: t.auth,
    });
    assert.deepEqual(one.json().data, delivery);
    const wrongEndpoint = await h.app.inject({
      method: 'GET',
      url: `/org/v1/webhooks/${other.id}/deliveries/${delivery.id}`,
      headers: t.auth,
    });
    assert.equal(wrongEndpoint.statusCode, 404);
  });

  test('a disabled endpoint refuses test events and manual retries (409)', async () => {
    const t = await h.bootstrap('sandbox');
    const endpoint = await createEndpoint(h, t, URL_OK);
    const delivery = (
      await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/test`, headers: t.auth })
    ).json().data;
    await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: t.auth,
      payload: { enabled: false },
    });
    const test = await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/test`, headers: t.auth });
    assert.equal(test.statusCode, 409);
    assert.equal(test.json().error.code, 'invalid_state');
    const retry = await h.app.inject({
      method: 'POST',
      url: `/org/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`,
      headers: t.auth,
    });
    assert.equal(retry.statusCode, 409);
  });

  test('another organization cannot see or touch an endpoint (404); another environment gets 403', async () => {
    const endpoint = await createEndpoint(h, tenant, URL_OK);
    const stranger = await h.bootstrap('sandbox');
    const paths: Array<[string, string]> = [
      ['GET', `/org/v1/webhooks/${endpoint.id}`],
      ['PATCH', `/org/v1/webhooks/${endpoint.id}`],
      ['DELETE', `/org/v1/webhooks/${endpoint.id}`],
      ['POST', `/org/v1/webhooks/${endpoint.id}/rotate-secret`],
      ['POST', `/org/v1/webhooks/${endpoint.id}/test`],
      ['GET', `/org/v1/webhooks/${endpoint.id}/deliveries`],
    ];
    for (const [method, url] of paths) {
      const payload = method === 'PATCH' ? { enabled: false } : undefined;
      const res = await h.app.inject({ method: method as 'GET', url, headers: stranger.auth, payload });
      assert.equal(res.statusCode, 404, `${method} ${url}`);
      assert.equal(res.json().error.code, 'not_found');
    }
    const create = await h.app.inject({
      method: 'POST',
      url: '/org/v1/webhooks',
      headers: stranger.auth,
      payload: { appId: tenant.appId, url: URL_OK, events: ['consent.approved'] },
    });
    assert.equal(create.statusCode, 404);
    const list = (await h.app.inject({ method: 'GET', url: '/org/v1/webhooks', headers: stranger.auth })).json().data;
    assert.ok(!list.some((e: { id: string }) => e.id === endpoint.id));

    const unauthenticated = await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}` });
    assert.equal(unauthenticated.statusCode, 401);
  });

  test('an endpoint of the other environment of the same organization is a 403', async () => {
    const t = await h.bootstrap('sandbox');
    const sandboxEndpoint = await createEndpoint(h, t, URL_OK);
    const liveApp = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: t.auth,
      payload: { name: 'Live', environment: 'live' },
    });
    // A sandbox key cannot create a live app at all; reach the live side through the store.
    assert.equal(liveApp.statusCode, 403);
    const { issueKey } = await import('../../src/services/api-keys.ts');
    const { insertNewApplication } = await import('../../src/services/applications.ts');
    const liveKey = await h.store.db.transaction().execute(async (trx) => {
      const app = await insertNewApplication(trx, { clock: h.clock }, t.orgId, { name: 'Live', environment: 'live' });
      return issueKey(trx, { clock: h.clock }, app, 'live');
    });
    const res = await h.app.inject({
      method: 'GET',
      url: `/org/v1/webhooks/${sandboxEndpoint.id}`,
      headers: { authorization: `Bearer ${liveKey.rawSecret}` },
    });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'forbidden');
  });

  test('an archived application gets no new endpoint (409)', async () => {
    const t = await h.bootstrap('sandbox');
    const app = (
      await h.app.inject({ method: 'POST', url: '/org/v1/apps', headers: t.auth, payload: { name: 'Old' } })
    ).json().data;
    await h.app.inject({ method: 'DELETE', url: `/org/v1/apps/${app.id}`, headers: t.auth });
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/webhooks',
      headers: t.auth,
      payload: { appId: app.id, url: URL_OK, events: ['consent.approved'] },
    });
    assert.equal(res.statusCode, 409);
  });
});

forEachDialect('application creation with a webhook', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const countRows = async () => ({
    apps: (await h.store.db.selectFrom('applications').select('id').execute()).length,
    endpoints: (await h.store.db.selectFrom('webhook_endpoints').select('id').execute()).length,
  });

  test('webhookUrl and webhookEvents create the app and its endpoint; the response carries the secret', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: { ...tenant.auth, 'idempotency-key': 'app-with-hook' },
      payload: { name: 'Shop', webhookUrl: URL_OK, webhookEvents: ['verification.completed', 'consent.approved'] },
    });
    assert.equal(res.statusCode, 201, res.body);
    const app = res.json().data;
    assert.equal(app.webhookCount, 1);
    assert.deepEqual(Object.keys(app.webhook).sort(), [...ENDPOINT_FIELDS, 'secret'].sort());
    assert.equal(app.webhook.appId, app.id);
    assert.deepEqual(app.webhook.events, ['verification.completed', 'consent.approved']);
    assert.match(app.webhook.secret, /^whsec_/);
    const listed = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks?appId=${app.id}`, headers: tenant.auth })
    ).json().data;
    assert.deepEqual(
      listed.map((e: { id: string }) => e.id),
      [app.webhook.id],
    );
    const replay = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: { ...tenant.auth, 'idempotency-key': 'app-with-hook' },
      payload: { name: 'Shop', webhookUrl: URL_OK, webhookEvents: ['verification.completed', 'consent.approved'] },
    });
    assert.equal(replay.json().data.webhook.secret, null);
  });

  test('an unknown event, a refused URL or a half-given webhook is a 400 and creates nothing', async () => {
    const before = await countRows();
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { name: 'A', webhookUrl: URL_OK, webhookEvents: ['verification.completed', 'payment.received'] },
        'webhookEvents',
      ],
      [{ name: 'A', webhookUrl: 'http://169.254.169.254/latest', webhookEvents: ['consent.approved'] }, 'webhookUrl'],
      [{ name: 'A', webhookUrl: 'ftp://example.com/x', webhookEvents: ['consent.approved'] }, 'webhookUrl'],
      [{ name: 'A', webhookUrl: URL_OK }, 'webhookEvents'],
      [{ name: 'A', webhookEvents: ['consent.approved'] }, 'webhookUrl'],
      [{ name: 'A', webhookUrl: URL_OK, webhookEvents: [] }, 'webhookEvents'],
    ];
    for (const [payload, param] of cases) {
      const res = await h.app.inject({ method: 'POST', url: '/org/v1/apps', headers: tenant.auth, payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.param, param, JSON.stringify(payload));
    }
    assert.deepEqual(await countRows(), before);
  });

  test('without webhookUrl the response is the plain list entry', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: tenant.auth,
      payload: { name: 'Plain' },
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().data.webhook, undefined);
    assert.equal(res.json().data.webhookCount, 0);
  });
});

forEachDialect('webhook URL refusal at registration (production policy)', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { OUTBOUND_ALLOW_PRIVATE_TARGETS: 'false' });

  const refusals: Array<[string, string, RegExp]> = [
    ['http://hooks.example.com/x', 'insecure_scheme', /https/],
    ['https://127.0.0.1/hooks', 'forbidden_address', /127\.0\.0\.1 is a loopback address/],
    ['https://localhost:8443/hooks', 'forbidden_address', /localhost resolves to .*loopback/],
    ['https://10.1.2.3/hooks', 'forbidden_address', /private network/],
    ['https://[fe80::1]/hooks', 'forbidden_address', /link-local/],
    ['https://169.254.169.254/latest/meta-data', 'forbidden_address', /metadata/],
    ['https://[::ffff:192.168.0.1]/hooks', 'forbidden_address', /private network/],
    ['https://user:pw@hooks.example.com/x', 'credentials_in_url', /user name or password/],
    ['https://no-such-host.invalid/x', 'unresolvable_host', /does not resolve/],
  ];
  for (const [url, reason, message] of refusals) {
    test(`refuses ${url} with a 400 saying why`, async () => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/org/v1/webhooks',
        headers: tenant.auth,
        payload: { appId: tenant.appId, url, events: ['consent.approved'] },
      });
      assert.equal(res.statusCode, 400);
      const error = res.json().error;
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.param, 'url');
      assert.equal(error.reason, reason);
      assert.match(error.message, message);
      // A receiver on the developer's own machine: the message names the two ways to reach it.
      const local = reason === 'forbidden_address' && !url.startsWith('https://169.254.169.254/');
      assert.equal(/OUTBOUND_ALLOW_PRIVATE_TARGETS=true/.test(error.message), local, error.message);
      assert.equal(/`matricula listen --forward-to /.test(error.message), local, error.message);
    });
  }

  test('http:// to your own machine names the fix, not only the scheme', async () => {
    for (const url of ['http://127.0.0.1:3000/hooks', 'http://localhost:3000/hooks']) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/org/v1/webhooks',
        headers: tenant.auth,
        payload: { appId: tenant.appId, url, events: ['consent.approved'] },
      });
      assert.equal(res.statusCode, 400);
      const error = res.json().error;
      assert.equal(error.reason, 'insecure_scheme');
      assert.match(
        error.message,
        /must use https:\/\/\. .*`matricula listen --forward-to .*OUTBOUND_ALLOW_PRIVATE_TARGETS=true/,
      );
    }
  });

  test('a refused URL is refused on update and on app creation too; nothing changes', async () => {
    // A literal public address needs no DNS: accepted.
    const endpoint = await createEndpoint(h, tenant, 'https://93.184.215.14/hooks');
    const patch = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { url: 'https://127.0.0.1/hooks' },
    });
    assert.equal(patch.statusCode, 400);
    assert.equal(patch.json().error.reason, 'forbidden_address');
    const read = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}`, headers: tenant.auth })
    ).json().data;
    assert.equal(read.url, 'https://93.184.215.14/hooks');

    const app = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: tenant.auth,
      payload: { name: 'X', webhookUrl: 'https://127.0.0.1/', webhookEvents: ['consent.approved'] },
    });
    assert.equal(app.statusCode, 400);
    assert.equal(app.json().error.param, 'webhookUrl');
    assert.equal(app.json().error.reason, 'forbidden_address');
    const apps = await h.store.db.selectFrom('applications').select('id').where('name', '=', 'X').execute();
    assert.deepEqual(apps, []);
  });
});

test('configuration: one retry-schedule parser, and a short lease the heartbeat renews', () => {
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5, 30' }).webhookRetrySchedule, [5, 30]);
  assert.throws(
    () => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '10,700000' }),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.message ===
        'Invalid configuration: WEBHOOK_RETRY_SCHEDULE entry 2 (700000 s) is longer than one week (604800 s); the values are seconds',
  );
  assert.equal(loadConfig({}).webhookLeaseSeconds, 10);
  assert.equal(loadConfig({ WEBHOOK_LEASE_SECONDS: '3' }).webhookLeaseSeconds, 3);
  for (const bad of ['2', '0', 'sixty', '3601']) {
    assert.throws(
      () => loadConfig({ WEBHOOK_LEASE_SECONDS: bad }),
      (err: unknown) => err instanceof ConfigError && /WEBHOOK_LEASE_SECONDS/.test(err.message),
    );
  }
});
