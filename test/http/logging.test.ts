import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, mock, test } from 'node:test';
import { testConfig } from '../support/harness.ts';
import { createLogger, loggableUrl, logStartupWarnings, redactSecrets } from '../../src/logging.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { createEndpoint, workerFor } from '../support/webhooks.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/** A logger at `level` whose lines land in `lines`, exactly as they would be written to stdout. */
function capture(level: 'trace' | 'info' = 'trace', logFormat: 'json' | 'pretty' = 'json') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ logLevel: level, logFormat }, destination);
  return { lines, logger };
}

const parsed = (lines: string[]) => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe('redaction', () => {
  const nonce = 'nonce_Q2hhbGxlbmdlTm9uY2VPZlRoaXJ0eVR3b0J5dGVzMTIzNDU2Nzg5MA';
  const key = 'sk_test_0123456789ABCDEFGHIJabcdefghij01abcd';

  test('nonces, API keys, webhook secrets and bearer tokens are replaced, error codes are not', () => {
    const line = JSON.stringify({
      url: `/verification/v1/sessions/sess_1/request?nonce=${nonce}&x=1`,
      qr: `matricula://verify?session=sess_1&nonce=${encodeURIComponent(nonce)}`,
      msg: `bound to ${nonce}; key ${key}; secret whsec_abcDEF0123456789abcDEF0123456789abcDEF01234`,
      header: 'Bearer some-admin-token',
      reason: 'nonce_mismatch',
    });
    const out = redactSecrets(line);
    assert.ok(!out.includes(nonce.slice(6)), out);
    assert.ok(!out.includes(key.slice(8)), out);
    assert.ok(!out.includes('abcDEF0123456789'), out);
    assert.ok(!out.includes('some-admin-token'), out);
    assert.ok(out.includes('nonce_mismatch'), 'an error code is not a nonce');
    assert.ok(out.includes('&x=1'), 'only the nonce value goes');
    assert.doesNotThrow(() => JSON.parse(out), 'the line stays valid JSON');
  });

  test('the logged URL loses its nonce whatever its shape', () => {
    assert.equal(loggableUrl('/s/1/request?nonce=anything%20at_all&a=b'), '/s/1/request?nonce=[redacted]&a=b');
    assert.equal(loggableUrl('/healthz'), '/healthz');
  });

  test('OpenID4VP request tokens and response codes go too, plain or URL-encoded in a request_uri', () => {
    const token = 'tok_Zm9yZ2VkLXJlcXVlc3QtdG9rZW4tMDEyMzQ1Njc4OQ';
    const code = 'rc_cmVzcG9uc2UtY29kZS1vZi10aGUtcG9ydGFsLTAxMjM';
    const requestUri = `https://verify.example/openid4vp/v1/sessions/sess_1/request?token=${token}&device=same`;
    const line = JSON.stringify({
      url: `/openid4vp/v1/sessions/sess_1/response?token=${token}`,
      redirect: `https://verify.example/verify/sess_1?response_code=${code}`,
      openid4vpUri: `openid4vp://?client_id=x509_san_dns%3Averify.example&request_uri=${encodeURIComponent(requestUri)}&request_uri_method=post`,
      other: `https://x.example/?a=1%26response_code%3D${code}%26b%3D2`,
      field: 'access_token=kept',
    });
    const out = redactSecrets(line);
    assert.ok(!out.includes(token), out);
    assert.ok(!out.includes(code), out);
    assert.ok(out.includes('%26device%3Dsame'), 'only the token value goes');
    assert.ok(out.includes('&request_uri_method=post'), out);
    assert.ok(out.includes('%26b%3D2'), out);
    assert.ok(out.includes('access_token=kept'), 'another parameter ending in token is not one');
    assert.doesNotThrow(() => JSON.parse(out), 'the line stays valid JSON');
    assert.equal(
      loggableUrl(`/openid4vp/v1/sessions/sess_1/request?token=${token}&device=same`),
      '/openid4vp/v1/sessions/sess_1/request?token=[redacted]&device=same',
    );
    assert.equal(loggableUrl(`/verify/sess_1?response_code=${code}`), '/verify/sess_1?response_code=[redacted]');
  });

  test('the logged URL loses every credential-like parameter, by its name in any case or encoding', () => {
    assert.equal(
      loggableUrl('/cb?state=s1&Access_Token=a1&access%5Ftoken=a2&SAMLRESPONSE=PHN%2B&monkey=m1&code=c1#f'),
      '/cb?state=s1&Access_Token=[redacted]&access%5Ftoken=[redacted]&SAMLRESPONSE=[redacted]&monkey=m1&code=[redacted]#f',
    );
    assert.equal(loggableUrl('/cb?key=&password=p%ZZ'), '/cb?key=[redacted]&password=[redacted]');
    const nested = `https://x.example/?next=${encodeURIComponent('https://y.example/cb?a=1&client_secret=cs1&b=2')}`;
    const out = redactSecrets(JSON.stringify({ nested }));
    assert.ok(!out.includes('cs1'), out);
    assert.ok(out.includes('%26client_secret%3D[redacted]%26b%3D2'), out);
  });

  test('objects logged with secret fields are censored by name, before the pattern scan', () => {
    const { lines, logger } = capture();
    logger.info({ secret: 'plain-looking', nested: { token: 'also-plain', nonce: 'xyz' } }, 'm');
    const [line] = parsed(lines);
    assert.equal(line.secret, '[redacted]');
    assert.deepEqual(line.nested, { token: '[redacted]', nonce: '[redacted]' });
  });

  test('LOG_FORMAT=pretty writes human lines, still redacted', () => {
    const { lines, logger } = capture('info', 'pretty');
    logger.info({ key }, 'made a key');
    const out = lines.join('');
    assert.match(out, /INFO.*made a key/);
    assert.throws(() => JSON.parse(out));
    assert.ok(!out.includes(key.slice(8)), out);
  });

  /** The startup warnings about `setting`. */
  const warningsAbout = (setting: string, config: Parameters<typeof logStartupWarnings>[1]) => {
    const { lines, logger } = capture();
    logStartupWarnings(logger, config);
    return parsed(lines).filter((r) => r.setting === setting);
  };

  test('OUTBOUND_ALLOW_PRIVATE_TARGETS=true (or its alias) is warned about once at start, and only then', () => {
    for (const name of ['OUTBOUND_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_ALLOW_PRIVATE_TARGETS']) {
      const on = warningsAbout(
        'OUTBOUND_ALLOW_PRIVATE_TARGETS',
        testConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: '', [name]: 'true' }),
      );
      assert.equal(on.length, 1, name);
      assert.equal(on[0].level, 40);
      assert.match(String(on[0].msg), /OUTBOUND_ALLOW_PRIVATE_TARGETS=true/);
    }
    const off = warningsAbout(
      'OUTBOUND_ALLOW_PRIVATE_TARGETS',
      testConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'false' }),
    );
    assert.equal(off.length, 0);
  });

  test('signing OpenID4VP requests with the self-signed sandbox certificate is an error logged once at start', () => {
    const unset = testConfig({});
    const on = warningsAbout('OPENID4VP_SIGNING_KEY_FILE', unset);
    assert.equal(on.length, 1);
    assert.equal(on[0].level, 50);
    assert.match(String(on[0].msg), /OPENID4VP_SIGNING_KEY_FILE is not set.*live sessions.*self-signed sandbox.*HAIP/);
    assert.equal(
      warningsAbout('OPENID4VP_SIGNING_KEY_FILE', testConfig({ OPENID4VP_CLIENT_ID_PREFIX: 'x509_san_dns' })).length,
      1,
    );
    const configured = {
      ...unset,
      openid4vp: { ...unset.openid4vp, signingKeyPem: 'PEM', certificateChainPem: 'PEM' },
    };
    assert.equal(warningsAbout('OPENID4VP_SIGNING_KEY_FILE', configured).length, 0);
    // A worker signs nothing, and redirect_uri requests are unsigned.
    assert.equal(warningsAbout('OPENID4VP_SIGNING_KEY_FILE', testConfig({ ROLE: 'worker' })).length, 0);
    const unsigned = testConfig({ OPENID4VP_CLIENT_ID_PREFIX: 'redirect_uri', BASE_URL: 'http://localhost:8080' });
    assert.equal(warningsAbout('OPENID4VP_SIGNING_KEY_FILE', unsigned).length, 0);
  });
});

forEachDialect('logs of a full flow', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const { lines, logger } = capture('trace');
  before(async () => {
    // The access log is off by default; this flow checks its lines too.
    h = await startHarness(dialect, { ACCESS_LOG: 'true' }, { logger });
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver.close();
    await h.close();
  });

  test('no nonce, API key or webhook secret in any line, at level trace; one line per request and per failure', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const rotated = await h.app.inject({
      method: 'POST',
      url: `/org/v1/webhooks/${endpoint.id}/rotate-secret`,
      headers: tenant.auth,
      payload: {},
    });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const secrets = [tenant.secret, endpoint.secret, rotated.json().data.secret as string];

    const s = await createSession(h, tenant);
    const request = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
    });
    assert.equal(request.statusCode, 200);
    // A wrong nonce (404) and a presentation bound to another nonce (400) are logged too.
    const wrong = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=nonce_${'x'.repeat(43)}`,
    });
    assert.equal(wrong.statusCode, 404);
    assert.equal((await consent(h, s)).statusCode, 200);
    const otherNonce = `nonce_${'y'.repeat(43)}`;
    const rejected = await submit(h, s, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: otherNonce }));
    assert.equal(rejected.statusCode, 400, rejected.body);
    // An OpenID4VP wallet fetches the signed request by the request_uri of openid4vpUri (its token).
    const requestUri = new URL(String(new URL(s.openid4vpUri).searchParams.get('request_uri')));
    const requestToken = String(requestUri.searchParams.get('token'));
    const requestObject = await h.app.inject({ method: 'GET', url: `${requestUri.pathname}${requestUri.search}` });
    assert.equal(requestObject.statusCode, 200, requestObject.body);
    logger.info({ openid4vpUri: s.openid4vpUri }, 'a logged openid4vpUri');
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', presentation)).statusCode, 200);

    // The receiver fails the first delivery, then accepts the retry.
    receiver.respondWith({ status: 500, body: `echo ${s.challengeNonce}` });
    const worker = workerFor(h, { log: logger });
    const firstAttemptAt = h.clock.now().getTime();
    assert.equal((await worker.runOnce()).retrying, 1);
    h.clock.advance(60_000);
    assert.equal((await worker.runOnce()).succeeded, 1);
    await worker.stop();

    const all = lines.join('');
    assert.ok(lines.length >= 9, 'the flow was logged');
    for (const secret of [s.challengeNonce, s.challengeNonce.slice(6), otherNonce.slice(6), requestToken, ...secrets])
      assert.ok(!all.includes(secret), `a log line contains ${secret.slice(0, 10)}…`);
    assert.ok(!/authorization/i.test(all.replace(/"authorization":"\[redacted\]"/g, '')), 'no header is logged');

    const records = parsed(lines);
    const requestLines = records.filter((r) => r.msg === 'request');
    assert.equal(requestLines.length, 9, 'one line per request');
    assert.ok(requestLines.every((r) => typeof r.reqId === 'string' && typeof r.statusCode === 'number'));
    assert.ok(requestLines.some((r) => r.url === `/verification/v1/sessions/${s.sessionId}/request?nonce=[redacted]`));
    assert.ok(requestLines.some((r) => r.url === `/openid4vp/v1/sessions/${s.sessionId}/request?token=[redacted]`));
    assert.equal(records.filter((r) => r.msg === 'incoming request' || r.msg === 'request completed').length, 0);

    const failures = records.filter((r) => String(r.msg).startsWith('webhook delivery attempt failed'));
    assert.equal(failures.length, 1, 'one line per failed attempt');
    const [failure] = failures;
    assert.equal(failure.level, 40);
    assert.equal(failure.endpointId, endpoint.id);
    assert.match(String(failure.deliveryId), /^del_/);
    assert.equal(failure.statusCode, 500);
    assert.equal(failure.outcome, 'http_error');
    // The first retry of the default schedule, 10 s after the attempt (no jitter in workerFor).
    assert.equal(failure.nextAttemptAt, new Date(firstAttemptAt + 10_000).toISOString());
  });
});

forEachDialect('the access log, off by default', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  const { lines, logger } = capture('info');
  before(async () => {
    h = await startHarness(dialect, {}, { logger });
    // A route that fails as a bug would: the one kind of answer still logged without ACCESS_LOG.
    h.app.get('/test-only/fault', async () => {
      throw new Error('an unexpected fault');
    });
    tenant = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  /** Two answered requests: a session created, then read. */
  async function createAndReadSession(): Promise<void> {
    const s = await createSession(h, tenant);
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}`,
      headers: tenant.auth,
    });
    assert.equal(read.statusCode, 200);
  }

  test('answered requests log nothing; a 5xx logs its request line and its error under the X-Request-Id', async () => {
    assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assert.equal((await h.app.inject({ method: 'GET', url: '/org/v1/apps' })).statusCode, 401);
    await createAndReadSession();
    assert.deepEqual(
      parsed(lines).filter((r) => r.reqId !== undefined),
      [],
      'no line for requests answered without a fault',
    );

    const fault = await h.app.inject({ method: 'GET', url: '/test-only/fault?nonce=nonce_secret' });
    assert.equal(fault.statusCode, 500);
    const reqId = fault.headers['x-request-id'];
    const records = parsed(lines).filter((r) => r.reqId !== undefined);
    assert.ok(records.every((r) => r.reqId === reqId));
    const requestLines = records.filter((r) => r.msg === 'request');
    assert.equal(requestLines.length, 1, 'one request line for the failed request');
    assert.equal(requestLines[0].level, 50);
    assert.equal(requestLines[0].statusCode, 500);
    assert.equal(requestLines[0].url, '/test-only/fault?nonce=[redacted]');
    assert.equal(records.filter((r) => r.msg === 'request failed').length, 1, 'the error, beside it');
  });

  test("a request's child logger is made only when it writes a line", async () => {
    const child = mock.method(logger, 'child');
    try {
      await createAndReadSession();
      assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      assert.equal(child.mock.callCount(), 0, 'no child for requests that log nothing');

      const fault = await h.app.inject({ method: 'GET', url: '/test-only/fault' });
      assert.equal(fault.statusCode, 500);
      assert.equal(child.mock.callCount(), 1, 'one child for the request, however many lines it writes');
      assert.deepEqual(child.mock.calls[0].arguments[0], { reqId: fault.headers['x-request-id'] });
    } finally {
      child.mock.restore();
    }
  });
});

/**
 * Query parameters whose names say they carry a credential (issue 24, item 7): a client that puts
 * its token in the URL, an OAuth or SAML callback, a wrong admin token sent as `?access_token=`.
 * Their values never reach a line, on any route, at any level; their names do, with the marker.
 */
const CREDENTIAL_PARAMETERS = [
  'access_token',
  'api_key',
  'apikey',
  'key',
  'secret',
  'password',
  'client_secret',
  'code',
  'token',
  'response_code',
  'nonce',
  'SAMLResponse',
  'id_token',
];

forEachDialect('credentials in query strings', (dialect) => {
  for (const level of ['trace', 'info'] as const) {
    describe(`LOG_LEVEL=${level}, ACCESS_LOG=true`, () => {
      let h: Harness;
      let tenant: Tenant;
      const { lines, logger } = capture(level);
      const adminToken = 'admin-token-0123456789abcdef';
      before(async () => {
        h = await startHarness(dialect, { ACCESS_LOG: 'true', ADMIN_TOKEN: adminToken }, { logger });
        // A fault whose error quotes the URL, as a library's message may: the error line too.
        h.app.get('/test-only/fault', async (request) => {
          throw new Error(`upstream refused ${request.url}`);
        });
        tenant = await h.bootstrap('sandbox');
      });
      after(() => h.close());

      test('every credential-like parameter is logged by name with its value redacted, on every route', async () => {
        const sent: Array<{ name: string; value: string }> = [];
        const send = async (path: string, name: string, headers: Record<string, string> = {}) => {
          // Unique per request: a value found in the log says which request leaked it.
          const value = `leak${sent.length}x${Math.random().toString(36).slice(2, 10)}`;
          sent.push({ name, value });
          const res = await h.app.inject({
            method: 'GET',
            url: `${path}?keep=visible&${name}=${value}&after=also-visible`,
            headers,
          });
          return res.statusCode;
        };
        // A wrong admin token as ?access_token= on an admin route (ADMIN_TOKEN is set): a 401.
        assert.equal(await send('/admin/v1/organizations', 'access_token', { authorization: 'Bearer wrong' }), 401);
        assert.equal(await send('/admin/v1/organizations', 'access_token'), 401);
        for (const name of CREDENTIAL_PARAMETERS) {
          for (const variant of [name, name.toUpperCase()]) {
            assert.equal(await send('/healthz', variant), 200);
            assert.equal(await send('/no/such/route', variant), 404);
            assert.equal(await send('/org/v1/apps', variant, tenant.auth), 400, 'an unknown query parameter');
            assert.equal(
              await send('/admin/v1/organizations', variant, { authorization: `Bearer ${adminToken}` }),
              400,
            );
            assert.equal(await send('/test-only/fault', variant), 500);
          }
        }
        // A name sent percent-encoded is the same parameter once decoded.
        assert.equal(await send('/healthz', 'access%5Ftoken'), 200);

        const all = lines.join('');
        for (const { name, value } of sent) {
          assert.ok(!all.includes(value), `the value of ?${name}= is in the log`);
          assert.ok(all.includes(`${name}=[redacted]`), `?${name}= is logged by name, redacted`);
        }
        const records = parsed(lines);
        const requestLines = records.filter((r) => r.msg === 'request');
        assert.equal(requestLines.length, sent.length, 'one access line per request');
        assert.ok(
          requestLines.every((r) => /\?keep=visible&[^&]+=\[redacted\]&after=also-visible$/.test(String(r.url))),
        );
        assert.equal(records.filter((r) => r.msg === 'request failed').length, CREDENTIAL_PARAMETERS.length * 2);
        if (level === 'trace')
          assert.equal(records.filter((r) => r.msg === 'request received').length, sent.length, 'debug lines too');
      });

      test('parameters that only look alike are kept', async () => {
        await h.app.inject({ method: 'GET', url: '/healthz?monkey=banana&keys=ring&codename=zulu&tokens=3' });
        const last = parsed(lines)
          .filter((r) => r.msg === 'request')
          .at(-1)!;
        assert.equal(last.url, '/healthz?monkey=banana&keys=ring&codename=zulu&tokens=3');
      });

      test('a line that quotes a URL with a credential-like parameter is redacted, whoever wrote it', () => {
        logger.error(
          { err: new Error('GET https://status.example/list?api_key=leaked-api-key-1&v=2 failed') },
          'fetch failed: https://idp.example/cb?SAMLResponse=PHNhbWw%2BbGVha2Vk&RelayState=r',
        );
        const out = lines.at(-1)!;
        assert.ok(!out.includes('leaked-api-key-1'), out);
        assert.ok(!out.includes('PHNhbWw'), out);
        assert.ok(out.includes('api_key=[redacted]&v=2'), out);
        assert.ok(out.includes('SAMLResponse=[redacted]&RelayState=r'), out);
      });
    });
  }
});

forEachDialect('request ids', (dialect) => {
  for (const trusted of [false, true]) {
    describe(`TRUST_PROXY_REQUEST_ID=${trusted}`, () => {
      let h: Harness;
      before(async () => {
        h = await startHarness(dialect, { TRUST_PROXY_REQUEST_ID: String(trusted) });
      });
      after(() => h.close());

      const idFor = async (header?: string) => {
        const res = await h.app.inject({
          method: 'GET',
          url: '/healthz',
          headers: header === undefined ? {} : { 'x-request-id': header },
        });
        return String(res.headers['x-request-id']);
      };

      test(trusted ? 'a valid incoming id is kept' : 'an incoming id is ignored', async () => {
        const id = await idFor('proxy-7f3a/abc:1');
        if (trusted) assert.equal(id, 'proxy-7f3a/abc:1');
        else assert.match(id, /^req_/);
      });

      test('an invalid or missing incoming id gets a fresh one', async () => {
        for (const bad of ['x'.repeat(129), 'has space', 'tab\there', ''])
          assert.match(await idFor(bad), /^req_/, JSON.stringify(bad));
        assert.match(await idFor(), /^req_/);
        if (trusted) assert.equal(await idFor('x'.repeat(128)), 'x'.repeat(128));
      });
    });
  }
});
