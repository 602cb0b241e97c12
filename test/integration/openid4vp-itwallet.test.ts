import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { ResolvedOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import {
  createAuthorizationResponse,
  extractClientIdPrefix,
  fetchAuthorizationRequest,
  fetchAuthorizationResponse,
  parseAuthorizeRequest,
} from '@pagopa/io-wallet-oid4vp';
import { IoWalletSdkConfig, ItWalletSpecsVersion } from '@pagopa/io-wallet-utils';
import { forEachDialect, type Harness, type Tenant } from '../support/harness.ts';
import { holderCallbacks, presentFromExport, type ExportedCredential } from '../support/openid4vp-holder.ts';
import {
  createSession,
  exportCredential,
  listeningHarness,
  readSession,
  sameDevice,
} from '../support/openid4vp-flows.ts';

/**
 * The Italian IT-Wallet SDK (`@pagopa/io-wallet-oid4vp` 1.2.1, a wallet library we did not write,
 * which accepts only the `x509_hash` and `openid_federation` client identifiers and wants a `kid`)
 * fetches, verifies and parses our request object, and answers it with its own encrypted response.
 * It answers only `direct_post.jwt` (its request schema allows no other response mode).
 */
forEachDialect('OpenID4VP with the IT-Wallet SDK (@pagopa/io-wallet-oid4vp)', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let anchors: string[];
  let credential: ExportedCredential;
  const config = new IoWalletSdkConfig({ itWalletSpecsVersion: ItWalletSpecsVersion.V1_3 });

  before(async () => {
    const started = await listeningHarness(dialect);
    ({ h, tenant } = started);
    anchors = [(await h.app.inject({ url: '/openid4vp/v1/certificate' })).body];
    credential = await exportCredential(h, started.baseUrl, '--level', 'doctoral');
  });
  after(() => h.close());

  /** What the SDK does with an openid4vpUri: fetch the request object (POST, with its metadata), verify and parse it. */
  const parse = async (uri: string) => {
    const fetched = await fetchAuthorizationRequest({
      authorizeRequestUrl: uri,
      callbacks: { fetch },
      walletMetadata: { client_id_prefixes_supported: ['x509_hash'], response_modes_supported: ['direct_post.jwt'] },
      walletNonce: randomBytes(16).toString('base64url'),
    });
    assert.equal(fetched.sendBy, 'reference');
    return parseAuthorizeRequest({
      config,
      requestObjectJwt: fetched.requestObjectJwt,
      callbacks: { verifyJwt: holderCallbacks(anchors).verifyJwt },
    });
  };

  /** Its encrypted answer, with a presentation of the exported credential, posted to the response_uri. */
  const respond = async (payload: Awaited<ReturnType<typeof parse>>['payload']) => {
    const resolved = {
      authorizationRequestPayload: payload,
      dcql: { query: payload.dcql_query },
    } as unknown as ResolvedOpenid4vpAuthorizationRequest;
    const presentation = await presentFromExport(credential, resolved, {
      iat: Math.floor(h.clock.now().getTime() / 1000),
    });
    const callbacks = holderCallbacks(anchors);
    const created = await createAuthorizationResponse({
      callbacks: { encryptJwe: callbacks.encryptJwe, generateRandom: async (n) => randomBytes(n) },
      requestObject: payload,
      rpJwks: { jwks: payload.client_metadata!.jwks as never },
      vp_token: { student_credential: [presentation] },
    });
    return fetchAuthorizationResponse({
      authorizationResponseJarm: created.jarm.responseJwe,
      callbacks: { fetch },
      presentationResponseUri: payload.response_uri,
    });
  };

  test('it parses our request in x509_hash mode, signature and kid checked, and its answer verifies', async () => {
    const session = await createSession(h, tenant);
    const { header, payload } = await parse(session.openid4vpUri);
    assert.equal(extractClientIdPrefix(payload.client_id), 'x509_hash');
    assert.equal(typeof header.kid, 'string');
    assert.equal(payload.response_mode, 'direct_post.jwt');
    assert.equal(typeof payload.state, 'string');

    const result = await respond(payload);
    assert.equal(result.redirect_uri, undefined, 'cross-device: nowhere to send the student');
    const read = await readSession(h, tenant, session.sessionId);
    assert.deepEqual([read.status, read.result?.verified, read.result?.protocol], ['completed', true, 'openid4vp']);
  });

  test('same-device: its redirect, followed in the browser that opened the portal, completes the session', async () => {
    const session = await createSession(h, tenant);
    const page = await h.app.inject({ url: `/verify/${session.sessionId}` });
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    const { payload } = await parse(sameDevice(session.openid4vpUri));
    const result = await respond(payload);
    assert.ok(result.redirect_uri, 'a redirect_uri back to the portal');
    assert.equal((await readSession(h, tenant, session.sessionId)).status, 'consented');
    const back = new URL(result.redirect_uri);
    await h.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie } });
    const read = await readSession(h, tenant, session.sessionId);
    assert.deepEqual([read.status, read.result?.verified], ['completed', true]);
  });
});
