import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUILDERS } from '../support/builders.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession } from '../support/sessions.ts';

const RESULT_FIELDS = ['claims', 'failureMessage', 'failureReason', 'format', 'issuer', 'university', 'verified'];

forEachDialect('direct verify and events API', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const verify = (body: Record<string, unknown>, auth = tenant.auth) =>
    h.app.inject({ method: 'POST', url: '/verification/v1/verify', headers: auth, payload: body });

  for (const format of ['sd-jwt-vc', 'bbs'] as const) {
    test(`${format}: a valid presentation verifies directly`, async () => {
      const nonce = `nonce_direct-${format}`;
      const presentation = await buildPresentation(h, format, {
        nonce,
        disclose: ['is_active_student', 'academic_level', 'valid_until'],
        student: { university: 'pruebas.example' },
      });
      const res = await verify({ format, presentation, nonce, requiredClaims: ['academic_level'] });
      assert.equal(res.statusCode, 200);
      const data = res.json().data;
      assert.deepEqual(Object.keys(data).sort(), RESULT_FIELDS);
      assert.equal(data.verified, true);
      assert.equal(data.format, format);
      assert.deepEqual(data.university, { name: 'Universidad de Pruebas', domain: 'pruebas.example', country: 'ES' });
      // The date is reported whenever the format reveals it: the wallet is always asked for it.
      assert.deepEqual(data.claims, {
        is_active_student: true,
        academic_level: 'undergraduate',
        valid_until: '2027-09-30T00:00:00.000Z',
      });
      assert.match(data.issuer, /^iss_/);
      assert.equal(data.failureReason, null);
      assert.equal(data.failureMessage, null);
    });
  }

  test('a negative outcome is a 200 with verified false and the reason', async () => {
    const nonce = 'nonce_direct-negative';
    const good = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ format: 'sd-jwt-vc', presentation: good, nonce: 'nonce_other' }, 'nonce_mismatch'],
      [{ format: 'sd-jwt-vc', presentation: good, nonce, audience: 'https://elsewhere.example' }, 'audience_mismatch'],
      [{ format: 'sd-jwt-vc', presentation: BUILDERS['sd-jwt-vc'].tamper(good), nonce }, 'invalid_disclosure'],
      [{ format: 'bbs', presentation: good, nonce }, 'malformed_presentation'],
      // Each judged presentation spends its nonce (finding 2), so each has one of its own.
      [
        {
          format: 'sd-jwt-vc',
          presentation: await buildPresentation(h, 'sd-jwt-vc', { nonce: `${nonce}-1`, student: { active: false } }),
          nonce: `${nonce}-1`,
        },
        'student_inactive',
      ],
      [
        {
          format: 'sd-jwt-vc',
          presentation: await buildPresentation(h, 'sd-jwt-vc', {
            nonce: `${nonce}-2`,
            disclose: ['is_active_student'],
          }),
          nonce: `${nonce}-2`,
          requiredClaims: ['university_domain'],
        },
        'claim_not_disclosed',
      ],
      // BBS has no expiry of its own: without valid_until the credential's currency is unknown.
      [
        {
          format: 'bbs',
          presentation: await buildPresentation(h, 'bbs', { nonce: `${nonce}-3`, disclose: ['is_active_student'] }),
          nonce: `${nonce}-3`,
        },
        'claim_not_disclosed',
      ],
      [
        {
          format: 'bbs',
          presentation: await buildPresentation(h, 'bbs', {
            nonce: `${nonce}-4`,
            student: { validUntil: '2026-01-01T00:00:00.000Z' },
          }),
          nonce: `${nonce}-4`,
        },
        'credential_expired',
      ],
    ];
    for (const [body, reason] of cases) {
      const res = await verify(body);
      assert.equal(res.statusCode, 200, reason);
      assert.equal(res.json().data.verified, false, reason);
      assert.equal(res.json().data.failureReason, reason);
      // A sentence for people beside the code, ending in one full stop.
      assert.match(res.json().data.failureMessage, /^[A-Z][^]*[^.]\.$/, reason);
    }
    const messageOf = async (body: Record<string, unknown>) => (await verify(body)).json().data.failureMessage;
    assert.equal(
      await messageOf({ format: 'sd-jwt-vc', presentation: good, nonce, audience: 'https://elsewhere.example' }),
      'The presentation was rejected: key binding JWT aud is not this service.',
    );
    assert.equal(
      await messageOf({
        format: 'sd-jwt-vc',
        presentation: await buildPresentation(h, 'sd-jwt-vc', { nonce: `${nonce}-5`, student: { active: false } }),
        nonce: `${nonce}-5`,
      }),
      'The credential does not show an active student.',
    );
  });

  test('only the claims asked for are reported, whatever else the wallet disclosed', async () => {
    const nonce = 'nonce_over-disclosure';
    const presentation = await buildPresentation(h, 'sd-jwt-vc', {
      nonce,
      disclose: ['is_active_student', 'university_domain', 'academic_level', 'valid_until'],
    });
    const res = await verify({ format: 'sd-jwt-vc', presentation, nonce, requiredClaims: ['university_domain'] });
    assert.equal(res.json().data.verified, true);
    // academic_level was not asked: null. valid_until is always asked of the wallet, so it is reported.
    assert.deepEqual(res.json().data.claims, {
      is_active_student: true,
      university_domain: 'sandbox-state.example',
      academic_level: null,
      valid_until: '2027-09-30T00:00:00.000Z',
    });
  });

  test('without requiredClaims a presentation is judged on, and reports, what it discloses', async () => {
    const nonce = 'nonce_judged-on-disclosure';
    const presentation = await buildPresentation(h, 'sd-jwt-vc', {
      nonce,
      disclose: ['is_active_student', 'university_domain', 'academic_level'],
    });
    const res = await verify({ format: 'sd-jwt-vc', presentation, nonce });
    assert.equal(res.json().data.verified, true, res.body);
    assert.deepEqual(res.json().data.claims, {
      is_active_student: true,
      university_domain: 'sandbox-state.example',
      academic_level: 'undergraduate',
      valid_until: null,
    });
    // Nothing asked, but being an active student and current is still what verified means.
    const quietNonce = 'nonce_judged-on-disclosure-bbs';
    const quiet = await buildPresentation(h, 'bbs', { nonce: quietNonce, disclose: ['academic_level'] });
    const judged = (await verify({ format: 'bbs', presentation: quiet, nonce: quietNonce })).json().data;
    assert.equal(judged.verified, false);
    assert.equal(judged.failureReason, 'claim_not_disclosed');
  });

  // Two Groth16 proofs (about 2 s of CPU each), made on SQLite only: the judgement does not depend on
  // the database, and what /verify stores is checked on both by the other formats' tests.
  if (dialect === 'sqlite')
    test('groth16: the body is judged on what the proof discloses; disclosing more than asked is unrequested_disclosure', async () => {
      const nonce = 'nonce_groth16-direct';
      const withLevel = await buildPresentation(h, 'groth16', {
        nonce,
        disclose: ['is_active_student', 'academic_level', 'valid_until'],
      });
      // Asked for less than the proof states: a precise reason, and the nonce is not spent.
      const over = (
        await verify({ format: 'groth16', presentation: withLevel, nonce, requiredClaims: ['is_active_student'] })
      ).json().data;
      assert.equal(over.verified, false);
      assert.equal(over.failureReason, 'unrequested_disclosure');
      assert.match(over.failureMessage, /academic_level, which was not requested/);
      const asIs = (await verify({ format: 'groth16', presentation: withLevel, nonce })).json().data;
      assert.equal(asIs.verified, true, JSON.stringify(asIs));
      assert.deepEqual(asIs.claims, {
        is_active_student: true,
        university_domain: 'sandbox-state.example',
        academic_level: 'undergraduate',
        valid_until: null,
      });
      // The level asked for but withheld by the proof: it verifies and then does not qualify.
      const hiddenNonce = 'nonce_groth16-direct-hidden';
      const withoutLevel = await buildPresentation(h, 'groth16', {
        nonce: hiddenNonce,
        disclose: ['is_active_student', 'valid_until'],
      });
      const withheld = (
        await verify({
          format: 'groth16',
          presentation: withoutLevel,
          nonce: hiddenNonce,
          requiredClaims: ['academic_level'],
        })
      ).json().data;
      assert.equal(withheld.verified, false);
      assert.equal(withheld.failureReason, 'claim_not_disclosed');
    });

  test('a live key sees sandbox credentials as untrusted', async () => {
    const live = await h.bootstrap('live');
    const nonce = 'nonce_live';
    const res = await verify(
      { format: 'sd-jwt-vc', presentation: await buildPresentation(h, 'sd-jwt-vc', { nonce }), nonce },
      live.auth,
    );
    assert.equal(res.json().data.verified, false);
    assert.equal(res.json().data.failureReason, 'untrusted_issuer');
    assert.match(res.json().data.failureMessage, /sandbox-state\.example is not a trusted live issuer\.$/);
  });

  test('bad requests are 400s; no key is a 401', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ format: 'sd-jwt-vc', presentation: 'x' }, 'nonce'],
      [{ format: 'pdf', presentation: 'x', nonce: 'n' }, 'format'],
      [{ presentation: 'x', nonce: 'n' }, 'format'],
      [{ format: 'sd-jwt-vc', nonce: 'n' }, 'presentation'],
      [{ format: 'sd-jwt-vc', presentation: 'x', nonce: 'n', requiredClaims: ['shoe_size'] }, 'requiredClaims'],
      [{ format: 'sd-jwt-vc', presentation: 'x', nonce: 'n', extra: true }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const res = await verify(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.param, param);
    }
    const anonymous = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      payload: { format: 'sd-jwt-vc', presentation: 'x', nonce: 'n' },
    });
    assert.equal(anonymous.statusCode, 401);
  });

  test("events: listed newest first with pagination; another org's event is a 404, another environment's a 403", async () => {
    const t = await h.bootstrap('sandbox');
    for (let i = 0; i < 3; i++) await consent(h, await createSession(h, t));
    const page1 = (await h.app.inject({ method: 'GET', url: '/org/v1/events?limit=2', headers: t.auth })).json();
    assert.equal(page1.data.length, 2);
    assert.equal(page1.pagination.hasMore, true);
    const page2 = (
      await h.app.inject({
        method: 'GET',
        url: `/org/v1/events?limit=2&startingAfter=${page1.pagination.nextCursor}`,
        headers: t.auth,
      })
    ).json();
    assert.equal(page2.data.length, 1);
    assert.ok(page1.data[0].id > page1.data[1].id && page1.data[1].id > page2.data[0].id);
    const eventId = page1.data[0].id;
    const other = await h.bootstrap('sandbox');
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `/org/v1/events/${eventId}`, headers: other.auth })).statusCode,
      404,
    );
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `/org/v1/events?appId=${t.appId}`, headers: other.auth })).statusCode,
      404,
    );
    assert.equal(
      (await h.app.inject({ method: 'GET', url: '/org/v1/events/evt_00000000000000000000000000', headers: t.auth }))
        .statusCode,
      404,
    );
    const { insertNewApplication } = await import('../../src/services/applications.ts');
    const { issueKey } = await import('../../src/services/api-keys.ts');
    const liveApp = await insertNewApplication(h.store.db, { clock: h.clock }, t.orgId, {
      name: 'live',
      environment: 'live',
    });
    const liveKey = await issueKey(h.store.db, { clock: h.clock }, liveApp, 'live');
    const crossEnv = await h.app.inject({
      method: 'GET',
      url: `/org/v1/events/${eventId}`,
      headers: { authorization: `Bearer ${liveKey.rawSecret}` },
    });
    assert.equal(crossEnv.statusCode, 403);
    const liveList = (
      await h.app.inject({
        method: 'GET',
        url: '/org/v1/events',
        headers: { authorization: `Bearer ${liveKey.rawSecret}` },
      })
    ).json().data;
    assert.equal(liveList.length, 0);
  });
});

forEachDialect('OPENID4VP_ACCEPTED_VCT holds for every protocol', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  // StudentCredential, the sandbox credentials' vct, is not among the accepted types here.
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { OPENID4VP_ACCEPTED_VCT: 'urn:example:OtherCredential' });

  test('/verify refuses an sd-jwt-vc whose vct is not accepted', async () => {
    const nonce = 'nonce_vct-check';
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: tenant.auth,
      payload: { format: 'sd-jwt-vc', presentation, nonce },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.verified, false);
    assert.equal(res.json().data.failureReason, 'malformed_presentation');
    assert.match(res.json().data.failureMessage, /urn:example:OtherCredential/);
  });

  test("a session's own wallet protocol refuses it too", async () => {
    const s = await createSession(h, tenant);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: s.challengeNonce });
    assert.equal((await consent(h, s)).statusCode, 200);
    const res = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${s.sessionId}/presentation`,
      payload: { nonce: s.challengeNonce, format: 'sd-jwt-vc', presentation },
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error.reason, 'malformed_presentation');
  });
});
