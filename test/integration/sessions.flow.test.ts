import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { BUILDERS } from '../support/builders.ts';
import { releaseSnarkjsCurve } from '../../src/proofs/groth16/builder.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, getSession, submit } from '../support/sessions.ts';

forEachDialect('verification flow', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
  });
  after(async () => {
    await h.close();
    await releaseSnarkjsCurve();
  });

  const events = async (type: string) =>
    (
      await h.app.inject({
        method: 'GET',
        url: `/org/v1/events?appId=${tenant.appId}&event=${type}&limit=100`,
        headers: tenant.auth,
      })
    ).json().data as Array<{
      id: string;
      event: string;
      appId: string;
      environment: string;
      createdAt: string;
      data: Record<string, unknown>;
    }>;

  for (const format of ['sd-jwt-vc', 'bbs', 'groth16'] as const) {
    test(`${format}: request → consent → presentation completes verified, with the verification.completed event`, async () => {
      const s = await createSession(h, tenant, {
        requiredClaims: ['is_active_student', 'university_domain', 'academic_level', 'valid_until'],
      });
      const request = await h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
      });
      assert.equal(request.statusCode, 200);
      const req = request.json().data;
      assert.equal(req.nonce, s.challengeNonce);
      assert.equal(req.audience, h.config.baseUrl);
      assert.equal(req.purpose, 'Student discount at checkout');
      assert.ok(req.acceptedFormats.includes(format));
      assert.equal(req.status, 'pending');

      assert.equal((await consent(h, s)).statusCode, 200);
      const presentation = await buildPresentation(h, format, { nonce: req.nonce, disclose: req.requiredClaims });
      const res = await submit(h, s, format, presentation);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().data, {
        sessionId: s.sessionId,
        status: 'completed',
        verified: true,
        failureReason: null,
        failureMessage: null,
      });

      const session = (await getSession(h, tenant, s.sessionId)).json().data;
      assert.equal(session.status, 'completed');
      assert.equal(session.completedAt, h.clock.now().toISOString());
      assert.deepEqual(session.result, {
        verified: true,
        protocol: 'matricula',
        format,
        university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
        // Groth16 proves valid_until > now without revealing the date.
        claims: {
          is_active_student: true,
          university_domain: 'sandbox-state.example',
          academic_level: 'undergraduate',
          valid_until: format === 'groth16' ? null : '2027-09-30T00:00:00.000Z',
        },
        failureReason: null,
        failureMessage: null,
      });

      const completed = (await events('verification.completed')).find((e) => e.data.sessionId === s.sessionId)!;
      assert.deepEqual(Object.keys(completed).sort(), ['appId', 'createdAt', 'data', 'environment', 'event', 'id']);
      assert.match(completed.id, /^evt_/);
      assert.equal(completed.environment, 'sandbox');
      assert.deepEqual(Object.keys(completed.data).sort(), [
        'claims',
        'protocol',
        'sessionId',
        'university',
        'verified',
      ]);
      assert.equal(completed.data.protocol, 'matricula');
      assert.deepEqual(completed.data.university, session.result.university);
      assert.deepEqual(completed.data.claims, session.result.claims);
      const approved = (await events('consent.approved')).find((e) => e.data.sessionId === s.sessionId);
      assert.ok(approved);
      const one = await h.app.inject({ method: 'GET', url: `/org/v1/events/${completed.id}`, headers: tenant.auth });
      assert.deepEqual(one.json().data, completed);
    });
  }

  test('only the requested claims are reported; the university comes from the registry', async () => {
    const s = await createSession(h, tenant, { requiredClaims: ['is_active_student'] });
    await consent(h, s);
    const p = await buildPresentation(h, 'sd-jwt-vc', {
      nonce: s.challengeNonce,
      disclose: ['is_active_student'],
      student: { university: 'pruebas.example' },
    });
    assert.equal((await submit(h, s, 'sd-jwt-vc', p)).json().data.verified, true);
    const result = (await getSession(h, tenant, s.sessionId)).json().data.result;
    assert.deepEqual(result.claims, { is_active_student: true, academic_level: null, valid_until: null });
    assert.deepEqual(result.university, { name: 'Universidad de Pruebas', domain: 'pruebas.example', country: 'ES' });
  });

  test('verification.completed payload shape: every key present, null when not asked or not revealed', async () => {
    // Groth16 proves valid_until > now without revealing the date: asked for, it is still null.
    const s = await createSession(h, tenant, { requiredClaims: ['is_active_student', 'valid_until'] });
    await consent(h, s);
    const p = await buildPresentation(h, 'groth16', { nonce: s.challengeNonce, disclose: ['is_active_student'] });
    const res = await submit(h, s, 'groth16', p);
    assert.equal(res.json().data.verified, true, res.body);
    const expected = { is_active_student: true, academic_level: null, valid_until: null };
    const result = (await getSession(h, tenant, s.sessionId)).json().data.result;
    assert.deepEqual(result.claims, expected);
    const completed = (await events('verification.completed')).find((e) => e.data.sessionId === s.sessionId)!;
    assert.deepEqual(completed.data.claims, expected);
    // The OpenAPI document says the keys are always there and may be null: one named schema, used by
    // the session result, /verify and the verification.completed event.
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const schemas = doc.components.schemas as Record<string, { properties: Record<string, { $ref?: string }> }>;
    for (const name of ['SessionResult', 'VerificationResult', 'VerificationCompletedData']) {
      assert.equal(schemas[name].properties.claims.$ref, '#/components/schemas/ReportedClaims', name);
    }
    const claimSchemas = [
      schemas.ReportedClaims as unknown as { required?: string[]; properties: Record<string, unknown> },
    ];
    for (const schema of claimSchemas) {
      for (const key of ['is_active_student', 'academic_level', 'valid_until']) {
        assert.ok(schema.required?.includes(key), `${key} required`);
        assert.match(JSON.stringify(schema.properties[key]), /"type":"null"/, `${key} nullable`);
      }
    }
  });

  const notQualifying: Array<
    [string, Parameters<typeof buildPresentation>[2]['student'], string[] | undefined, string, string]
  > = [
    [
      'inactive student',
      { active: false },
      undefined,
      'student_inactive',
      'The credential does not show an active student.',
    ],
    [
      'expired credential',
      { validUntil: '2026-01-01T00:00:00.000Z' },
      undefined,
      'credential_expired',
      'The credential has expired.',
    ],
    [
      'required claim withheld',
      {},
      ['is_active_student'],
      'claim_not_disclosed',
      'The required claim university_domain was not disclosed.',
    ],
  ];
  for (const [name, student, disclose, reason, message] of notQualifying) {
    test(`${name}: the session completes unverified with ${reason}`, async () => {
      const s = await createSession(h, tenant, {
        requiredClaims: ['is_active_student', 'university_domain', 'valid_until'],
      });
      await consent(h, s);
      const p = await buildPresentation(h, 'sd-jwt-vc', {
        nonce: s.challengeNonce,
        student,
        disclose: (disclose ?? ['is_active_student', 'university_domain', 'valid_until']) as never,
      });
      const res = await submit(h, s, 'sd-jwt-vc', p);
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json().data, {
        sessionId: s.sessionId,
        status: 'completed',
        verified: false,
        failureReason: reason,
        failureMessage: message,
      });
      const session = (await getSession(h, tenant, s.sessionId)).json().data;
      assert.equal(session.result.verified, false);
      assert.equal(session.result.failureReason, reason);
      assert.equal(session.result.failureMessage, message);
      const event = (await events('verification.completed')).find((e) => e.data.sessionId === s.sessionId)!;
      assert.equal(event.data.verified, false);
    });
  }

  test('cryptographically invalid presentations are 400 with their reason and leave the session open', async () => {
    const s = await createSession(h, tenant);
    await consent(h, s);
    const otherNonce = await buildPresentation(h, 'sd-jwt-vc', { nonce: 'nonce_someone_else' });
    const wrongAudience = await buildPresentation(h, 'sd-jwt-vc', {
      nonce: s.challengeNonce,
      audience: 'https://evil.example',
    });
    const tampered = BUILDERS['sd-jwt-vc']!.tamper(
      await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce }),
    );
    const cases: Array<[unknown, string]> = [
      [otherNonce, 'nonce_mismatch'],
      [wrongAudience, 'audience_mismatch'],
      [tampered, 'invalid_disclosure'],
      ['not-a-credential', 'malformed_presentation'],
    ];
    let left = 4;
    for (const [presentation, reason] of cases) {
      const res = await submit(h, s, 'sd-jwt-vc', presentation);
      assert.equal(res.statusCode, 400, reason);
      assert.equal(res.json().error.code, 'presentation_rejected');
      assert.equal(res.json().error.reason, reason);
      // Whole sentences: the verifier's words, a full stop, then what is left.
      assert.match(
        res.json().error.message,
        new RegExp(`^The presentation was rejected: [^.]+[^.\\s]\\. ${left} attempts? left\\.$`),
      );
      left--;
    }
    assert.equal((await getSession(h, tenant, s.sessionId)).json().data.status, 'consented');
    // Still answerable after four rejections.
    const good = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', good)).json().data.verified, true);
  });

  test('a sandbox credential does not verify for a live session (untrusted issuer)', async () => {
    const live = await h.bootstrap('live');
    const s = await createSession(h, live);
    await consent(h, s);
    const res = await submit(h, s, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce }));
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.reason, 'untrusted_issuer');
  });

  test('five rejected attempts complete the session unverified (too_many_attempts)', async () => {
    const s = await createSession(h, tenant);
    await consent(h, s);
    for (let i = 1; i <= 5; i++) {
      const res = await submit(h, s, 'sd-jwt-vc', 'garbage');
      assert.equal(res.statusCode, 400);
    }
    const session = (await getSession(h, tenant, s.sessionId)).json().data;
    assert.equal(session.status, 'completed');
    assert.deepEqual(session.result, {
      verified: false,
      protocol: 'matricula',
      format: null,
      university: null,
      claims: { is_active_student: null, academic_level: null, valid_until: null },
      failureReason: 'too_many_attempts',
      failureMessage:
        '5 presentations were rejected. The last one: The presentation was rejected: not a compact SD-JWT (<jwt>~<disclosures>~<kb-jwt>).',
    });
    const sixth = await submit(h, s, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce }));
    assert.equal(sixth.statusCode, 409);
    assert.ok(
      (await events('verification.completed')).some(
        (e) => e.data.sessionId === s.sessionId && e.data.verified === false,
      ),
    );
  });

  test('a nonce answers once: replays to the same session and to another session fail', async () => {
    const s = await createSession(h, tenant);
    await consent(h, s);
    const p = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await submit(h, s, 'sd-jwt-vc', p)).statusCode, 200);
    const replay = await submit(h, s, 'sd-jwt-vc', p);
    assert.equal(replay.statusCode, 409);
    assert.equal(replay.json().error.code, 'invalid_state');
    const other = await createSession(h, tenant);
    await consent(h, other);
    const cross = await submit(h, other, 'sd-jwt-vc', p);
    assert.equal(cross.statusCode, 400);
    assert.equal(cross.json().error.reason, 'nonce_mismatch');
  });

  for (const format of ['sd-jwt-vc', 'bbs', 'groth16'] as const) {
    test(`${format}: a presentation that completed one session is refused by another and by the same`, async () => {
      const first = await createSession(h, tenant);
      const second = await createSession(h, tenant);
      await consent(h, first);
      await consent(h, second);
      const p = await buildPresentation(h, format, { nonce: first.challengeNonce });
      assert.equal((await submit(h, first, format, p)).json().data.verified, true);
      assert.equal((await submit(h, first, format, p)).statusCode, 409);
      const cross = await submit(h, second, format, p);
      assert.equal(cross.statusCode, 400);
      assert.equal(cross.json().error.code, 'presentation_rejected');
      assert.equal((await getSession(h, tenant, second.sessionId)).json().data.status, 'consented');
    });
  }

  test('two presentations racing for one session: exactly one wins', async () => {
    const s = await createSession(h, tenant);
    await consent(h, s);
    const [a, b] = await Promise.all([
      buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce, student: { holderSeed: 'racer-a' } }),
      buildPresentation(h, 'bbs', { nonce: s.challengeNonce, student: { holderSeed: 'racer-b' } }),
    ]);
    const results = await Promise.all([
      submit(h, s, 'sd-jwt-vc', a),
      submit(h, s, 'bbs', b),
      submit(h, s, 'sd-jwt-vc', a),
    ]);
    const statuses = results.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 409, 409]);
    const completions = (await events('verification.completed')).filter((e) => e.data.sessionId === s.sessionId);
    assert.equal(completions.length, 1);
  });

  test('the wallet: a wrong nonce is a 404 revealing nothing; presenting before consent is a 409', async () => {
    const s = await createSession(h, tenant);
    const wrong = 'nonce_' + 'A'.repeat(43);
    const request = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${wrong}`,
    });
    assert.equal(request.statusCode, 404);
    const unknown = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/sess_00000000000000000000000000/request?nonce=${wrong}`,
    });
    assert.equal(unknown.statusCode, 404);
    assert.equal(request.json().error.message, unknown.json().error.message);
    assert.equal((await consent(h, s, 'approved', wrong)).statusCode, 404);
    assert.equal((await submit(h, s, 'sd-jwt-vc', 'x', wrong)).statusCode, 404);
    const early = await submit(h, s, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce }));
    assert.equal(early.statusCode, 409);
    const missingNonce = await h.app.inject({ method: 'GET', url: `/verification/v1/sessions/${s.sessionId}/request` });
    assert.equal(missingNonce.statusCode, 400);
    const badDecision = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/consent`,
      payload: { nonce: s.challengeNonce, decision: 'maybe' },
    });
    assert.equal(badDecision.statusCode, 400);
  });

  test('declining: the session is declined with consent.declined, and nothing more can happen', async () => {
    const s = await createSession(h, tenant);
    const res = await consent(h, s, 'declined');
    assert.deepEqual(res.json().data, { sessionId: s.sessionId, status: 'declined' });
    assert.equal((await getSession(h, tenant, s.sessionId)).json().data.status, 'declined');
    assert.ok((await events('consent.declined')).some((e) => e.data.sessionId === s.sessionId));
    assert.equal((await consent(h, s, 'approved')).statusCode, 409);
    assert.equal(
      (
        await h.app.inject({
          method: 'POST',
          url: `/verification/v1/sessions/${s.sessionId}/cancel`,
          headers: tenant.auth,
        })
      ).statusCode,
      409,
    );
  });

  test('expiry is exact on read, 410 for the wallet, persisted by the sweeper with verification.expired', async () => {
    const s = await createSession(h, tenant, { expiresInSeconds: 60 });
    const consented = await createSession(h, tenant, { expiresInSeconds: 60 });
    await consent(h, consented);
    const p = await buildPresentation(h, 'sd-jwt-vc', { nonce: consented.challengeNonce });
    h.clock.advance(59_999);
    assert.equal((await getSession(h, tenant, s.sessionId)).json().data.status, 'pending');
    h.clock.advance(1);
    assert.equal((await getSession(h, tenant, s.sessionId)).json().data.status, 'expired');
    const request = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
    });
    assert.equal(request.statusCode, 410);
    assert.equal(request.json().error.code, 'session_expired');
    assert.equal((await submit(h, consented, 'sd-jwt-vc', p)).statusCode, 410);
    const listed = (
      await h.app.inject({
        method: 'GET',
        url: '/verification/v1/sessions?status=expired&limit=100',
        headers: tenant.auth,
      })
    ).json().data;
    assert.ok(listed.some((x: { sessionId: string }) => x.sessionId === s.sessionId));
    assert.ok(!(await events('verification.expired')).some((e) => e.data.sessionId === s.sessionId));

    const deps = h.services;
    const swept = await expireDueSessions(deps);
    assert.ok(swept >= 2);
    assert.equal(await expireDueSessions(deps), 0, 'a second sweep finds nothing');
    const expiredEvents = (await events('verification.expired')).filter(
      (e) => e.data.sessionId === s.sessionId || e.data.sessionId === consented.sessionId,
    );
    assert.equal(expiredEvents.length, 2);
    assert.equal(
      (
        await h.app.inject({
          method: 'POST',
          url: `/verification/v1/sessions/${s.sessionId}/cancel`,
          headers: tenant.auth,
        })
      ).statusCode,
      409,
    );
  });

  test('app details count sessions by outcome', async () => {
    const t = await h.bootstrap('sandbox');
    const ok = await createSession(h, t);
    await consent(h, ok);
    await submit(h, ok, 'sd-jwt-vc', await buildPresentation(h, 'sd-jwt-vc', { nonce: ok.challengeNonce }));
    const bad = await createSession(h, t);
    await consent(h, bad);
    await submit(
      h,
      bad,
      'sd-jwt-vc',
      await buildPresentation(h, 'sd-jwt-vc', { nonce: bad.challengeNonce, student: { active: false } }),
    );
    const declined = await createSession(h, t);
    await consent(h, declined, 'declined');
    await createSession(h, t);
    const lapsed = await createSession(h, t, { expiresInSeconds: 30 });
    h.clock.advance(31_000);
    const metrics = (await h.app.inject({ method: 'GET', url: `/org/v1/apps/${t.appId}`, headers: t.auth })).json().data
      .metrics.sessions;
    assert.ok(lapsed);
    assert.deepEqual(metrics, {
      total: 5,
      pending: 1,
      consented: 0,
      verified: 1,
      notVerified: 1,
      expired: 1,
      cancelled: 0,
      declined: 1,
    });
  });
});
