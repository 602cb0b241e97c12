import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { addIssuer } from '../../src/services/trust-registry.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession } from '../support/sessions.ts';
import {
  CA_USAGE,
  certificate,
  newIssuerKey,
  pem,
  SIGNING_USAGE,
  UniversityServer,
  x5c,
  type IssuerKey,
} from '../support/university.ts';
import {
  bitstringStatusList,
  didJwk,
  europeanStudentCard,
  identity,
  presentJwtVc,
  presentJwtVcV2,
  statusEntry,
  unsigned,
  verifiableEducationalId,
} from '../support/w3c.ts';

/**
 * `jwt_vc_json`: W3C credentials secured as JWT, issued and presented with did-jwt-vc (a library
 * we did not write) after EBSI's European Student Card and Verifiable Educational ID, verified
 * through `/verify` and our wallet protocol by the built-in profiles. Issuers are trusted by the
 * registry: their registered key as a did:jwk, a did:web DID document served on 127.0.0.1, a raw
 * key under `https://<domain>`. Revocation by a BitstringStatusList served on 127.0.0.1.
 */

const DOMAIN = 'uni.example.edu';
const LIVE_DOMAIN = 'live.example.edu';
const WEB_DOMAIN = 'web.example.edu';
const X509_DOMAIN = 'x509.example.edu';
const ADMIN_TOKEN = 'jwt-vc-admin-token-0123456789';

forEachDialect('jwt_vc_json through /verify and the wallet protocol', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let live: Tenant;
  let sandboxKey: IssuerKey;
  let liveKey: IssuerKey;
  let webKey: IssuerKey;
  let holderKey: IssuerKey;
  let server: UniversityServer;
  let webDid: string;
  let leafKey: IssuerKey;
  let leafChain: string[];
  useHarness(
    dialect,
    (ready, readyTenant) => {
      h = ready;
      tenant = readyTenant;
    },
    { ADMIN_TOKEN },
  );

  before(async () => {
    [sandboxKey, liveKey, webKey, holderKey] = await Promise.all([
      newIssuerKey(),
      newIssuerKey(),
      newIssuerKey(),
      newIssuerKey(),
    ]);
    server = await new UniversityServer().start();
    webDid = `did:web:${encodeURIComponent(new URL(server.url).host)}`;
    const register = async (domain: string, environment: 'sandbox' | 'live', definition: object) => {
      const added = await addIssuer(
        { ...h.services, config: { outboundAllowPrivateTargets: true } },
        { name: domain, domain, country: 'BE', environment, ...definition },
      );
      assert.ok(added.ok, JSON.stringify(added));
    };
    await register(DOMAIN, 'sandbox', { keys: { sdJwtVc: sandboxKey.publicJwk } });
    await register(LIVE_DOMAIN, 'live', { keys: { sdJwtVc: liveKey.publicJwk } });
    await register(WEB_DOMAIN, 'live', { metadataIssuer: webDid });
    const rootKey = await newIssuerKey();
    leafKey = await newIssuerKey();
    const root = await certificate(rootKey, 'W3C University Root', h.clock.now(), { ca: true, keyUsage: CA_USAGE });
    const leaf = await certificate(
      leafKey,
      'W3C University Signer',
      h.clock.now(),
      { keyUsage: SIGNING_USAGE, dns: X509_DOMAIN },
      { key: rootKey, cert: root },
    );
    leafChain = x5c(leaf);
    await register(X509_DOMAIN, 'live', { anchors: [pem(root)] });
    server.json('/.well-known/did.json', {
      '@context': ['https://www.w3.org/ns/did/v1'],
      id: webDid,
      verificationMethod: [
        { id: `${webDid}#key-1`, type: 'JsonWebKey2020', controller: webDid, publicKeyJwk: webKey.publicJwk },
      ],
      assertionMethod: [`${webDid}#key-1`],
    });
    live = await h.bootstrap('live');
  });
  after(() => server?.close());

  const holder = () => identity(holderKey);
  let counter = 0;
  const verify = async (
    as: Tenant,
    credential: string,
    options: {
      nonce?: string;
      aud?: string;
      requiredClaims?: string[];
      vp?: (vp: string) => string;
      holder?: ReturnType<typeof identity>;
      format?: string;
    } = {},
  ) => {
    const nonce = `nonce_jwt-vc-${++counter}`;
    const vp = await presentJwtVc(credential, options.holder ?? holder(), {
      nonce: options.nonce ?? nonce,
      aud: options.aud ?? h.config.baseUrl,
      now: h.clock.now(),
    });
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: as.auth,
      payload: {
        format: options.format ?? 'jwt-vc',
        presentation: options.vp ? options.vp(vp) : vp,
        nonce,
        requiredClaims: options.requiredClaims ?? [
          'is_active_student',
          'university_domain',
          'academic_level',
          'valid_until',
        ],
      },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data;
  };
  const holderDid = () => didJwk(holderKey.publicJwk);
  const esc = (options: Parameters<typeof europeanStudentCard>[4] = {}, key = sandboxKey, home = DOMAIN) =>
    europeanStudentCard(identity(key), holderDid(), h.clock.now(), home, options);

  test('a European Student Card (VCDM 1.1) verifies; the ESI home organisation is university_domain', async () => {
    const credential = await esc();
    const data = await verify(tenant, credential);
    assert.equal(data.verified, true, data.failureMessage);
    // The result names the shape that was verified (issue 29): a W3C credential is jwt-vc, never sd-jwt-vc.
    assert.equal(data.format, 'jwt-vc');
    const expected = JSON.parse(Buffer.from(credential.split('.')[1]!, 'base64url').toString()).vc.expirationDate;
    assert.deepEqual(data.claims, {
      is_active_student: true,
      university_domain: DOMAIN,
      academic_level: 'postgraduate',
      valid_until: expected,
    });
    assert.equal(data.university.domain, DOMAIN);
    assert.doesNotMatch(JSON.stringify(data), /Ana|2025-0042|did:jwk/);
  });

  test('a VCDM 2.0 credential (validFrom / validUntil) verifies the same way', async () => {
    const data = await verify(tenant, await esc({ v2: true }));
    assert.equal(data.verified, true, data.failureMessage);
    assert.equal(data.claims.university_domain, DOMAIN);
  });

  test('a VCDM 2.0 presentation (vp+jwt) enveloping the vc+jwt verifies; bound to another nonce, it is refused', async () => {
    const present = async (nonce: string, bound: string) => {
      const vp = await presentJwtVcV2(await esc({ v2: true }), holder(), {
        nonce: bound,
        aud: h.config.baseUrl,
        now: h.clock.now(),
      });
      const res = await h.app.inject({
        method: 'POST',
        url: '/verification/v1/verify',
        headers: tenant.auth,
        payload: { format: 'jwt-vc', presentation: vp, nonce, requiredClaims: ['is_active_student'] },
      });
      return res.json().data;
    };
    const ok = await present('nonce_jwt-vc-v2-a', 'nonce_jwt-vc-v2-a');
    assert.equal(ok.verified, true, ok.failureMessage);
    const other = await present('nonce_jwt-vc-v2-b', 'nonce_jwt-vc-v2-other');
    assert.equal(other.failureReason, 'nonce_mismatch', other.failureMessage);
  });

  test('a StatusList2021 entry (as EBSI issues them) is read the same way', async () => {
    const url = `${server.url}/status/2021`;
    const list = await bitstringStatusList(identity(liveKey), url, h.clock.now(), [3], { statusList2021: true });
    server.text('/status/2021', () => list, { 'content-type': 'application/jwt' });
    const entry = (index: number) => ({ ...statusEntry(url, index, 'StatusList2021Entry') });
    const revoked = await verify(live, await esc({ credentialStatus: entry(3) }, liveKey, LIVE_DOMAIN));
    assert.equal(revoked.failureReason, 'credential_revoked', revoked.failureMessage);
    const valid = await verify(live, await esc({ credentialStatus: entry(4) }, liveKey, LIVE_DOMAIN));
    assert.equal(valid.verified, true, valid.failureMessage);
  });

  test('a credential bound by cnf.jwk: the VP signed by that key verifies, by another key it does not', async () => {
    const bound = await esc({ cnf: holderKey.publicJwk });
    const data = await verify(tenant, bound);
    assert.equal(data.verified, true, data.failureMessage);
    const stranger = await newIssuerKey();
    const refused = await verify(tenant, bound, { holder: identity(stranger) });
    assert.equal(refused.failureReason, 'invalid_key_binding', refused.failureMessage);
  });

  test('a Verifiable Educational ID verifies; a staff affiliation is not an active student', async () => {
    const student = await verify(
      tenant,
      await verifiableEducationalId(identity(sandboxKey), holderDid(), h.clock.now(), DOMAIN),
      { requiredClaims: ['is_active_student', 'university_domain'] },
    );
    assert.equal(student.verified, true, student.failureMessage);
    assert.equal(student.claims.university_domain, DOMAIN);
    const staff = await verify(
      tenant,
      await verifiableEducationalId(identity(sandboxKey), holderDid(), h.clock.now(), DOMAIN, 'staff'),
      { requiredClaims: ['is_active_student'] },
    );
    assert.equal(staff.verified, false);
    assert.equal(staff.failureReason, 'student_inactive', staff.failureMessage);
  });

  test('a did:web issuer: its DID document is fetched from the university and its key verifies', async () => {
    const credential = await europeanStudentCard(identity(webKey, webDid), holderDid(), h.clock.now(), WEB_DOMAIN, {
      kid: `${webDid}#key-1`,
    });
    const data = await verify(live, credential);
    assert.equal(data.verified, true, data.failureMessage);
    assert.equal(data.claims.university_domain, WEB_DOMAIN);
    assert.ok(server.count('/.well-known/did.json') >= 1);
    // Another key under the same did:web is not the university's.
    const forged = await europeanStudentCard(identity(liveKey, webDid), holderDid(), h.clock.now(), WEB_DOMAIN, {
      kid: `${webDid}#key-1`,
    });
    const refused = await verify(live, forged);
    assert.equal(refused.failureReason, 'invalid_signature', refused.failureMessage);
  });

  test('an X.509 anchor: the x5c chain of the credential JWT validates to it', async () => {
    const credential = await europeanStudentCard(
      identity(leafKey, `https://${X509_DOMAIN}`),
      holderDid(),
      h.clock.now(),
      X509_DOMAIN,
      { header: { x5c: leafChain } },
    );
    const data = await verify(live, credential);
    assert.equal(data.verified, true, data.failureMessage);
    assert.equal(data.claims.university_domain, X509_DOMAIN);
    const foreign = await europeanStudentCard(
      identity(await newIssuerKey(), `https://${X509_DOMAIN}`),
      holderDid(),
      h.clock.now(),
      X509_DOMAIN,
      { header: { x5c: leafChain } },
    );
    const refused = await verify(live, foreign);
    assert.equal(refused.failureReason, 'invalid_signature', refused.failureMessage);
  });

  test('a raw registry key under iss https://<domain> verifies too', async () => {
    const credential = await europeanStudentCard(
      identity(liveKey, `https://${LIVE_DOMAIN}`),
      holderDid(),
      h.clock.now(),
      LIVE_DOMAIN,
    );
    const data = await verify(live, credential);
    assert.equal(data.verified, true, data.failureMessage);
  });

  test('a credential whose status list marks it revoked is refused; another index verifies', async () => {
    const url = `${server.url}/status/1`;
    const list = await bitstringStatusList(identity(liveKey), url, h.clock.now(), [7]);
    server.text('/status/1', () => list, { 'content-type': 'application/vc+jwt' });
    const revoked = await verify(live, await esc({ credentialStatus: statusEntry(url, 7) }, liveKey, LIVE_DOMAIN));
    assert.equal(revoked.verified, false);
    assert.equal(revoked.failureReason, 'credential_revoked', revoked.failureMessage);
    const valid = await verify(live, await esc({ credentialStatus: statusEntry(url, 8) }, liveKey, LIVE_DOMAIN));
    assert.equal(valid.verified, true, valid.failureMessage);
    // A list signed by another key cannot say anything: fail-closed.
    const forgedUrl = `${server.url}/status/2`;
    const foreign = await bitstringStatusList(
      identity(webKey, didJwk(liveKey.publicJwk)),
      forgedUrl,
      h.clock.now(),
      [],
    );
    server.text('/status/2', () => foreign, { 'content-type': 'application/vc+jwt' });
    const unknown = await verify(
      live,
      await esc({ credentialStatus: statusEntry(forgedUrl, 7) }, liveKey, LIVE_DOMAIN),
    );
    assert.equal(unknown.verified, false);
    assert.equal(unknown.failureReason, 'invalid_status_list', unknown.failureMessage);
  });

  // Each refusal with the reason clients match on.
  const refusals: Array<[string, () => Promise<Record<string, unknown>>, string, RegExp?]> = [
    [
      'a type no profile accepts',
      async () => verify(tenant, await esc({ type: ['VerifiableCredential', 'VerifiableAttestation', 'LibraryCard'] })),
      'malformed_presentation',
      /LibraryCard/,
    ],
    [
      'a level the profile cannot map is an impossible claim',
      async () => verify(tenant, await esc({ subject: { academicLevel: 'Diploma' } })),
      'invalid_claim',
      /Diploma/,
    ],
    [
      'an ESI of another university: the issuer speaks for its own students',
      async () => verify(tenant, await esc({}, sandboxKey, 'other.example')),
      'untrusted_issuer',
    ],
    [
      'a presentation bound to another nonce',
      async () => verify(tenant, await esc(), { nonce: 'nonce_someone-else' }),
      'nonce_mismatch',
    ],
    [
      'a presentation bound to another audience',
      async () => verify(tenant, await esc(), { aud: 'https://verifier.example' }),
      'audience_mismatch',
    ],
    [
      'an unsigned (alg: none) credential',
      async () => verify(tenant, unsigned(await esc())),
      'algorithm_not_allowed',
      /not signed/,
    ],
    [
      'an unsigned (alg: none) presentation',
      async () => verify(tenant, await esc(), { vp: unsigned }),
      'algorithm_not_allowed',
    ],
    [
      'a credential by an issuer the registry does not know',
      async () => verify(tenant, await esc({}, await newIssuerKey())),
      'untrusted_issuer',
    ],
    [
      'a credential issued to another holder',
      async () =>
        verify(
          tenant,
          await europeanStudentCard(
            identity(sandboxKey),
            didJwk((await newIssuerKey()).publicJwk),
            h.clock.now(),
            DOMAIN,
          ),
        ),
      'invalid_key_binding',
    ],
    [
      "a presentation by the holder's key under another iss",
      async () =>
        verify(tenant, await esc(), { holder: identity(holderKey, didJwk((await newIssuerKey()).publicJwk)) }),
      'invalid_key_binding',
      /iss/,
    ],
  ];
  for (const [name, run, reason, message] of refusals)
    test(`refused: ${name}`, async () => {
      const data = await run();
      assert.equal(data.verified, false);
      assert.equal(data.failureReason, reason, String(data.failureMessage));
      if (message) assert.match(String(data.failureMessage), message);
    });

  test('refused: an issuer the profile does not allow (a profile added through the admin API)', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const added = await h.app.inject({
      method: 'POST',
      url: '/admin/v1/credential-profiles',
      headers: admin,
      payload: {
        id: 'library_card',
        format: 'jwt_vc_json',
        types: ['VerifiableCredential', 'LibraryCard'],
        claims: { is_active_student: { from: 'validity' }, university_domain: { from: 'issuer' } },
        issuers: ['other.example'],
      },
    });
    assert.equal(added.statusCode, 201, added.body);
    const data = await verify(tenant, await esc({ type: ['VerifiableCredential', 'LibraryCard'] }), {
      requiredClaims: ['is_active_student'],
    });
    assert.equal(data.failureReason, 'untrusted_issuer', data.failureMessage);
    assert.match(data.failureMessage, /library_card/);
  });

  test('under the sd-jwt-vc name it is refused as unsupported_format, naming jwt-vc; and the reverse', async () => {
    const data = await verify(tenant, await esc(), { format: 'sd-jwt-vc' });
    assert.equal(data.verified, false);
    assert.equal(data.failureReason, 'unsupported_format');
    assert.match(data.failureMessage, /format jwt-vc/);
    const nonce = 'nonce_jwt-vc-sd-jwt-as-jwt-vc';
    const sdJwt = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: tenant.auth,
      payload: { format: 'jwt-vc', presentation: sdJwt, nonce },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.failureReason, 'unsupported_format');
    assert.match(res.json().data.failureMessage, /format sd-jwt-vc/);
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: tenant.auth,
      payload: { format: 'jwt_vc_json', presentation: sdJwt, nonce: `${nonce}-2` },
    });
    assert.equal(unknown.statusCode, 400, unknown.body);
    assert.equal(unknown.json().error.code, 'invalid_request');
  });

  test('our own wallet protocol: under jwt-vc it completes the session as jwt-vc; under sd-jwt-vc it is a 400', async () => {
    const session = await createSession(h, tenant, { requiredClaims: ['is_active_student', 'university_domain'] });
    assert.equal((await consent(h, session)).statusCode, 200);
    const presentation = await presentJwtVc(await esc(), holder(), {
      nonce: session.challengeNonce,
      aud: h.config.baseUrl,
      now: h.clock.now(),
    });
    const wrong = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/presentation`,
      payload: { nonce: session.challengeNonce, format: 'sd-jwt-vc', presentation },
    });
    assert.equal(wrong.statusCode, 400, wrong.body);
    assert.equal(wrong.json().error.code, 'presentation_rejected');
    assert.match(wrong.json().error.message, /format jwt-vc/);
    const res = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/presentation`,
      payload: { nonce: session.challengeNonce, format: 'jwt-vc', presentation },
    });
    assert.equal(res.statusCode, 200, res.body);
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${session.sessionId}`,
      headers: tenant.auth,
    });
    const result = read.json().data.result;
    assert.equal(result.verified, true, result.failureMessage);
    assert.equal(result.format, 'jwt-vc');
    assert.equal(result.protocol, 'matricula');
    assert.equal(result.claims.university_domain, DOMAIN);
  });
});
