import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { escapeHtml, html, trusted } from '../../src/portal/html.ts';
import { PAGE_CSP } from '../../src/portal/layout.ts';
import { parseQrPayload } from '../../src/portal/qr-payload.ts';
import { startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { consent, createSession } from '../support/sessions.ts';

/**
 * The pages as HTTP responses: headers, markup rules, escaping, 404s, refusals. What they do in
 * a browser is test/e2e/portal-browser.test.ts. SQLite only: nothing here is about storage.
 */

const CSP_DIRECTIVES = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
];

function assertPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number): void {
  assert.equal(res.statusCode, status, res.body.slice(0, 300));
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.deepEqual(String(res.headers['content-security-policy']).split('; '), CSP_DIRECTIVES);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['referrer-policy'], 'no-referrer');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-frame-options'], 'DENY');
  assert.match(res.body, /^<!doctype html>\s*<html lang="en">/);
  // Nothing inline that the policy would have to allow, and nothing from elsewhere.
  assert.doesNotMatch(res.body, /<script(?![^>]*\ssrc="\/assets\/)[^>]*>/);
  assert.doesNotMatch(res.body, /<style|<[^>]*\s(style|on[a-z]+)=/i);
  assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//);
  assert.match(res.body, /<main id="main"/);
}

describe('portal pages', () => {
  let h: Harness;
  let sandbox: Tenant;
  let live: Tenant;
  before(async () => {
    h = await startHarness('sqlite', { PORTAL_URL: 'https://portal.matricula.test' });
    sandbox = await h.bootstrap('sandbox');
    live = await h.bootstrap('live');
  });
  after(() => h.close());

  const get = (url: string) => h.app.inject({ method: 'GET', url });

  test('GET / is a landing page pointing to the API reference, the sandbox wallet and the first steps', async () => {
    const res = await get('/');
    assertPage(res, 200);
    for (const href of ['/docs', '/openapi.json', '/wallet', '/healthz'])
      assert.match(res.body, new RegExp(`<a href="${href}">`), href);
    assert.match(res.body, /matricula org create/);
    assert.match(res.body, /verificationUrl/);
    // The links lead somewhere.
    for (const url of ['/docs', '/wallet', '/openapi.json']) assert.ok((await get(url)).statusCode < 400, url);
  });

  test('verificationUrl is {PORTAL_URL}/verify/<id>, and its path serves the page with the QR, the links and the countdown', async () => {
    const s = await createSession(h, sandbox, {
      purpose: 'Student discount at checkout',
      requiredClaims: ['university_domain', 'valid_until'],
      expiresInSeconds: 120,
    });
    assert.equal(s.verificationUrl, `https://portal.matricula.test/verify/${s.sessionId}`);
    const res = await get(new URL(s.verificationUrl).pathname);
    assertPage(res, 200);
    assert.match(res.body, /<svg class="qr-code" width="\d+" height="\d+" role="img" aria-label="QR code[^"]*"/);
    const escapedPayload = s.qrPayload.replaceAll('&', '&amp;');
    assert.ok(res.body.includes(`href="${escapedPayload}">Open in wallet</a>`));
    assert.ok(
      res.body.includes(
        `href="/wallet?payload=${encodeURIComponent(s.qrPayload)}" target="_blank" rel="noopener">Open in sandbox wallet</a>`,
      ),
    );
    // Beside our QR code, the OpenID4VP request: a switch, its QR code, a same-device link.
    assert.match(res.body, /<label for="wallet-openid4vp">EU \/ OpenID4VP wallet<\/label>/);
    assert.match(res.body, /aria-label="QR code to answer [^"]*OpenID4VP wallet"/);
    const sameDevice = /href="(openid4vp:\/\/\?[^"]+)">Open in EU wallet<\/a>/.exec(res.body);
    assert.ok(sameDevice, 'a same-device link');
    const requestUri = new URL(sameDevice[1]!.replaceAll('&amp;', '&')).searchParams.get('request_uri')!;
    assert.equal(new URL(requestUri).searchParams.get('device'), 'same');
    assert.match(res.body, /<span id="countdown" role="timer">2:00<\/span>/);
    assert.match(res.body, /<script src="\/assets\/verify\.js\?v=[0-9a-f]{16}" defer><\/script>/);
    for (const words of [
      'That you are currently enrolled as a student',
      'Which university you study at',
      'The date your student status is valid until',
    ]) {
      assert.ok(res.body.includes(`<li>${words}</li>`), words);
    }
    assert.match(res.body, /data-server-now="2026-11-21T10:00:00\.000Z"/);
  });

  test('the portal lists exactly what the wallet will be asked to disclose, as the wallet page does', async () => {
    // Asked for the university only: the wallet is still asked for being a student and the date
    // the status is valid until (the business receives it), never for the level.
    const s = await createSession(h, sandbox, { requiredClaims: ['university_domain'] });
    const listed = (body: string) =>
      [...body.matchAll(/<ul class="claims">(.*?)<\/ul>/gs)].flatMap((m) =>
        [...m[1]!.matchAll(/<li>(.*?)<\/li>/g)].map((li) => li[1]),
      );
    const expected = [
      'That you are currently enrolled as a student',
      'Which university you study at',
      'The date your student status is valid until',
    ];
    assert.deepEqual(listed((await get(new URL(s.verificationUrl).pathname)).body), expected);
    assert.deepEqual(listed((await get(`/wallet?payload=${encodeURIComponent(s.qrPayload)}`)).body), expected);
  });

  test('integrator text is escaped everywhere it appears', async () => {
    const create = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: sandbox.auth,
      payload: { name: 'Shop "<b>bold</b>" & co' },
    });
    assert.equal(create.statusCode, 201, create.body);
    const appId = create.json().data.id;
    const s = await createSession(h, sandbox, {
      appId,
      purpose: '<script>alert(1)</script><img src=x onerror=alert(2)>',
    });
    const res = await get(`/verify/${s.sessionId}`);
    assertPage(res, 200);
    assert.ok(res.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;'));
    assert.ok(res.body.includes('Shop &quot;&lt;b&gt;bold&lt;/b&gt;&quot; &amp; co asks you'));
    assert.doesNotMatch(res.body, /<b>bold|<img src=x/);
    const wallet = await get(`/wallet?payload=${encodeURIComponent(s.qrPayload)}`);
    assertPage(wallet, 200);
    assert.ok(wallet.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.doesNotMatch(wallet.body, /<b>bold|<img src=x/);
  });

  test('a finished session shows its final screen only: no QR code, no nonce, no script', async () => {
    const s = await createSession(h, sandbox);
    await consent(h, s, 'declined');
    const res = await get(`/verify/${s.sessionId}`);
    assertPage(res, 200);
    assert.match(res.body, /data-panel="declined"/);
    assert.match(res.body, /You declined/);
    assert.doesNotMatch(res.body, /qr-code|nonce_|<script|data-panel="verified"/);
  });

  test('an expired session reads as expired at once, from the server clock', async () => {
    const s = await createSession(h, sandbox, { expiresInSeconds: 30 });
    h.clock.advance(30_000);
    const res = await get(`/verify/${s.sessionId}`);
    assertPage(res, 200);
    assert.match(res.body, /This code has expired/);
    assert.doesNotMatch(res.body, /qr-code|nonce_/);
  });

  test('a live session has no sandbox wallet link and no sandbox badge', async () => {
    const s = await createSession(h, live);
    const res = await get(`/verify/${s.sessionId}`);
    assertPage(res, 200);
    assert.match(res.body, /Open in wallet/);
    assert.doesNotMatch(res.body, /sandbox wallet|badge-sandbox/i);
  });

  test('unknown or malformed session ids, and other paths under /verify and /wallet, get the friendly 404 page', async () => {
    for (const url of [
      '/verify/sess_01aaaaaaaaaaaaaaaaaaaaaaaa',
      '/verify/sess_x',
      '/verify/%3Cscript%3E',
      '/verify',
      '/verify/',
      '/verify/a/b',
      '/wallet/',
      '/wallet/anything',
      '/wallet/sandbox/presentation',
    ]) {
      const res = await get(url);
      assertPage(res, 404);
      assert.match(res.body, /We can’t find this verification/, url);
      assert.doesNotMatch(res.body, /&lt;script|<script/);
    }
  });

  test('API paths keep their JSON 404', async () => {
    const res = await get('/verification/v1/nothing');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.code, 'not_found');
  });

  test('assets: only the listed files, with their types; versioned links are cacheable for good', async () => {
    const page = (await get('/wallet')).body;
    const css = /href="(\/assets\/site\.css\?v=[0-9a-f]{16})"/.exec(page)![1]!;
    const versioned = await get(css);
    assert.equal(versioned.statusCode, 200);
    assert.equal(versioned.headers['content-type'], 'text/css; charset=utf-8');
    assert.equal(versioned.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(versioned.headers['x-content-type-options'], 'nosniff');
    assert.equal((await get('/assets/site.css?v=old')).headers['cache-control'], 'no-cache');
    assert.equal((await get('/assets/verify.js')).headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal((await get('/assets/wallet.js')).headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal((await get('/assets/favicon.svg')).headers['content-type'], 'image/svg+xml');
    for (const url of [
      '/assets/nothing.js',
      '/assets/..%2F..%2Fpackage.json',
      '/assets/..%2Fhtml.ts',
      '/assets/toString',
      '/assets/__proto__',
    ]) {
      assert.equal((await get(url)).statusCode, 404, url);
    }
  });

  describe('sandbox wallet', () => {
    test('without a payload: the paste form', async () => {
      const res = await get('/wallet');
      assertPage(res, 200);
      assert.match(res.body, /<label for="payload">QR payload<\/label>/);
      assert.match(res.body, /<form class="stack" method="get" action="\/wallet">/);
    });

    test('a sandbox session: the request, every accepted format, the student choices', async () => {
      const s = await createSession(h, sandbox, { requiredClaims: ['academic_level'] });
      const accepted = (
        await get(`/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`)
      ).json().data.acceptedFormats as string[];
      const res = await get(`/wallet?payload=${encodeURIComponent(s.qrPayload)}`);
      assertPage(res, 200);
      const formats = [...res.body.matchAll(/name="format" value="([^"]+)"/g)].map((m) => m[1]);
      // Every accepted format the simulated wallet can build; jwt-vc (no W3C credential here) says why not.
      assert.deepEqual(
        formats,
        accepted.filter((format) => format !== 'jwt-vc'),
      );
      assert.match(res.body, /class="hint format-unavailable">The simulated wallets hold a StudentCredential/);
      assert.match(res.body, /<option value="sandbox-state\.example">/);
      assert.match(res.body, /<option value="pruebas\.example">/);
      for (const level of ['undergraduate', 'postgraduate', 'doctoral', 'vocational'])
        assert.match(res.body, new RegExp(`<option value="${level}">`));
      assert.match(res.body, /Your level of study/);
      assert.match(res.body, /<script src="\/assets\/wallet\.js\?v=[0-9a-f]{16}" defer><\/script>/);
    });

    test('a payload that is not ours: 400 with the reason, the input kept and marked invalid', async () => {
      for (const payload of [
        'hello',
        'https://verify?session=sess_x&nonce=nonce_y',
        'matricula://verify?session=sess_x',
        'matricula://other?session=a&nonce=b',
      ]) {
        const res = await get(`/wallet?payload=${encodeURIComponent(payload)}`);
        assertPage(res, 400);
        assert.match(res.body, /aria-invalid="true"/);
        assert.match(res.body, /That is not a QR payload of this service/);
        assert.ok(res.body.includes(`value="${payload.replaceAll('&', '&amp;')}"`));
      }
    });

    test('refusals are pages that say why: live 403, wrong nonce 404, expired 410, finished 409', async () => {
      const liveSession = await createSession(h, live);
      const refused = await get(`/wallet?payload=${encodeURIComponent(liveSession.qrPayload)}`);
      assertPage(refused, 403);
      assert.match(refused.body, /This is a live session/);
      assert.match(refused.body, /sandbox sessions only/);
      assert.doesNotMatch(refused.body, /nonce_/);

      const s = await createSession(h, sandbox);
      const wrong = await get(
        `/wallet?payload=${encodeURIComponent(s.qrPayload.replace(/nonce=[^&]+/, 'nonce=nonce_wrong'))}`,
      );
      assertPage(wrong, 404);
      assert.match(wrong.body, /No session matches this QR payload/);

      const done = await createSession(h, sandbox);
      await consent(h, done, 'declined');
      const finished = await get(`/wallet?payload=${encodeURIComponent(done.qrPayload)}`);
      assertPage(finished, 409);
      assert.match(finished.body, /already declined/);

      const expiring = await createSession(h, sandbox, { expiresInSeconds: 30 });
      h.clock.advance(30_000);
      const gone = await get(`/wallet?payload=${encodeURIComponent(expiring.qrPayload)}`);
      assertPage(gone, 410);
      assert.match(gone.body, /This session has expired/);
    });
  });

  test('PAGE_CSP is what the pages send', () => {
    assert.deepEqual(PAGE_CSP.split('; '), CSP_DIRECTIVES);
  });
});

describe('html escaping', () => {
  test('interpolations are text; html fragments and arrays compose; null, undefined and false vanish', () => {
    const name = `<a href="x">'&'</a>`;
    assert.equal(
      html`<p title="${name}">${name}</p>`.value,
      '<p title="&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;">&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;</p>',
    );
    assert.equal(html`<ul>${['<1>', html`<li>${'&'}</li>`]}</ul>`.value, '<ul>&lt;1&gt;<li>&amp;</li></ul>');
    assert.equal(html`${null}${undefined}${false}${0}`.value, '0');
    assert.equal(html`${trusted('<svg/>')}`.value, '<svg/>');
    assert.equal(escapeHtml('plain'), 'plain');
  });
});

describe('qrPayload parsing', () => {
  test('reads back what sessions produce; refuses other schemes, hosts, paths and missing parts', () => {
    assert.deepEqual(parseQrPayload('matricula://verify?session=sess_1&nonce=nonce_2', 'matricula'), {
      sessionId: 'sess_1',
      nonce: 'nonce_2',
    });
    assert.deepEqual(parseQrPayload('  shop://verify?nonce=n&session=s ', 'shop'), { sessionId: 's', nonce: 'n' });
    for (const payload of [
      'matricula://verify?session=s',
      'matricula://verify?nonce=n',
      'shop://verify?session=s&nonce=n',
      'matricula://verify/x?session=s&nonce=n',
      'matricula://evil?session=s&nonce=n',
      'not a url',
      '',
    ]) {
      assert.equal(parseQrPayload(payload, 'matricula'), undefined, payload);
    }
    assert.equal(parseQrPayload(`matricula://verify?session=${'s'.repeat(65)}&nonce=n`, 'matricula'), undefined);
  });
});
