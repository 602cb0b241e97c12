import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { forEachDialect, type Harness, type Tenant } from '../support/harness.ts';
import type { ExportedCredential } from '../support/openid4vp-holder.ts';
import {
  createSession,
  eventTypes,
  exportCredential,
  listeningHarness,
  readSession,
} from '../support/openid4vp-flows.ts';
import { dcApiAnswer, resolveDcApi, type DcApiRequest } from '../support/dc-api-holder.ts';

/**
 * OpenID4VP over the Digital Credentials API (OpenID4VP 1.0 Appendix A; HAIP 1.0), at the HTTP
 * level: the requests the portal page hands the browser, and the answers it posts back, made by
 * the independent holder (test/support/dc-api-holder.ts). The browser itself is in
 * test/e2e/dc-api-browser.test.ts.
 */

interface Started {
  h: Harness;
  tenant: Tenant;
  anchors: string[];
  credential: ExportedCredential;
}

async function start(dialect: Parameters<typeof listeningHarness>[0], overrides: Record<string, string> = {}) {
  const started = await listeningHarness(dialect, overrides);
  const anchors = [(await started.h.app.inject({ url: '/openid4vp/v1/certificate' })).body];
  const credential = await exportCredential(started.h, started.baseUrl, '--level', 'postgraduate');
  return { ...started, anchors, credential };
}

const tokenOf = (openid4vpUri: string) =>
  new URL(new URL(openid4vpUri).searchParams.get('request_uri')!).searchParams.get('token')!;

async function requestsOf(h: Harness, session: { sessionId: string; openid4vpUri: string }) {
  const res = await h.app.inject({
    url: `/openid4vp/v1/sessions/${session.sessionId}/dc-api/request?token=${tokenOf(session.openid4vpUri)}`,
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['cache-control'], 'no-store');
  return res.json().requests as DcApiRequest[];
}

async function post(h: Harness, session: { sessionId: string; openid4vpUri: string }, body: unknown) {
  const res = await h.app.inject({
    method: 'POST',
    url: `/openid4vp/v1/sessions/${session.sessionId}/dc-api/response?token=${tokenOf(session.openid4vpUri)}`,
    payload: body as Record<string, unknown>,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

forEachDialect('OpenID4VP over the Digital Credentials API', (dialect) => {
  let s: Started & { baseUrl: string };
  before(async () => {
    s = await start(dialect);
  });
  after(() => s.h.close());

  const status = async (sessionId: string) => (await readSession(s.h, s.tenant, sessionId)).status;

  test('two requests: the signed JAR (x509_hash, kid, dc_api.jwt, expected_origins = the portal origin) first, then the unsigned one', async () => {
    const session = await createSession(s.h, s.tenant);
    const [signed, unsigned] = await requestsOf(s.h, session);
    assert.equal(signed!.protocol, 'openid4vp-v1-signed');
    assert.equal(unsigned!.protocol, 'openid4vp-v1-unsigned');
    const jwt = signed!.data.request as string;
    const header = decodeProtectedHeader(jwt);
    assert.equal(header.typ, 'oauth-authz-req+jwt');
    assert.equal(header.alg, 'ES256');
    assert.ok(header.kid && header.x5c?.length, 'kid and x5c');
    const payload = decodeJwt(jwt);
    assert.match(String(payload.client_id), /^x509_hash:/);
    assert.equal(payload.iss, payload.client_id);
    assert.deepEqual(payload.expected_origins, [s.baseUrl]);
    assert.equal(payload.response_mode, 'dc_api.jwt');
    assert.equal(payload.response_uri, undefined);
    assert.equal(unsigned!.data.client_id, undefined, 'the unsigned request is known by its origin');
    assert.equal(unsigned!.data.response_mode, 'dc_api.jwt');
    assert.equal(unsigned!.data.nonce, payload.nonce);

    // What a wallet does with them: the signed one verifies (x5c to the pinned certificate) for this origin only.
    const resolved = await resolveDcApi(signed!, s.baseUrl, s.anchors);
    assert.equal(resolved.client.original.clientId, payload.client_id);
    await assert.rejects(resolveDcApi(signed!, 'https://elsewhere.example', s.anchors), /expected_origins/);
    const resolvedUnsigned = await resolveDcApi(unsigned!, s.baseUrl, s.anchors);
    assert.equal(resolvedUnsigned.client.effective, `origin:${s.baseUrl}`);
  });

  for (const which of [0, 1] as const) {
    test(`an answer to the ${which === 0 ? 'signed' : 'unsigned'} request completes the session verified`, async () => {
      const session = await createSession(s.h, s.tenant);
      const request = (await requestsOf(s.h, session))[which]!;
      const resolved = await resolveDcApi(request, s.baseUrl, s.anchors);
      const data = await dcApiAnswer(resolved, s.credential, s.baseUrl, s.h.clock.now());
      assert.equal(typeof data.response, 'string', 'encrypted (dc_api.jwt)');
      const reply = await post(s.h, session, { protocol: request.protocol, data });
      assert.deepEqual([reply.status, reply.body], [200, {}]);
      const read = await readSession(s.h, s.tenant, session.sessionId);
      assert.equal(read.status, 'completed');
      assert.deepEqual([read.result?.verified, read.result?.protocol], [true, 'openid4vp']);
      assert.deepEqual(await eventTypes(s.h, s.tenant, session.sessionId), [
        'consent.approved',
        'verification.completed',
      ]);
      // Answered once: a replay is refused.
      const again = await post(s.h, session, { protocol: request.protocol, data });
      assert.equal(again.status, 400);
    });
  }

  test('an answer bound to another origin, another nonce or the request_uri audience is a failed attempt with its reason', async () => {
    const session = await createSession(s.h, s.tenant);
    const [signed, unsigned] = await requestsOf(s.h, session);
    const resolved = await resolveDcApi(signed!, s.baseUrl, s.anchors);
    const now = s.h.clock.now();
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        await dcApiAnswer(resolved, s.credential, s.baseUrl, now, { aud: 'origin:https://evil.example' }),
        'audience_mismatch',
      ],
      [await dcApiAnswer(resolved, s.credential, s.baseUrl, now, { nonce: 'another-nonce' }), 'nonce_mismatch'],
      [
        await dcApiAnswer(resolved, s.credential, s.baseUrl, now, { aud: String(resolved.client.original.clientId) }),
        'audience_mismatch',
      ],
      [await dcApiAnswer(resolved, s.credential, s.baseUrl, now, { encrypt: false }), 'malformed_presentation'],
    ];
    for (const [data, reason] of cases) {
      const reply = await post(s.h, session, { protocol: signed!.protocol, data });
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.equal(reply.body.error, 'invalid_request');
      assert.equal(reply.body.reason, reason);
    }
    assert.equal(await status(session.sessionId), 'consented', 'still open after four failed attempts');
    // A wallet that answered the unsigned request for a page of another origin: refused too.
    const elsewhere = await resolveDcApi(unsigned!, 'https://evil.example', s.anchors);
    const reply = await post(s.h, session, {
      protocol: unsigned!.protocol,
      data: await dcApiAnswer(elsewhere, s.credential, 'https://evil.example', now),
    });
    assert.equal(reply.body.reason, 'audience_mismatch');
    const read = await readSession(s.h, s.tenant, session.sessionId);
    assert.deepEqual(
      [read.status, read.result?.verified],
      ['completed', false],
      'the fifth ends it: too_many_attempts',
    );
  });

  test('access_denied declines the session; another error consents nothing and leaves it open', async () => {
    const session = await createSession(s.h, s.tenant);
    const other = await post(s.h, session, {
      protocol: 'openid4vp-v1-unsigned',
      data: { error: 'wallet_unavailable' },
    });
    assert.deepEqual([other.status, other.body], [200, {}]);
    assert.equal(await status(session.sessionId), 'pending');
    const declined = await post(s.h, session, { protocol: 'openid4vp-v1-unsigned', data: { error: 'access_denied' } });
    assert.deepEqual([declined.status, declined.body], [200, {}]);
    assert.equal(await status(session.sessionId), 'declined');
    assert.deepEqual(await eventTypes(s.h, s.tenant, session.sessionId), ['consent.declined']);
  });

  test('bad input: a wrong token, an unknown protocol, no data: OAuth errors', async () => {
    const session = await createSession(s.h, s.tenant);
    const wrong = await s.h.app.inject({
      url: `/openid4vp/v1/sessions/${session.sessionId}/dc-api/request?token=nope`,
    });
    assert.equal(wrong.statusCode, 404);
    assert.equal(wrong.json().error, 'invalid_request');
    for (const body of [{ protocol: 'openid4vp', data: {} }, { protocol: 'openid4vp-v1-signed' }, { data: {} }]) {
      const reply = await post(s.h, session, body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.error, 'invalid_request');
    }
    assert.equal(await status(session.sessionId), 'pending');
  });
});

describe('the Digital Credentials API when PORTAL_URL differs from BASE_URL', () => {
  let s: Started & { baseUrl: string };
  const portal = 'https://portal.example.edu';
  before(async () => {
    s = await start('sqlite', { PORTAL_URL: portal });
  });
  after(() => s.h.close());

  test("the origin is the portal's: expected_origins, the KB-JWT audience; the API's origin is refused", async () => {
    const session = await createSession(s.h, s.tenant);
    const [signed] = await requestsOf(s.h, session);
    assert.deepEqual(decodeJwt(signed!.data.request as string).expected_origins, [portal]);
    const resolved = await resolveDcApi(signed!, portal, s.anchors);
    const wrong = await post(s.h, session, {
      protocol: signed!.protocol,
      data: await dcApiAnswer(resolved, s.credential, s.baseUrl, s.h.clock.now()),
    });
    assert.equal(wrong.body.reason, 'audience_mismatch');
    const right = await post(s.h, session, {
      protocol: signed!.protocol,
      data: await dcApiAnswer(resolved, s.credential, portal, s.h.clock.now()),
    });
    assert.deepEqual([right.status, right.body], [200, {}]);
    assert.equal((await readSession(s.h, s.tenant, session.sessionId)).result?.verified, true);
  });
});
