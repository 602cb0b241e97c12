import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, importX509, exportJWK } from 'jose';
import { buildTestApp, forEachDialect, testConfig, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, listeningHarness, postResponse, resolve } from '../support/openid4vp-flows.ts';
import { operatorChain, type OperatorChain } from '../support/operator-chain.ts';
import * as x509 from '@peculiar/x509';
import { addIssuer } from '../../src/services/trust-registry.ts';
import { akiValues } from '../../src/services/openid4vp/trusted-authorities.ts';
import { CA_USAGE, newIssuerKey, pem } from '../support/university.ts';
import { loopbackServer } from '../support/server.ts';

/**
 * HAIP 1.0 on the request side: the `x509_hash` client identifier (the default), `x5c` without the
 * trust anchor, a `kid` in the request object's header, `aud` from the wallet's metadata, the
 * wallet's `client_id_prefixes_supported` honoured, `state` sent and checked.
 */
forEachDialect('OpenID4VP requests under HAIP 1.0', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let anchor: string;
  /** A second process over the same database whose operator chain file ships its root CA. */
  let operator: { app: FastifyInstance; chain: OperatorChain };

  before(async () => {
    ({ h, tenant } = await listeningHarness(dialect));
    anchor = (await h.app.inject({ url: '/openid4vp/v1/certificate' })).body;
    const server = await loopbackServer();
    const chain = await operatorChain(h.clock.now(), '127.0.0.1', { withRoot: true });
    const store = await h.testStore.openAnother();
    const { app } = await buildTestApp(
      store,
      h.clock,
      testConfig({
        BASE_URL: server.origin,
        PORT: String(server.port),
        OPENID4VP_SIGNING_KEY_FILE: chain.keyFile,
        OPENID4VP_CERTIFICATE_CHAIN_FILE: chain.chainFile,
      }),
    );
    app.addHook('onClose', () => store.close());
    await server.serve(app);
    operator = { app, chain };
  });
  after(async () => {
    await operator.app.close();
    rmSync(operator.chain.dir, { recursive: true, force: true });
    await h.close();
  });

  const der = (certificate: string) => Buffer.from(certificate.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const requestPath = (openid4vpUri: string) => {
    const uri = new URL(String(new URL(openid4vpUri).searchParams.get('request_uri')));
    return `${uri.pathname}${uri.search}`;
  };
  const requestObject = (app: FastifyInstance, openid4vpUri: string, form?: Record<string, string>) =>
    app.inject({
      method: form ? 'POST' : 'GET',
      url: requestPath(openid4vpUri),
      ...(form
        ? {
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams(form).toString(),
          }
        : {}),
    });

  test('x509_hash is the client identifier: the SHA-256 of the leaf; x5c leaves the trust anchor out; kid is set', async () => {
    const session = await createSession({ ...h, app: operator.app }, tenant);
    const leafDer = Buffer.from(operator.chain.leaf.rawData);
    const hash = createHash('sha256').update(leafDer).digest('base64url');
    assert.equal(new URL(session.openid4vpUri).searchParams.get('client_id'), `x509_hash:${hash}`);

    const res = await requestObject(operator.app, session.openid4vpUri);
    assert.equal(res.statusCode, 200, res.body);
    const header = decodeProtectedHeader(res.body) as { x5c: string[]; kid?: string; typ: string };
    assert.equal(header.typ, 'oauth-authz-req+jwt');
    assert.equal(header.x5c.length, 2, 'leaf and intermediate');
    assert.ok(!header.x5c.includes(der(pem(operator.chain.root)).toString('base64')), 'never the root');
    const leafKey = await exportJWK(await importX509(pem(operator.chain.leaf), 'ES256'));
    assert.equal(header.kid, await calculateJwkThumbprint(leafKey));
    assert.equal(decodeJwt(res.body).client_id, `x509_hash:${hash}`);

    // A holder trusting the root resolves it: the library checks the hash against the leaf.
    const resolved = await resolve(session.openid4vpUri, [operator.chain.rootPem]);
    assert.equal(resolved.client.prefix, 'x509_hash');
  });

  test('the sandbox certificate: x509_hash of the self-signed leaf, which signers report as self-signed', async () => {
    const session = await createSession(h, tenant);
    const hash = createHash('sha256').update(der(anchor)).digest('base64url');
    assert.equal(new URL(session.openid4vpUri).searchParams.get('client_id'), `x509_hash:${hash}`);
    assert.equal((await h.services.requestSigner()).selfSigned, true);
    // The operator's leaf is issued by its CA.
    const operatorSession = await createSession({ ...h, app: operator.app }, tenant);
    assert.ok(new URL(operatorSession.openid4vpUri).searchParams.get('client_id')?.startsWith('x509_hash:'));
  });

  test("aud is the wallet metadata's issuer when the wallet sends one, else https://self-issued.me/v2", async () => {
    const session = await createSession(h, tenant);
    const byGet = await requestObject(h.app, session.openid4vpUri);
    assert.equal(decodeJwt(byGet.body).aud, 'https://self-issued.me/v2');
    const posted = await requestObject(h.app, session.openid4vpUri, {
      wallet_metadata: JSON.stringify({
        issuer: 'https://wallet.example',
        client_id_prefixes_supported: ['x509_hash'],
      }),
    });
    assert.equal(posted.statusCode, 200, posted.body);
    assert.equal(decodeJwt(posted.body).aud, 'https://wallet.example');
    const anonymous = await requestObject(h.app, session.openid4vpUri, { wallet_metadata: '{}' });
    assert.equal(decodeJwt(anonymous.body).aud, 'https://self-issued.me/v2');
  });

  test('a wallet whose client_id_prefixes_supported lacks x509_hash gets an OAuth error saying so', async () => {
    const session = await createSession(h, tenant);
    const res = await requestObject(h.app, session.openid4vpUri, {
      wallet_metadata: JSON.stringify({ client_id_prefixes_supported: ['x509_san_dns', 'redirect_uri'] }),
    });
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.equal(body.error, 'invalid_client');
    assert.match(body.error_description, /x509_hash.*client_id_prefixes_supported.*x509_san_dns, redirect_uri/);
  });

  test('state is sent; an error response with another state is refused and changes nothing', async () => {
    const session = await createSession(h, tenant);
    const resolved = await resolve(session.openid4vpUri, [anchor]);
    const state = resolved.authorizationRequestPayload.state;
    assert.match(String(state), /^[A-Za-z0-9_-]{43}$/);
    const forged = await postResponse(resolved, { error: 'access_denied', state: 'not-the-state' });
    assert.equal(forged.status, 400);
    const read = await h.app.inject({ url: `/verification/v1/sessions/${session.sessionId}`, headers: tenant.auth });
    assert.equal(read.json().data.status, 'pending');
    const declined = await postResponse(resolved, { error: 'access_denied', state: String(state) });
    assert.equal(declined.status, 200);
  });

  test('DCQL trusted_authorities: the aki of the live registry anchors, only while every live entry trusts through them', async () => {
    const live = await h.bootstrap('live');
    const requestedQuery = async () => {
      const session = await createSession(h, live);
      const res = await requestObject(h.app, session.openid4vpUri);
      assert.equal(res.statusCode, 200, res.body);
      return (decodeJwt(res.body).dcql_query as { credentials: Array<{ trusted_authorities?: unknown }> })
        .credentials[0]!;
    };
    // Sandbox universities trust by raw keys: their credentials have no chain to name.
    const sandbox = await requestObject(h.app, (await createSession(h, tenant)).openid4vpUri);
    assert.equal(
      (decodeJwt(sandbox.body).dcql_query as { credentials: Array<Record<string, unknown>> }).credentials[0]!
        .trusted_authorities,
      undefined,
    );

    const key = await newIssuerKey();
    const root = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '0a01',
      name: 'CN=Live University Root',
      notBefore: new Date(h.clock.now().getTime() - 86_400_000),
      notAfter: new Date(h.clock.now().getTime() + 365 * 86_400_000),
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      keys: key.keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(CA_USAGE, true),
        await x509.SubjectKeyIdentifierExtension.create(key.keys.publicKey),
      ],
    });
    const added = await addIssuer(h.services, {
      name: 'Live University',
      domain: 'live-university.example',
      country: 'IT',
      environment: 'live',
      anchors: [pem(root)],
    });
    assert.ok(added.ok, JSON.stringify(added));
    const ski = root.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
    assert.deepEqual((await requestedQuery()).trusted_authorities, [
      { type: 'aki', values: [Buffer.from(ski, 'hex').toString('base64url')] },
    ]);

    // A live entry trusted by a raw key: its credentials would be filtered out, so no filter at all.
    assert.equal(
      akiValues([
        ...(added.ok ? [added.issuer] : []),
        { ...(added.ok ? added.issuer : ({} as never)), id: 'iss_raw', anchors: [], keys: { sdJwtVc: key.publicJwk } },
      ]),
      undefined,
    );
  });
});
