import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { ResolvedOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import { runCli } from '../../src/cli/main.ts';
import type { CliContext } from '../../src/cli/command.ts';
import {
  buildTestApp,
  forEachDialect,
  startHarness,
  testConfig,
  type Harness,
  type Tenant,
} from '../support/harness.ts';
import { loopbackServer } from '../support/server.ts';
import { operatorChain } from '../support/operator-chain.ts';
import { exportCredential as exportSandboxCredential } from '../support/openid4vp-flows.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, workerFor } from '../support/webhooks.ts';
import {
  holderClient,
  presentFromExport,
  submit,
  uriParameters,
  type ExportedCredential,
  type PresentOptions,
} from '../support/openid4vp-holder.ts';

/** base64url SHA-256 of the DER of a PEM certificate: an x509_hash client identifier's value. */
const sha256 = (pem: string) =>
  createHash('sha256')
    .update(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'))
    .digest('base64url');

/**
 * Interoperability: an independent holder (Openid4vpClient from @openid4vc/openid4vp, @sd-jwt,
 * jose, @peculiar/x509; test/support/openid4vp-holder.ts imports nothing of ours) answers real
 * sessions over HTTP on 127.0.0.1 with a credential exported by `matricula wallet credential`.
 */
forEachDialect('OpenID4VP 1.0 with an independent holder', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let baseUrl: string;
  let plain: { app: FastifyInstance; baseUrl: string };
  /** A third process over the same database, signing with an operator's CA → intermediate → leaf chain. */
  let operator: { app: FastifyInstance; baseUrl: string; rootPem: string; dir: string };
  let receiver: WebhookReceiver;
  let anchor: string;
  let exported: ExportedCredential;

  /** Runs the CLI in this process on the harness clock; stdout and the exit code. */
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const ctx: CliContext = {
      env: {},
      stdout: (text) => out.push(text),
      stderr: (text) => err.push(text),
      clock: h.clock,
      openStore: () => Promise.reject(new Error('not needed')),
      config: () => h.config,
    };
    const code = await runCli(argv, ctx);
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  };

  // The credential's status entry points at that service's sandbox status lists.
  const exportCredential = (...flags: string[]) => exportCredentialFor(h.config.baseUrl, ...flags);
  const exportCredentialFor = (baseUrl: string, ...flags: string[]) => exportSandboxCredential(h, baseUrl, ...flags);

  const createSession = async (
    app: FastifyInstance = h.app,
    requiredClaims = ['is_active_student', 'academic_level'],
  ) => {
    const res = await app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: tenant.auth,
      payload: { appId: tenant.appId, purpose: 'Student discount', requiredClaims },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data as { sessionId: string; openid4vpUri: string; qrPayload: string; challengeNonce: string };
  };
  const status = async (sessionId: string) =>
    (await h.app.inject({ method: 'GET', url: `/verification/v1/sessions/${sessionId}`, headers: tenant.auth })).json()
      .data;

  const resolve = (uri: string, client = holderClient([anchor])) =>
    client.resolveOpenId4vpAuthorizationRequest({ authorizationRequestPayload: uriParameters(uri) });

  const answer = async (
    uri: string,
    options: PresentOptions & { encrypt?: boolean; credential?: ExportedCredential } = {},
  ): Promise<{ resolved: ResolvedOpenid4vpAuthorizationRequest; status: number; body: Record<string, unknown> }> => {
    const client = holderClient([anchor]);
    const resolved = await resolve(uri, client);
    const presentation = await present(resolved, options);
    const reply = await submit(client, resolved, { student_credential: [presentation] }, options);
    return { resolved, ...reply };
  };

  // The wallet's KB-JWT is made at the service's time: a test that moves the clock ahead (an expired
  // request) would otherwise leave the next tests' presentations older than the freshness window.
  const present = (
    resolved: ResolvedOpenid4vpAuthorizationRequest,
    options: PresentOptions & { credential?: ExportedCredential } = {},
  ) =>
    presentFromExport(options.credential ?? exported, resolved, {
      iat: Math.floor(h.clock.now().getTime() / 1000),
      ...options,
    });

  const form = (
    url: string,
    body: Record<string, string> | string,
    contentType = 'application/x-www-form-urlencoded',
  ) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: typeof body === 'string' ? body : new URLSearchParams(body).toString(),
    });

  before(async () => {
    // Each app listens before it is built (port 0, read back): its BASE_URL names that address.
    const main = await loopbackServer();
    baseUrl = main.origin;
    h = await startHarness(dialect, { BASE_URL: baseUrl, PORT: String(main.port) });
    // The holder's library checks the request object's exp against the real time: start there.
    h.clock.advance(Math.max(0, Date.now() - h.clock.now().getTime()));
    await main.serve(h.app);
    tenant = await h.bootstrap('sandbox');
    // A second process over the same database that asks for unencrypted responses (direct_post).
    const plainServer = await loopbackServer();
    const store = await h.testStore.openAnother();
    const { app } = await buildTestApp(
      store,
      h.clock,
      testConfig({
        BASE_URL: plainServer.origin,
        PORT: String(plainServer.port),
        OPENID4VP_RESPONSE_MODE: 'direct_post',
      }),
    );
    app.addHook('onClose', () => store.close());
    await plainServer.serve(app);
    plain = { app, baseUrl: plainServer.origin };
    {
      const chain = await operatorChain(h.clock.now(), '127.0.0.1');
      const operatorServer = await loopbackServer();
      const operatorBase = operatorServer.origin;
      const operatorStore = await h.testStore.openAnother();
      const built = await buildTestApp(
        operatorStore,
        h.clock,
        testConfig({
          BASE_URL: operatorBase,
          PORT: String(operatorServer.port),
          OPENID4VP_SIGNING_KEY_FILE: chain.keyFile,
          OPENID4VP_CERTIFICATE_CHAIN_FILE: chain.chainFile,
          // The operator keeps the x509_san_dns prefix: its leaf names the host.
          OPENID4VP_CLIENT_ID_PREFIX: 'x509_san_dns',
        }),
      );
      built.app.addHook('onClose', () => operatorStore.close());
      await operatorServer.serve(built.app);
      operator = { app: built.app, baseUrl: operatorBase, rootPem: chain.rootPem, dir: chain.dir };
    }
    receiver = await startWebhookReceiver();
    await createEndpoint(h, tenant, receiver.url, ['verification.completed', 'consent.approved', 'consent.declined']);
    anchor = await (await fetch(`${baseUrl}/openid4vp/v1/certificate`)).text();
    exported = await exportCredential('--level', 'postgraduate');
  });
  after(async () => {
    await operator.app.close();
    rmSync(operator.dir, { recursive: true, force: true });
    await plain.app.close();
    await receiver.close();
    await h.close();
  });

  test('direct_post.jwt: the holder verifies the signed request, answers encrypted, the session completes and the webhook fires', async () => {
    const session = await createSession();
    const uri = new URL(session.openid4vpUri);
    assert.equal(uri.protocol, 'openid4vp:');
    // HAIP's x509_hash, the default: the base64url SHA-256 of the request certificate (here the sandbox one).
    assert.equal(uri.searchParams.get('client_id'), `x509_hash:${sha256(anchor)}`);
    assert.equal(session.qrPayload.startsWith('matricula://verify?session='), true, 'qrPayload is unchanged');

    const { resolved, status: httpStatus, body } = await answer(session.openid4vpUri);
    assert.equal(resolved.client.prefix, 'x509_hash');
    assert.ok(resolved.jar, 'the request came as a signed JAR');
    assert.equal(resolved.authorizationRequestPayload.response_mode, 'direct_post.jwt');
    assert.deepEqual(resolved.dcql?.query, {
      credentials: [
        {
          id: 'student_credential',
          format: 'dc+sd-jwt',
          meta: { vct_values: ['StudentCredential'] },
          claims: [{ path: ['is_active_student'] }, { path: ['academic_level'] }, { path: ['valid_until'] }],
          multiple: false,
          require_cryptographic_holder_binding: true,
        },
        // Every accepted credential profile is offered (docs/credential-profiles.md); any one suffices.
        {
          id: 'enrolment_attestation',
          format: 'dc+sd-jwt',
          meta: { vct_values: ['urn:eudi:enrolment:1'] },
          claims: [
            { path: ['enrolment_status'], values: ['enrolled'] },
            { path: ['isced_level'] },
            { path: ['date_of_expiry'] },
          ],
          multiple: false,
          require_cryptographic_holder_binding: true,
        },
        // W3C credentials (jwt_vc_json): claims under credentialSubject, types as type_values.
        {
          id: 'european_student_card',
          format: 'jwt_vc_json',
          meta: { type_values: [['VerifiableCredential', 'VerifiableAttestation', 'EuropeanStudentCard']] },
          claims: [{ path: ['credentialSubject', 'academicLevel'] }],
          multiple: false,
          require_cryptographic_holder_binding: true,
        },
        {
          id: 'verifiable_educational_id',
          format: 'jwt_vc_json',
          meta: { type_values: [['VerifiableCredential', 'VerifiableAttestation', 'VerifiableEducationalID']] },
          claims: [{ path: ['credentialSubject', 'eduPersonPrimaryAffiliation'] }],
          multiple: false,
          require_cryptographic_holder_binding: true,
        },
      ],
      credential_sets: [
        {
          options: [
            ['student_credential'],
            ['enrolment_attestation'],
            ['european_student_card'],
            ['verifiable_educational_id'],
          ],
          required: true,
        },
      ],
    });
    assert.equal(httpStatus, 200, JSON.stringify(body));
    assert.deepEqual(body, {});

    const read = await status(session.sessionId);
    assert.equal(read.status, 'completed');
    assert.equal(read.result.verified, true);
    assert.equal(read.result.protocol, 'openid4vp');
    assert.equal(read.result.format, 'sd-jwt-vc');
    assert.equal(read.result.claims.academic_level, 'postgraduate');

    await workerFor(h).runOnce();
    const events = receiver.requests.map(
      (r) => JSON.parse(r.body.toString()) as { event: string; data: Record<string, unknown> },
    );
    const mine = events.filter((e) => e.data.sessionId === session.sessionId);
    assert.deepEqual(mine.map((e) => e.event).sort(), ['consent.approved', 'verification.completed']);
    const completed = mine.find((e) => e.event === 'verification.completed')!;
    assert.equal(completed.data.verified, true);
    assert.equal(completed.data.protocol, 'openid4vp');
  });

  test('direct_post by GET: an unencrypted response to a verifier that asks for one completes the session', async () => {
    const session = await createSession(plain.app);
    const params = new URL(session.openid4vpUri);
    params.searchParams.delete('request_uri_method');
    // That process has a BASE_URL of its own, under which its sandbox status lists are.
    const credential = await exportCredential('--level', 'postgraduate', '--base-url', plain.baseUrl);
    const { resolved, status: httpStatus, body } = await answer(params.toString(), { credential });
    assert.equal(resolved.authorizationRequestPayload.response_mode, 'direct_post');
    assert.equal(resolved.authorizationRequestPayload.client_metadata?.jwks, undefined);
    assert.equal(httpStatus, 200, JSON.stringify(body));
    const read = await status(session.sessionId);
    assert.equal(read.result.verified, true);
    assert.equal(read.result.protocol, 'openid4vp');
  });

  test('request_uri by POST echoes the wallet nonce in a request object of typ oauth-authz-req+jwt', async () => {
    const session = await createSession();
    const requestUri = new URL(session.openid4vpUri).searchParams.get('request_uri')!;
    const res = await form(requestUri, {
      wallet_nonce: 'wallet-nonce-123',
      wallet_metadata: JSON.stringify({ request_object_signing_alg_values_supported: ['ES256'] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/oauth-authz-req+jwt');
    const jwt = await res.text();
    assert.equal(decodeProtectedHeader(jwt).typ, 'oauth-authz-req+jwt');
    assert.ok(Array.isArray(decodeProtectedHeader(jwt).x5c));
    const payload = decodeJwt(jwt);
    assert.equal(payload.wallet_nonce, 'wallet-nonce-123');
    assert.equal(payload.client_id, `x509_hash:${sha256(anchor)}`);
    assert.equal(payload.exp, Math.floor(Date.parse((await status(session.sessionId)).expiresAt) / 1000));

    const unsupported = await form(requestUri, {
      wallet_metadata: JSON.stringify({ request_object_signing_alg_values_supported: ['EdDSA'] }),
    });
    assert.equal(unsupported.status, 400);
    assert.equal(((await unsupported.json()) as { error: string }).error, 'invalid_request');
  });

  const rejected = async (
    sessionId: string,
    reply: { status: number; body: Record<string, unknown> },
    reason: string,
  ) => {
    assert.equal(reply.status, 400, JSON.stringify(reply.body));
    assert.equal(reply.body.error, 'invalid_request');
    assert.equal(reply.body.reason, reason, JSON.stringify(reply.body));
    const read = await status(sessionId);
    assert.equal(read.status, 'consented', 'a rejected response leaves the session open');
  };

  test('a KB-JWT with another nonce, or another aud than the client id, is a failed attempt', async () => {
    const session = await createSession();
    await rejected(session.sessionId, await answer(session.openid4vpUri, { nonce: 'not-the-nonce' }), 'nonce_mismatch');
    await rejected(session.sessionId, await answer(session.openid4vpUri, { aud: baseUrl }), 'audience_mismatch');
    // Matricula's own challengeNonce is not the OpenID4VP nonce either.
    await rejected(
      session.sessionId,
      await answer(session.openid4vpUri, { nonce: session.challengeNonce }),
      'nonce_mismatch',
    );
  });

  test('a tampered disclosure and an unknown issuer are failed attempts', async () => {
    const session = await createSession();
    await rejected(session.sessionId, await answer(session.openid4vpUri, { tamper: true }), 'invalid_disclosure');

    // A credential of the same shape, signed by a key the trust registry has never seen.
    const issuerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const issuer = new SDJwtVcInstance({
      signer: (data: string) =>
        sign('sha256', Buffer.from(data), { key: issuerKey.privateKey, dsaEncoding: 'ieee-p1363' }).toString(
          'base64url',
        ),
      signAlg: 'ES256',
      hasher: digest,
      hashAlg: 'sha-256',
      saltGenerator: () => randomBytes(16).toString('base64url'),
    });
    const holderJwk = exported.holderPrivateJwk;
    const { d: _d, ...holderPublic } = holderJwk;
    const credential = await issuer.issue(
      {
        vct: 'StudentCredential',
        iss: 'https://unknown-university.example',
        iat: Math.floor(Date.now() / 1000),
        cnf: { jwk: holderPublic },
        is_active_student: true,
        academic_level: 'doctoral',
        valid_until: '2030-01-01T00:00:00.000Z',
      },
      { _sd: ['is_active_student', 'academic_level', 'valid_until'] },
    );
    await rejected(
      session.sessionId,
      await answer(session.openid4vpUri, { credential: { credential, holderPrivateJwk: holderJwk } }),
      'untrusted_issuer',
    );
  });

  test('an unencrypted response where encryption was requested, and a response to another session, are refused', async () => {
    const session = await createSession();
    await rejected(session.sessionId, await answer(session.openid4vpUri, { encrypt: false }), 'malformed_presentation');

    // A response made for one session, posted to another session's response_uri.
    const other = await createSession();
    const client = holderClient([anchor]);
    const resolvedA = await resolve(session.openid4vpUri, client);
    const resolvedB = await resolve(other.openid4vpUri, client);
    const presentation = await present(resolvedA);
    const crossed = await submit(
      client,
      {
        ...resolvedA,
        authorizationRequestPayload: {
          ...resolvedA.authorizationRequestPayload,
          response_uri: resolvedB.authorizationRequestPayload.response_uri as string,
        },
      },
      { student_credential: [presentation] },
    );
    await rejected(other.sessionId, crossed, 'malformed_presentation');
    // Unencrypted, the same response carries session A's state and nonce: B refuses it.
    const plainSession = await createSession(plain.app);
    const resolvedPlain = await resolve(plainSession.openid4vpUri, client);
    const crossedPlain = await submit(
      client,
      {
        ...resolvedA,
        authorizationRequestPayload: {
          ...resolvedA.authorizationRequestPayload,
          response_uri: resolvedPlain.authorizationRequestPayload.response_uri as string,
        },
      },
      { student_credential: [presentation] },
      { encrypt: false },
    );
    // (Its state, the other session's, is refused before its nonce is looked at.)
    await rejected(plainSession.sessionId, crossedPlain, 'malformed_presentation');
  });

  test('a replayed response is refused: the session answers once, by either protocol', async () => {
    const session = await createSession();
    const client = holderClient([anchor]);
    const resolved = await resolve(session.openid4vpUri, client);
    const presentation = await present(resolved);
    const first = await submit(client, resolved, { student_credential: [presentation] });
    assert.equal(first.status, 200);
    const replay = await submit(client, resolved, { student_credential: [presentation] });
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, 'invalid_request');
    assert.match(String(replay.body.error_description), /already answered/);
    // Matricula's own endpoints see a completed session too.
    const ours = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      payload: { nonce: session.challengeNonce, decision: 'approved' },
    });
    assert.equal(ours.statusCode, 409);

    // And the other way round: answered by Matricula's protocol, OpenID4VP finds it answered.
    const other = await createSession();
    await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${other.sessionId}/consent`,
      payload: { nonce: other.challengeNonce, decision: 'declined' },
    });
    const late = await answer(other.openid4vpUri).catch((err: unknown) => err as Error);
    assert.ok(late instanceof Error, 'the holder cannot even fetch the request of an ended session');
  });

  test('access_denied declines the session; the business is told', async () => {
    const session = await createSession();
    const resolved = await resolve(session.openid4vpUri);
    const res = await form(resolved.authorizationRequestPayload.response_uri as string, {
      error: 'access_denied',
      error_description: 'The student refused',
    });
    assert.equal(res.status, 200);
    assert.equal((await status(session.sessionId)).status, 'declined');
    await workerFor(h).runOnce();
    const types = receiver.requests
      .map((r) => JSON.parse(r.body.toString()) as { event: string; data: { sessionId: string } })
      .filter((e) => e.data.sessionId === session.sessionId)
      .map((e) => e.event);
    assert.deepEqual(types, ['consent.declined']);
  });

  test('an expired request cannot be fetched or answered', async () => {
    const session = await createSession();
    const resolved = await resolve(session.openid4vpUri);
    h.clock.advance(301_000);
    {
      await assert.rejects(resolve(session.openid4vpUri));
      const requestUri = new URL(session.openid4vpUri).searchParams.get('request_uri')!;
      const res = await fetch(requestUri);
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), {
        error: 'invalid_request',
        error_description: 'The authorization request has expired.',
      });
      const presentation = await presentFromExport(exported, resolved, {
        iat: Math.floor(h.clock.now().getTime() / 1000),
      });
      const late = await submit(holderClient([anchor]), resolved, { student_credential: [presentation] });
      assert.equal(late.status, 400);
      assert.equal((await status(session.sessionId)).status, 'expired');
    }
  });

  test('five rejected responses complete the session unverified, with the reason and the protocol', async () => {
    const session = await createSession();
    for (let i = 0; i < 5; i++) {
      const reply = await answer(session.openid4vpUri, { nonce: `wrong-${i}` });
      assert.equal(reply.status, 400);
    }
    const read = await status(session.sessionId);
    assert.equal(read.status, 'completed');
    assert.equal(read.result.verified, false);
    assert.equal(read.result.failureReason, 'too_many_attempts');
    assert.equal(read.result.protocol, 'openid4vp');
    assert.match(read.result.failureMessage, /nonce/);
  });

  test("an operator's CA → intermediate → leaf chain: the holder trusting the CA accepts the request, no other", async () => {
    const session = await createSession(operator.app);
    const client = holderClient([operator.rootPem]);
    const resolved = await resolve(session.openid4vpUri, client);
    assert.equal(resolved.client.prefix, 'x509_san_dns');
    const header = resolved.jar!.jwt.header as { x5c?: string[] };
    assert.equal(header.x5c?.length, 2, 'leaf and intermediate, the root left to the wallet');
    // The sandbox certificate's holder, and the operator's own service certificate, are not the CA.
    await assert.rejects(resolve(session.openid4vpUri, holderClient([anchor])));
    // Its status list is the operator service's own: a sandbox credential may only name those.
    const credential = await exportCredentialFor(operator.baseUrl);
    const presentation = await present(resolved, { credential });
    const reply = await submit(client, resolved, { student_credential: [presentation] });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const read = await status(session.sessionId);
    assert.deepEqual([read.status, read.result.verified, read.result.protocol], ['completed', true, 'openid4vp']);
  });

  test('same-device: the response redirects to the portal with a response_code', async () => {
    const session = await createSession();
    const uri = new URL(session.openid4vpUri);
    uri.searchParams.set('request_uri', `${uri.searchParams.get('request_uri')!}&device=same`);
    const { body, status: httpStatus } = await answer(uri.toString());
    assert.equal(httpStatus, 200);
    const redirect = new URL(String(body.redirect_uri));
    assert.equal(`${redirect.origin}${redirect.pathname}`, `${baseUrl}/verify/${session.sessionId}`);
    assert.match(redirect.searchParams.get('response_code') ?? '', /^[A-Za-z0-9_-]{43}$/);
  });

  test('bad input gets an OAuth error in JSON, never a 500', async () => {
    const session = await createSession();
    const resolved = await resolve(session.openid4vpUri);
    const responseUri = resolved.authorizationRequestPayload.response_uri as string;
    const cases: Array<[Response, number]> = [
      [await form(responseUri, {}), 400],
      [await form(responseUri, { vp_token: 'not json' }), 400],
      [await form(responseUri, { response: 'not.a.jwe' }), 400],
      [await form(responseUri, 'vp_token=a&vp_token=b'), 400],
      [await form(responseUri, JSON.stringify({ vp_token: {} }), 'application/json'), 415],
      [await form(responseUri, { response: 'x'.repeat(70_000) }), 413],
      [await form(responseUri.replace(/token=[^&]+/, 'token=wrong'), { error: 'access_denied' }), 404],
      [await form(`${baseUrl}/openid4vp/v1/sessions/sess_unknown/response?token=x`, { error: 'access_denied' }), 404],
      [await fetch(`${baseUrl}/openid4vp/v1/sessions/${session.sessionId}/request`), 400],
    ];
    for (const [res, expected] of cases) {
      const body = (await res.json()) as { error?: string; error_description?: string };
      assert.equal(res.status, expected, JSON.stringify(body));
      assert.equal(body.error, 'invalid_request', JSON.stringify(body));
      assert.equal(typeof body.error_description, 'string');
    }
    // The wrong token declined nothing.
    assert.notEqual((await status(session.sessionId)).status, 'declined');
  });

  test('the wallet simulator answers an openid4vpUri, and misbehaves as asked', async () => {
    const session = await createSession();
    const ok = await cli('wallet', 'present', '--qr', session.openid4vpUri, '--level', 'doctoral', '--json');
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), {
      sessionId: session.sessionId,
      status: 'completed',
      verified: true,
      failureReason: null,
      failureMessage: null,
    });
    assert.equal((await status(session.sessionId)).result.protocol, 'openid4vp');

    const plainSession = await createSession(plain.app);
    const plainRun = await cli(
      'wallet',
      'present',
      '--protocol',
      'openid4vp',
      '--qr',
      plainSession.openid4vpUri,
      '--json',
    );
    assert.equal(plainRun.code, 0, plainRun.stderr);

    const cases: Array<[string[], Record<string, unknown>]> = [
      [['--inactive'], { status: 'completed', verified: false, failureReason: null }],
      [['--wrong-nonce'], { status: 'consented', verified: false, failureReason: 'nonce_mismatch' }],
      [['--tamper'], { status: 'consented', verified: false, failureReason: 'invalid_disclosure' }],
      [['--decline'], { status: 'declined', verified: false, failureReason: 'declined' }],
    ];
    for (const [flags, expected] of cases) {
      const s = await createSession();
      const run = await cli('wallet', 'present', '--qr', s.openid4vpUri, ...flags, '--json');
      assert.equal(run.code, 1, run.stderr);
      const { failureMessage: _message, ...outcome } = JSON.parse(run.stdout) as Record<string, unknown>;
      assert.deepEqual(outcome, { sessionId: s.sessionId, ...expected }, flags.join(' '));
    }
    const inactive = await createSession();
    await cli('wallet', 'present', '--qr', inactive.openid4vpUri, '--inactive');
    assert.equal((await status(inactive.sessionId)).result.failureReason, 'student_inactive');

    assert.equal((await cli('wallet', 'present', '--protocol', 'openid4vp', '--qr', session.qrPayload)).code, 2);
    assert.equal((await cli('wallet', 'present', '--qr', session.openid4vpUri, '--format', 'bbs')).code, 2);
    assert.equal((await cli('wallet', 'present', '--protocol', 'oid4vp', '--qr', session.openid4vpUri)).code, 2);
  });

  test('redirect_uri client identifier (development): the unsigned request by value is answered', async () => {
    const server = await loopbackServer();
    const store = await h.testStore.openAnother();
    const { app } = await buildTestApp(
      store,
      h.clock,
      testConfig({
        BASE_URL: server.origin,
        PORT: String(server.port),
        OPENID4VP_CLIENT_ID_PREFIX: 'redirect_uri',
      }),
    );
    await server.serve(app);
    try {
      const session = await createSession(app);
      const params = uriParameters(session.openid4vpUri);
      assert.equal(params.request_uri, undefined, 'passed by value');
      assert.equal(params.client_id, `redirect_uri:${params.response_uri}`);
      const run = await cli('wallet', 'present', '--qr', session.openid4vpUri, '--json');
      assert.equal(run.code, 0, run.stderr || run.stdout);
      assert.equal((await status(session.sessionId)).result.protocol, 'openid4vp');
      // There is no request object to fetch under this prefix.
      const token = new URL(params.response_uri!).searchParams.get('token');
      const res = await fetch(`${server.origin}/openid4vp/v1/sessions/${session.sessionId}/request?token=${token}`);
      assert.equal(res.status, 400);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
