import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkOrigin, checkReturnUrl, returnAddress } from '../../src/domain/return-url.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { consent, createSession } from '../support/sessions.ts';

/**
 * `returnUrl` (issue 28): a session sends the student back only to an origin its application
 * allows, with the session id and never the result; the portal may be framed only by those origins.
 */
describe('return URLs and allowed origins, pure', () => {
  test('an origin is normalized; a path, user info or another scheme is refused', () => {
    assert.deepEqual(checkOrigin('https://Shop.Example:443', false), { ok: true, value: 'https://shop.example' });
    assert.deepEqual(checkOrigin('https://shop.example/', false), { ok: true, value: 'https://shop.example' });
    assert.equal(checkOrigin('https://shop.example/checkout', false).ok, false);
    assert.equal(checkOrigin('https://a:b@shop.example', false).ok, false);
    assert.equal(checkOrigin('http://shop.example', false).ok, false);
    assert.deepEqual(checkOrigin('http://127.0.0.1:3000', true), { ok: true, value: 'http://127.0.0.1:3000' });
    assert.equal(checkOrigin('javascript:alert(1)', true).ok, false);
    assert.equal(checkOrigin('shop.example', true).ok, false);
  });

  test('a returnUrl must be at an allowed origin, exactly', () => {
    const allowed = ['https://shop.example'];
    assert.deepEqual(checkReturnUrl('https://shop.example/back?o=1', allowed, false), {
      ok: true,
      value: 'https://shop.example/back?o=1',
    });
    for (const refused of [
      'https://shop.example.evil.test/back',
      'https://evil.test/https://shop.example',
      'https://shop.example:8443/back',
      'http://shop.example/back',
      'https://user@shop.example/back',
      '//shop.example/back',
      'javascript:alert(1)//https://shop.example',
    ])
      assert.equal(checkReturnUrl(refused, allowed, false).ok, false, refused);
    assert.match(
      (checkReturnUrl('https://shop.example/', [], false) as { message: string }).message,
      /allows no return origin/,
    );
  });

  test('the address keeps the query and adds only the session id', () => {
    assert.equal(
      returnAddress('https://shop.example/back?order=7&session=forged#top', 'sess_x'),
      'https://shop.example/back?order=7&session=sess_x#top',
    );
  });
});

forEachDialect('returnUrl on sessions', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const patchApp = (appId: string, body: Record<string, unknown>, who = tenant) =>
    h.app.inject({ method: 'PATCH', url: `/org/v1/apps/${appId}`, headers: who.auth, payload: body });

  test('allowedReturnOrigins: set, normalized, shown in the details; a bad one is a 400 naming it', async () => {
    const res = await patchApp(tenant.appId, {
      allowedReturnOrigins: ['https://Shop.example', 'https://shop.example/', 'http://127.0.0.1:4000'],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.allowedReturnOrigins, ['https://shop.example', 'http://127.0.0.1:4000']);
    const bad = await patchApp(tenant.appId, { allowedReturnOrigins: ['https://shop.example/checkout'] });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.param, 'allowedReturnOrigins');
    const created = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: tenant.auth,
      payload: { name: 'Shop', allowedReturnOrigins: ['https://other.example'] },
    });
    assert.equal(created.statusCode, 201, created.body);
    const details = await h.app.inject({
      method: 'GET',
      url: `/org/v1/apps/${created.json().data.id}`,
      headers: tenant.auth,
    });
    assert.deepEqual(details.json().data.allowedReturnOrigins, ['https://other.example']);
  });

  test('a session at an allowed origin keeps its returnUrl; another origin is a 400 and creates nothing', async () => {
    await patchApp(tenant.appId, { allowedReturnOrigins: ['https://shop.example'] });
    const s = await createSession(h, tenant, { returnUrl: 'https://shop.example/checkout?order=42' });
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}`,
      headers: tenant.auth,
    });
    assert.equal(read.json().data.returnUrl, 'https://shop.example/checkout?order=42');
    assert.equal('returnUrl' in s, false, 'creation answers with the creation fields only');

    const before = await h.app.inject({ method: 'GET', url: '/verification/v1/sessions', headers: tenant.auth });
    for (const returnUrl of ['https://evil.example/', 'https://shop.example.evil.example/', 'not a url']) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/verification/v1/sessions',
        headers: tenant.auth,
        payload: { appId: tenant.appId, purpose: 'Discount', requiredClaims: ['is_active_student'], returnUrl },
      });
      assert.equal(res.statusCode, 400, returnUrl);
      assert.equal(res.json().error.param, 'returnUrl');
    }
    const after = await h.app.inject({ method: 'GET', url: '/verification/v1/sessions', headers: tenant.auth });
    assert.equal(after.json().data.length, before.json().data.length);
  });

  test('without allowed origins every returnUrl is refused', async () => {
    const other = await h.bootstrap('sandbox');
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: other.auth,
      payload: {
        appId: other.appId,
        purpose: 'Discount',
        requiredClaims: ['is_active_student'],
        returnUrl: 'https://shop.example/',
      },
    });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error.message, /allows no return origin/);
  });

  test('the portal: frame-ancestors are the allowed origins; the ended page links back with the id only', async () => {
    await patchApp(tenant.appId, { allowedReturnOrigins: ['https://shop.example'] });
    const s = await createSession(h, tenant, { returnUrl: 'https://shop.example/back?order=42' });
    const open = await h.app.inject({ method: 'GET', url: `/verify/${s.sessionId}` });
    assert.match(open.headers['content-security-policy'] as string, /frame-ancestors https:\/\/shop\.example;/);
    assert.equal(open.headers['x-frame-options'], undefined);
    assert.match(open.body, /data-return-to="https:\/\/shop\.example\/back\?order=42&amp;session=sess_/);
    assert.equal(/data-embed-origin/.test(open.body), false);

    const embedded = await h.app.inject({ method: 'GET', url: `/verify/${s.sessionId}?embed=https://shop.example` });
    assert.match(embedded.body, /data-embed-origin="https:\/\/shop\.example"/);
    const foreign = await h.app.inject({ method: 'GET', url: `/verify/${s.sessionId}?embed=https://evil.example` });
    assert.equal(/data-embed-origin/.test(foreign.body), false, 'only an allowed origin is told');

    assert.equal((await consent(h, s, 'declined')).statusCode, 200);
    const ended = await h.app.inject({ method: 'GET', url: `/verify/${s.sessionId}` });
    const link = /<a class="button button-primary" href="([^"]+)">Back to/.exec(ended.body);
    assert.ok(link, 'a link back to the business');
    assert.equal(link[1].replaceAll('&amp;', '&'), `https://shop.example/back?order=42&session=${s.sessionId}`);
    assert.match(ended.body, /verify\.js/, 'the ended page sends the student back');

    const plain = await createSession(h, await h.bootstrap('sandbox'));
    const unframed = await h.app.inject({ method: 'GET', url: `/verify/${plain.sessionId}` });
    assert.match(unframed.headers['content-security-policy'] as string, /frame-ancestors 'none'/);
    assert.equal(unframed.headers['x-frame-options'], 'DENY');
  });

  test('redaction erases the returnUrl', async () => {
    await patchApp(tenant.appId, { allowedReturnOrigins: ['https://shop.example'] });
    const s = await createSession(h, tenant, { returnUrl: 'https://shop.example/back?customer=4471' });
    await consent(h, s, 'declined');
    const res = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/redact`,
      headers: tenant.auth,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.returnUrl, null);
  });
});

forEachDialect('returnUrl without private targets', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { OUTBOUND_ALLOW_PRIVATE_TARGETS: 'false' });

  test('http:// origins are refused: https only', async () => {
    const res = await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/apps/${tenant.appId}`,
      headers: tenant.auth,
      payload: { allowedReturnOrigins: ['http://shop.example'] },
    });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error.message, /use https:\/\//);
  });
});
