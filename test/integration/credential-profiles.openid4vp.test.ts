import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DOMAIN, issueEnrolment, newHolder, presentWith, registerExampleUniversity } from '../support/enrolment.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { holderClient, presentJwtVcJson, submit, uriParameters } from '../support/openid4vp-holder.ts';
import { loopbackServer } from '../support/server.ts';
import { newIssuerKey, type IssuerKey } from '../support/university.ts';
import { didJwk, europeanStudentCard, identity } from '../support/w3c.ts';

/**
 * The DCQL query offers every accepted profile, and an independent holder (test/support/
 * openid4vp-holder.ts: @openid4vc/openid4vp, jose, @sd-jwt; nothing of ours) answers with a
 * foreign enrolment attestation under its URN vct.
 */
forEachDialect('credential profiles over OpenID4VP', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let issuer: IssuerKey;
  let anchor: string;
  const holder = newHolder();

  before(async () => {
    const server = await loopbackServer();
    h = await startHarness(dialect, { BASE_URL: server.origin, PORT: String(server.port) });
    // The holder's library checks the request object's exp against the real time: start there.
    h.clock.advance(Math.max(0, Date.now() - h.clock.now().getTime()));
    await server.serve(h.app);
    tenant = await h.bootstrap('sandbox');
    issuer = await registerExampleUniversity(h);
    anchor = await (await fetch(`${server.origin}/openid4vp/v1/certificate`)).text();
  });
  after(() => h?.close());

  const session = async (requiredClaims: string[]) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: tenant.auth,
      payload: { appId: tenant.appId, purpose: 'Student discount', requiredClaims },
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data as { sessionId: string; openid4vpUri: string };
  };

  test('one credential query per accepted profile, any one suffices, pinned values asked for', async () => {
    const s = await session(['is_active_student', 'university_domain', 'academic_level']);
    const resolved = await holderClient([anchor]).resolveOpenId4vpAuthorizationRequest({
      authorizationRequestPayload: uriParameters(s.openid4vpUri),
    });
    const query = resolved.dcql?.query as {
      credentials: Array<{ id: string; meta: unknown; claims?: unknown[] }>;
      credential_sets?: unknown;
    };
    assert.deepEqual(
      query.credentials.map((c) => c.id),
      ['student_credential', 'enrolment_attestation', 'european_student_card', 'verifiable_educational_id'],
    );
    assert.deepEqual(query.credential_sets, [
      {
        options: [
          ['student_credential'],
          ['enrolment_attestation'],
          ['european_student_card'],
          ['verifiable_educational_id'],
        ],
        required: true,
      },
    ]);
    const enrolment = query.credentials[1]!;
    assert.deepEqual(enrolment.meta, { vct_values: ['urn:eudi:enrolment:1'] });
    assert.deepEqual(enrolment.claims, [
      { path: ['enrolment_status'], values: ['enrolled'] },
      { path: ['schacPersonalUniqueCode'] },
      { path: ['isced_level'] },
      { path: ['date_of_expiry'] },
    ]);
  });

  test('the holder answers with the enrolment attestation; the session completes with the mapped claims', async () => {
    const s = await session(['is_active_student', 'university_domain', 'academic_level']);
    const client = holderClient([anchor]);
    const resolved = await client.resolveOpenId4vpAuthorizationRequest({
      authorizationRequestPayload: uriParameters(s.openid4vpUri),
    });
    const credential = await issueEnrolment(issuer, holder, h.clock.now());
    const presentation = await presentWith(
      credential,
      holder,
      ['enrolment_status', 'schacPersonalUniqueCode', 'isced_level', 'date_of_expiry'],
      {
        nonce: resolved.authorizationRequestPayload.nonce,
        aud: resolved.authorizationRequestPayload.client_id!,
        now: h.clock.now(),
      },
    );
    const reply = await submit(client, resolved, { enrolment_attestation: [presentation] });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}`,
      headers: tenant.auth,
    });
    const result = read.json().data.result;
    assert.equal(result.verified, true, result.failureMessage);
    assert.equal(result.protocol, 'openid4vp');
    assert.equal(result.format, 'sd-jwt-vc');
    assert.deepEqual(result.claims, {
      is_active_student: true,
      university_domain: DOMAIN,
      academic_level: 'postgraduate',
      valid_until: '2027-09-30',
    });
  });

  test('an answer under one query id is checked against that profile only', async () => {
    const s = await session(['is_active_student']);
    const client = holderClient([anchor]);
    const resolved = await client.resolveOpenId4vpAuthorizationRequest({
      authorizationRequestPayload: uriParameters(s.openid4vpUri),
    });
    const credential = await issueEnrolment(issuer, holder, h.clock.now());
    const presentation = await presentWith(credential, holder, ['enrolment_status', 'date_of_expiry'], {
      nonce: resolved.authorizationRequestPayload.nonce,
      aud: resolved.authorizationRequestPayload.client_id!,
      now: h.clock.now(),
    });
    const reply = await submit(client, resolved, { student_credential: [presentation] });
    assert.equal(reply.status, 400, JSON.stringify(reply.body));
    assert.match(String(reply.body.error_description), /urn:eudi:enrolment:1/);
  });

  test('jwt_vc_json: the query names W3C types; a European Student Card answered in a VP JWT completes the session', async () => {
    const s = await session(['is_active_student', 'university_domain', 'academic_level']);
    const client = holderClient([anchor]);
    const resolved = await client.resolveOpenId4vpAuthorizationRequest({
      authorizationRequestPayload: uriParameters(s.openid4vpUri),
    });
    const query = resolved.dcql?.query as {
      credentials: Array<{ id: string; format: string; meta: unknown; claims?: unknown[] }>;
    };
    const card = query.credentials.find((c) => c.id === 'european_student_card')!;
    assert.equal(card.format, 'jwt_vc_json');
    assert.deepEqual(card.meta, {
      type_values: [['VerifiableCredential', 'VerifiableAttestation', 'EuropeanStudentCard']],
    });
    assert.deepEqual(card.claims, [
      { path: ['credentialSubject', 'esi'] },
      { path: ['credentialSubject', 'academicLevel'] },
    ]);
    const holderKey = await newIssuerKey();
    const credential = await europeanStudentCard(identity(issuer), didJwk(holderKey.publicJwk), h.clock.now(), DOMAIN);
    const vp = await presentJwtVcJson(credential, holderKey.privateJwk, resolved, {
      iat: Math.floor(h.clock.now().getTime() / 1000),
    });
    const reply = await submit(client, resolved, { european_student_card: [vp] });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}`,
      headers: tenant.auth,
    });
    const result = read.json().data.result;
    assert.equal(result.verified, true, result.failureMessage);
    assert.equal(result.protocol, 'openid4vp');
    // DCQL jwt_vc_json is reported as jwt-vc (issue 29): the result names what was verified.
    assert.equal(result.format, 'jwt-vc');
    assert.equal(result.claims.university_domain, DOMAIN);
    assert.equal(result.claims.academic_level, 'postgraduate');
  });

  test('jwt_vc_json: a VP bound to another nonce or to another audience is refused', async () => {
    const holderKey = await newIssuerKey();
    for (const [binding, reason] of [
      [{ nonce: 'another-nonce' }, 'nonce_mismatch'],
      [{ aud: 'x509_hash:another-verifier' }, 'audience_mismatch'],
    ] as const) {
      const s = await session(['is_active_student']);
      const client = holderClient([anchor]);
      const resolved = await client.resolveOpenId4vpAuthorizationRequest({
        authorizationRequestPayload: uriParameters(s.openid4vpUri),
      });
      const credential = await europeanStudentCard(
        identity(issuer),
        didJwk(holderKey.publicJwk),
        h.clock.now(),
        DOMAIN,
      );
      const vp = await presentJwtVcJson(credential, holderKey.privateJwk, resolved, {
        ...binding,
        iat: Math.floor(h.clock.now().getTime() / 1000),
      });
      const reply = await submit(client, resolved, { european_student_card: [vp] });
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      const read = await h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions/${s.sessionId}`,
        headers: tenant.auth,
      });
      assert.notEqual(read.json().data.status, 'completed');
      assert.match(JSON.stringify(reply.body) + JSON.stringify(read.json().data), new RegExp(reason));
    }
  });
});
