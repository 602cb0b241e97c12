import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { OP, ResponseIss, ResponseMode, SupportedVersion, type VerifyJwtCallback } from '@sphereon/did-auth-siop';
import type { ResolvedOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { forEachDialect, type Harness, type Tenant } from '../support/harness.ts';
import { holderCallbacks, presentFromExport, type ExportedCredential } from '../support/openid4vp-holder.ts';
import {
  createSession,
  encryptedTo,
  exportCredential,
  listeningHarness,
  readSession,
  sameDevice,
} from '../support/openid4vp-flows.ts';

/**
 * Sphereon's OP (`@sphereon/did-auth-siop` 0.20.1, the holder side of a wallet library we did not
 * write) fetches our request object by its request_uri, parses and validates it (version, schema,
 * client_id, nonce, state, response_uri, DCQL query) and answers it with an SD-JWT VC presentation,
 * in both response modes, cross-device and same-device.
 *
 * Sphereon treats `x509_hash` like `x509_san_dns` (getRequestObjectJwtVerifier hands both to
 * getX5cVerifier): it checks neither the hash nor the chain itself but leaves the `x5c` to the
 * wallet's verifyJwtCallback; ours checks the chain to the pinned certificate, the signature, and
 * that the client identifier is the SHA-256 of the leaf. It fetches the request_uri by GET (it
 * ignores `request_uri_method=post`).
 */
forEachDialect('OpenID4VP with Sphereon (@sphereon/did-auth-siop)', (dialect) => {
  for (const mode of ['direct_post', 'direct_post.jwt'] as const) {
    describe(mode, () => {
      let h: Harness;
      let tenant: Tenant;
      let anchors: string[];
      let credential: ExportedCredential;

      before(async () => {
        const started = await listeningHarness(dialect, { OPENID4VP_RESPONSE_MODE: mode });
        ({ h, tenant } = started);
        anchors = [(await h.app.inject({ url: '/openid4vp/v1/certificate' })).body];
        credential = await exportCredential(h, started.baseUrl, '--level', 'doctoral');
      });
      after(() => h.close());

      /** The wallet's check of the signed request: chain, signature, and the x509_hash of the leaf. */
      const verifyJwt: VerifyJwtCallback = async (verifier, jwt) => {
        if (verifier.method !== 'x5c') return false;
        const clientId = String(jwt.payload.client_id);
        const hash = createHash('sha256').update(Buffer.from(verifier.x5c[0]!, 'base64')).digest('base64url');
        if (clientId !== `x509_hash:${hash}`) return false;
        const result = await holderCallbacks(anchors).verifyJwt(
          { method: 'x5c', x5c: verifier.x5c, alg: String(jwt.header.alg) },
          { compact: jwt.raw, header: jwt.header as never, payload: jwt.payload as never },
        );
        return result.verified;
      };

      const op = () =>
        OP.builder()
          .withVerifyJwtCallback(verifyJwt)
          // Required by the builder; only SIOP id_tokens are signed with it, and our request asks for none.
          .withCreateJwtCallback(() => Promise.reject(new Error('no id_token is asked')))
          // Required too; it would be an id_token's iss.
          .withIssuer(ResponseIss.SELF_ISSUED_V2)
          .withSupportedVersions([SupportedVersion.OID4VP_v1])
          .withResponseMode(mode === 'direct_post' ? ResponseMode.DIRECT_POST : ResponseMode.DIRECT_POST_JWT)
          .withHasher((data, alg) =>
            createHash(alg.replace('-', ''))
              .update(typeof data === 'string' ? data : new Uint8Array(data))
              .digest(),
          )
          .build();

      /** Sphereon parses and verifies the request, answers it, and posts the answer to the response_uri. */
      const answer = async (uri: string) => {
        const holder = op();
        const verified = await holder.verifyAuthorizationRequest(uri);
        assert.ok(verified.requestObject, 'the request object, fetched by reference');
        const payload = verified.requestObject.getPayload() as Record<string, unknown>;
        assert.ok(verified.dcqlQuery, 'the DCQL query, parsed by Sphereon');
        assert.match(String(payload.client_id), /^x509_hash:/);
        assert.equal(payload.response_mode, mode);
        const resolved = {
          authorizationRequestPayload: payload,
          dcql: { query: payload.dcql_query },
        } as unknown as ResolvedOpenid4vpAuthorizationRequest;
        const presentation = await presentFromExport(credential, resolved, {
          iat: Math.floor(h.clock.now().getTime() / 1000),
        });
        const response = await holder.createAuthorizationResponse(verified, {
          dcqlResponse: { dcqlPresentation: { student_credential: [presentation] } },
        });
        const res = await holder.submitAuthorizationResponse(response, async ({ authorizationResponsePayload }) => ({
          response: await encryptedTo(resolved, authorizationResponsePayload as Record<string, unknown>),
        }));
        assert.equal(res.status, 200, await res.clone().text());
        return (await res.json()) as { redirect_uri?: string };
      };

      test('it parses our x509_hash request and its answer completes the session verified', async () => {
        const session = await createSession(h, tenant);
        const result = await answer(session.openid4vpUri);
        assert.equal(result.redirect_uri, undefined, 'cross-device: nowhere to send the student');
        const read = await readSession(h, tenant, session.sessionId);
        assert.deepEqual([read.status, read.result?.verified, read.result?.protocol], ['completed', true, 'openid4vp']);
      });

      test('same-device: its redirect, followed in the browser that opened the portal, completes the session', async () => {
        const session = await createSession(h, tenant);
        const page = await h.app.inject({ url: `/verify/${session.sessionId}` });
        const cookie = String(page.headers['set-cookie']).split(';')[0]!;
        const result = await answer(sameDevice(session.openid4vpUri));
        assert.ok(result.redirect_uri, 'a redirect_uri back to the portal');
        assert.equal((await readSession(h, tenant, session.sessionId)).status, 'consented');
        const back = new URL(result.redirect_uri);
        await h.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie } });
        const read = await readSession(h, tenant, session.sessionId);
        assert.deepEqual([read.status, read.result?.verified], ['completed', true]);
      });
    });
  }
});
