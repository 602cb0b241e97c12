import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createLogger } from '../../src/logging.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, type CreatedSession } from '../support/sessions.ts';

/**
 * The OpenID4VP routes answer in OAuth's words, but a busy or stopping server is neither the
 * wallet's mistake nor a fault: the rate limiter's 429 and the drain's 503 keep their status and
 * Retry-After, and nothing is logged as an error. Form fields that carry JSON or prose may span
 * lines; control characters are still refused.
 */
forEachDialect('OpenID4VP errors: limits, drain and multi-line form fields', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ logLevel: 'info', logFormat: 'json' }, destination);
  /** Faults as logged: the error handler's 'request failed' with the error (a 5xx's request line is not one). */
  const faults = () =>
    lines
      .map((l) => JSON.parse(l) as { msg: string; err?: unknown })
      .filter((r) => r.msg === 'request failed' || r.err);
  let addresses = 0;
  /** A client address of its own, so one test's requests do not spend another's budget. */
  const fresh = () => `203.0.113.${++addresses}`;

  before(async () => {
    h = await startHarness(
      dialect,
      { RATE_LIMIT_PUBLIC_PER_MINUTE: '2', RATE_LIMIT_HEAVY_PER_MINUTE: '1', PROOF_WORKERS: '0' },
      { logger },
    );
    tenant = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  /** The request_uri of a session's openid4vpUri, as a path with its query (the token). */
  const requestPath = (s: CreatedSession) => {
    const uri = new URL(String(new URL(s.openid4vpUri).searchParams.get('request_uri')));
    return `${uri.pathname}${uri.search}`;
  };
  const responsePath = (s: CreatedSession) => requestPath(s).replace('/request?', '/response?');
  const form = (url: string, body: Record<string, string>, remoteAddress = fresh()) =>
    h.app.inject({
      method: 'POST',
      url,
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(body).toString(),
    });

  function assertTemporarilyUnavailable(res: LightMyRequestResponse, status: number, retryAfter: string) {
    assert.equal(res.statusCode, status, res.body);
    const body = res.json();
    assert.equal(body.error, 'temporarily_unavailable', res.body);
    assert.equal(typeof body.error_description, 'string');
    assert.equal(body.success, undefined, 'OAuth, not the API envelope');
    assert.equal(res.headers['retry-after'], retryAfter);
    assert.equal(res.headers['cache-control'], 'no-store');
  }

  test('a rate-limited wallet gets 429 with Retry-After, on request_uri and response_uri, and no error is logged', async () => {
    // Every test here starts at the beginning of a fresh window: the window ends in 60 s.
    h.clock.advance(60_000);
    const address = fresh();
    const fetchRequest = () =>
      h.app.inject({
        method: 'GET',
        url: '/openid4vp/v1/sessions/sess_unknown/request?token=x',
        remoteAddress: address,
      });
    assert.equal((await fetchRequest()).statusCode, 404);
    assert.equal((await fetchRequest()).statusCode, 404);
    assertTemporarilyUnavailable(await fetchRequest(), 429, '60');

    // Junk on the response route spends the address's budget too (proof work is bounded by the
    // proof pool's queue, not by a count per address).
    const other = fresh();
    const respond = () =>
      form('/openid4vp/v1/sessions/sess_unknown/response?token=x', { error: 'access_denied' }, other);
    assert.equal((await respond()).statusCode, 404);
    assert.equal((await respond()).statusCode, 404);
    const limited = await respond();
    assertTemporarilyUnavailable(limited, 429, '60');
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.deepEqual(faults(), [], 'a 429 is not a fault');
  });

  test("a wallet presenting the session's token counts against the session, not its address", async () => {
    h.clock.advance(60_000);
    const s = await createSession(h, tenant);
    const address = fresh();
    // Twice the address's budget of 2: a campus's wallets behind one address share no budget.
    for (let i = 0; i < 4; i++) {
      const res = await h.app.inject({ url: requestPath(s), remoteAddress: address });
      assert.equal(res.statusCode, 200, res.body);
    }
    const wrongToken = requestPath(s).replace(/token=[^&]+/, 'token=wrong');
    assert.equal((await h.app.inject({ url: wrongToken, remoteAddress: address })).statusCode, 404);
    assert.equal((await h.app.inject({ url: wrongToken, remoteAddress: address })).statusCode, 404);
    assertTemporarilyUnavailable(await h.app.inject({ url: wrongToken, remoteAddress: address }), 429, '60');
  });

  test('pretty-printed wallet_metadata and a multi-line error_description are accepted', async () => {
    h.clock.advance(60_000);
    const s = await createSession(h, tenant);
    const metadata = JSON.stringify({ request_object_signing_alg_values_supported: ['ES256'] }, null, 2);
    const requested = await form(requestPath(s), { wallet_nonce: 'qPmxiNFCR3QTm19POc8u', wallet_metadata: metadata });
    assert.equal(requested.statusCode, 200, requested.body);

    // A pretty-printed vp_token reaches the verifier (and fails there), not the text guard.
    const vpToken = JSON.stringify({ student_credential: ['not-a-presentation'] }, null, 2);
    const pretty = await form(responsePath(s), { vp_token: vpToken });
    assert.doesNotMatch(pretty.body, /single line/, pretty.body);

    const s2 = await createSession(h, tenant);
    const declined = await form(responsePath(s2), {
      error: 'access_denied',
      error_description: 'The student said no.\r\nTwice.\tReally.',
    });
    assert.equal(declined.statusCode, 200, declined.body);
  });

  test('NUL and other control characters in those fields are still refused', async () => {
    h.clock.advance(60_000);
    const s = await createSession(h, tenant);
    for (const bad of ['{"a":"\u0000"}', '{"a":1}\u0001', '{\u001b[31m}']) {
      const res = await form(requestPath(s), { wallet_metadata: bad });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error, 'invalid_request');
      assert.match(res.json().error_description, /NUL|control characters/);
    }
    const res = await form(responsePath(s), { error: 'access_denied', error_description: 'no\u0007' });
    assert.equal(res.statusCode, 400, res.body);
    assert.match(res.json().error_description, /control characters/);
    // A line break is still refused where nothing spans lines: the wallet nonce.
    const nonce = await form(requestPath(s), { wallet_nonce: 'a\nb' });
    assert.equal(nonce.statusCode, 400, nonce.body);
    assert.match(nonce.json().error_description, /single line/);
  });

  test('a request that arrives while the server stops gets 503 with Retry-After, not a server_error', async () => {
    h.clock.advance(60_000);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.app.server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // The head is still arriving when the server stops: the connection is not idle.
    socket.write('GET /openid4vp/v1/sessions/sess_unknown/request?token=x HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await new Promise((resolve) => setImmediate(resolve));
    const closing = h.app.close();
    while (h.app.server.listening) await new Promise((resolve) => setImmediate(resolve));
    socket.write('\r\n');
    await closed;
    await closing;

    const [head, body] = received.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 503 /, received);
    assert.match(head, /\r\nretry-after: 1\r\n/i, received);
    assert.match(head, /\r\nconnection: close\r\n/i, received);
    const parsed = JSON.parse(body.replace(/^[0-9a-f]+\r\n|\r\n0\r\n$/g, '')) as { error: string };
    assert.equal(parsed.error, 'temporarily_unavailable', received);
    assert.deepEqual(faults(), [], 'a 503 while stopping is not a fault');
  });
});
