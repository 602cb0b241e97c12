import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { operationsOf } from '../support/route-table.ts';

/**
 * Issue 10, "Input and transport edges": what an adversarial review sent at the edges of the API.
 * A NUL byte was a 500 with a stack trace on PostgreSQL; router errors answered Fastify's own body.
 */

function assertInvalid(res: LightMyRequestResponse, param: string | undefined, what: string): void {
  assert.equal(res.statusCode, 400, `${what}: ${res.statusCode} ${res.body}`);
  const body = res.json();
  // OpenID4VP's endpoints answer wallets in OAuth's shape: the error code, and the parameter named in words.
  if (what.includes(' /openid4vp/')) {
    assert.equal(body.error, 'invalid_request', what);
    if (param) assert.match(body.error_description, new RegExp(param), `${what}: ${res.body}`);
    assert.match(String(res.headers['x-request-id']), /^req_/, what);
    return;
  }
  assert.equal(body.success, false, what);
  assert.equal(body.error.code, 'invalid_request', what);
  assert.equal(body.error.param, param, `${what}: ${res.body}`);
  assert.equal(body.error.requestId, res.headers['x-request-id'], what);
  assert.match(String(res.headers['x-request-id']), /^req_/, what);
}

forEachDialect('Input and transport edges', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  // Room for the 200 KB body of the deep-nesting test (the harness's default limit is 64 KiB).
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { BODY_LIMIT_BYTES: String(256 * 1024) });

  const operations = async () => operationsOf((await h.app.inject({ method: 'GET', url: '/openapi.json' })).json());

  test('NUL in a path parameter: every route of /openapi.json answers 400, never 500', async () => {
    let checked = 0;
    for (const op of await operations()) {
      for (const name of op.pathParams) {
        const path = op.path.replace(/\{(\w+)\}/g, (_, p: string) => (p === name ? 'a%00b' : 'x'));
        const query = op.query
          .filter((q) => q.required)
          .map((q) => `${q.name}=x`)
          .join('&');
        // OpenID4VP's endpoints read forms, as wallets send them; the Digital Credentials API's
        // answer is JSON, posted by the portal page.
        const form = op.path.startsWith('/openid4vp/') && !op.path.endsWith('/dc-api/response');
        const res = await h.app.inject({
          method: op.method as 'GET',
          url: query ? `${path}?${query}` : path,
          headers: {
            ...(op.bearer ? tenant.auth : {}),
            ...(op.body && form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          },
          ...(op.body ? { payload: form ? 'x=1' : {} } : {}),
        });
        assertInvalid(res, name, `${op.id} with NUL in ${name}`);
        const body = res.json();
        assert.match(body.error.message ?? body.error_description, /NUL/);
        checked++;
      }
    }
    assert.ok(checked >= 10, `only ${checked} path parameters checked`);
  });

  test('NUL in a path parameter: the named examples of the review, with and without a key', async () => {
    assertInvalid(
      await h.app.inject({ method: 'GET', url: '/org/v1/events/%00', headers: tenant.auth }),
      'eventId',
      'events',
    );
    assertInvalid(
      await h.app.inject({ method: 'GET', url: '/verification/v1/sessions/%00/request?nonce=x' }),
      'sessionId',
      'wallet request without a key',
    );
  });

  test('NUL or a control character in a query parameter: every list answers 400 naming it', async () => {
    let checked = 0;
    for (const op of await operations()) {
      for (const param of op.query) {
        const path = op.path.replace(/\{(\w+)\}/g, 'x');
        for (const bad of ['%00', '%01', '%0A']) {
          const res = await h.app.inject({
            method: op.method as 'GET',
            url: `${path}?${param.name}=a${bad}b`,
            headers: op.bearer ? tenant.auth : {},
          });
          assertInvalid(res, param.name, `${op.id} with ${bad} in ${param.name}`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 10, `only ${checked} query parameters checked`);
    assertInvalid(
      await h.app.inject({ method: 'GET', url: '/org/v1/apps?startingAfter=app_%00', headers: tenant.auth }),
      'startingAfter',
      'startingAfter',
    );
  });

  test('NUL in body strings: app, session, metadata, key and webhook fields answer 400 naming the field', async () => {
    const webhook = await h.app.inject({
      method: 'POST',
      url: '/org/v1/webhooks',
      headers: tenant.auth,
      payload: { appId: tenant.appId, url: 'http://127.0.0.1:9/edge', events: ['verification.completed'] },
    });
    assert.equal(webhook.statusCode, 201, webhook.body);
    const webhookId = webhook.json().data.id as string;
    const session = {
      appId: tenant.appId,
      purpose: 'Edge test',
      requiredClaims: ['is_active_student'],
    };
    const cases: Array<{ method: 'POST' | 'PATCH'; url: string; payload: Record<string, unknown>; param: string }> = [
      { method: 'POST', url: '/org/v1/apps', payload: { name: 'a\u0000b' }, param: 'name' },
      { method: 'POST', url: '/org/v1/apps', payload: { name: 'ok', description: 'a\u0000b' }, param: 'description' },
      {
        method: 'PATCH',
        url: `/org/v1/apps/${tenant.appId}`,
        payload: { description: 'a\u0000b' },
        param: 'description',
      },
      {
        method: 'POST',
        url: '/verification/v1/sessions',
        payload: { ...session, purpose: 'a\u0000' },
        param: 'purpose',
      },
      {
        method: 'POST',
        url: '/verification/v1/sessions',
        payload: { ...session, clientReference: 'ref\u0000' },
        param: 'clientReference',
      },
      {
        method: 'POST',
        url: '/verification/v1/sessions',
        payload: { ...session, metadata: { order: 'a\u0000b' } },
        param: 'metadata.order',
      },
      {
        method: 'POST',
        url: '/verification/v1/sessions',
        payload: { ...session, metadata: { 'or\u0000der': 'x' } },
        param: 'metadata.or\\u0000der',
      },
      {
        method: 'POST',
        url: '/org/v1/keys',
        payload: { appId: tenant.appId, name: 'k\u0000', environment: 'sandbox' },
        param: 'name',
      },
      {
        method: 'POST',
        url: '/org/v1/webhooks',
        payload: {
          appId: tenant.appId,
          url: 'http://127.0.0.1:9/edge',
          events: ['verification.completed'],
          description: 'a\u0000b',
        },
        param: 'description',
      },
      {
        method: 'PATCH',
        url: `/org/v1/webhooks/${webhookId}`,
        payload: { description: 'a\u0000b' },
        param: 'description',
      },
      {
        method: 'POST',
        url: '/verification/v1/verify',
        payload: { format: 'sd-jwt-vc', presentation: 'x\u0000', nonce: 'n' },
        param: 'presentation',
      },
    ];
    for (const c of cases) {
      const res = await h.app.inject({ method: c.method, url: c.url, headers: tenant.auth, payload: c.payload });
      assertInvalid(res, c.param, `${c.method} ${c.url} ${JSON.stringify(c.payload)}`);
    }
  });

  test('control characters: refused in single-line text, tab and line breaks allowed in descriptions', async () => {
    const create = (payload: Record<string, unknown>) =>
      h.app.inject({ method: 'POST', url: '/org/v1/apps', headers: tenant.auth, payload });
    assertInvalid(await create({ name: 'a\u0001b' }), 'name', 'U+0001 in a name');
    assertInvalid(await create({ name: 'a\nb' }), 'name', 'line feed in a name');
    assertInvalid(await create({ name: 'ok', description: 'a\u001bb' }), 'description', 'escape in a description');
    const multiline = await create({ name: 'ok', description: 'line one\n\tline two\r\n' });
    assert.equal(multiline.statusCode, 201, multiline.body);
    const details = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/${multiline.json().data.id}`,
      headers: tenant.auth,
    });
    assert.equal(details.json().data.description, 'line one\n\tline two\r\n');
    // Printable Unicode is untouched.
    const unicode = await create({ name: 'Université de Genève ✓' });
    assert.equal(unicode.statusCode, 201, unicode.body);
  });

  test('a deeply nested body is walked without overflowing the stack, in time linear in its depth', async () => {
    // 100,000 deep (200 KB): walked in well under a second; copying the path at every step
    // (quadratic, as the walk once did) took 10 s at 20,000 and would take about 250 s here.
    const deep = `${'['.repeat(100_000)}"a\\u0000"${']'.repeat(100_000)}`;
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: { ...tenant.auth, 'content-type': 'application/json' },
      payload: `{"format":"sd-jwt-vc","nonce":"n","presentation":${deep}}`,
    });
    assert.equal(res.statusCode, 400, res.body.slice(0, 500));
    assert.equal(res.json().error.code, 'invalid_request');
    assert.equal(res.json().error.param.split('.').slice(0, 3).join('.'), 'presentation.0.0', res.body.slice(0, 500));
  });

  test('router errors use the envelope: a path that does not decode is a 400 invalid_request', async () => {
    for (const url of ['/org/v1/apps/%ff', '/verification/v1/sessions/%c3%28/request?nonce=x', '/nope/%ff']) {
      const res = await h.app.inject({ method: 'GET', url, headers: tenant.auth });
      assertInvalid(res, undefined, url);
      assert.doesNotMatch(res.body, /FST_ERR/);
    }
  });

  test('router errors use the envelope: a long path parameter is a 400 naming it, never a 414', async () => {
    const long = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/app_${'a'.repeat(150)}`,
      headers: tenant.auth,
    });
    assertInvalid(long, 'appId', 'a 154-character appId');
    const longer = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/app_${'a'.repeat(1000)}`,
      headers: tenant.auth,
    });
    assertInvalid(longer, undefined, 'a 1004-character appId');
    assert.doesNotMatch(longer.body, /FST_ERR/);
  });
});
