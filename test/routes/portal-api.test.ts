import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiError } from '../../src/errors.ts';
import { buildLimiter } from '../../src/services/sandbox-wallet.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { consent, createSession, getSession, submit, type CreatedSession } from '../support/sessions.ts';

/** The public status endpoint and the sandbox wallet's presentation endpoint, on both databases. */

const DAY_MS = 24 * 60 * 60 * 1000;
const STUDENT = { university: 'sandbox-state.example', active: true, academicLevel: 'postgraduate', expired: false };

forEachDialect('portal API', (dialect) => {
  let h: Harness;
  let sandbox: Tenant;
  let live: Tenant;
  before(async () => {
    h = await startHarness(dialect);
    sandbox = await h.bootstrap('sandbox');
    live = await h.bootstrap('live');
  });
  after(() => h.close());

  const status = (sessionId: string) =>
    h.app.inject({ method: 'GET', url: `/verification/v1/sessions/${encodeURIComponent(sessionId)}/status` });
  const build = (
    s: Pick<CreatedSession, 'sessionId' | 'challengeNonce'>,
    format: string,
    student: Record<string, unknown> = STUDENT,
  ) =>
    h.app.inject({
      method: 'POST',
      url: '/wallet/sandbox/presentation',
      payload: { sessionId: s.sessionId, nonce: s.challengeNonce, format, student },
    });
  const acceptedFormats = async (s: CreatedSession): Promise<string[]> =>
    (
      await h.app.inject({
        method: 'GET',
        url: `/verification/v1/sessions/${s.sessionId}/request?nonce=${encodeURIComponent(s.challengeNonce)}`,
      })
    ).json().data.acceptedFormats;

  describe('GET /verification/v1/sessions/{id}/status', () => {
    test('needs no key and says the state, the expiry and the server clock: nothing else', async () => {
      const s = await createSession(h, sandbox);
      const res = await status(s.sessionId);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(res.json(), {
        success: true,
        data: {
          sessionId: s.sessionId,
          status: 'pending',
          verified: null,
          expiresAt: s.expiresAt,
          now: h.clock.now().toISOString(),
        },
      });
      assert.doesNotMatch(res.body, /nonce_/);
    });

    test('a verified session reads completed and verified, without claims, university or format', async () => {
      const s = await createSession(h, sandbox, {
        requiredClaims: ['is_active_student', 'university_domain', 'academic_level'],
      });
      await consent(h, s);
      const built = await build(s, 'sd-jwt-vc');
      assert.equal((await submit(h, s, 'sd-jwt-vc', built.json().data.presentation)).json().data.verified, true);
      const data = (await status(s.sessionId)).json().data;
      assert.deepEqual(Object.keys(data).sort(), ['expiresAt', 'now', 'sessionId', 'status', 'verified']);
      assert.equal(data.status, 'completed');
      assert.equal(data.verified, true);
      assert.doesNotMatch(JSON.stringify(data), /sandbox-state|postgraduate|sd-jwt/);
    });

    test('an unverified completion reads verified false, without the reason', async () => {
      const s = await createSession(h, sandbox);
      await consent(h, s);
      const built = await build(s, 'sd-jwt-vc', { ...STUDENT, active: false });
      assert.equal(
        (await submit(h, s, 'sd-jwt-vc', built.json().data.presentation)).json().data.failureReason,
        'student_inactive',
      );
      const res = await status(s.sessionId);
      assert.deepEqual(res.json().data, {
        sessionId: s.sessionId,
        status: 'completed',
        verified: false,
        expiresAt: s.expiresAt,
        now: h.clock.now().toISOString(),
      });
    });

    test('consented, declined, cancelled, and expired exactly at expiresAt (before any sweeper)', async () => {
      const consented = await createSession(h, sandbox);
      await consent(h, consented);
      assert.equal((await status(consented.sessionId)).json().data.status, 'consented');

      const declined = await createSession(h, sandbox);
      await consent(h, declined, 'declined');
      assert.equal((await status(declined.sessionId)).json().data.status, 'declined');

      const cancelled = await createSession(h, sandbox);
      await h.app.inject({
        method: 'POST',
        url: `/verification/v1/sessions/${cancelled.sessionId}/cancel`,
        headers: sandbox.auth,
      });
      assert.equal((await status(cancelled.sessionId)).json().data.status, 'cancelled');

      const expiring = await createSession(h, sandbox, { expiresInSeconds: 30 });
      h.clock.advance(29_999);
      assert.equal((await status(expiring.sessionId)).json().data.status, 'pending');
      h.clock.advance(1);
      const data = (await status(expiring.sessionId)).json().data;
      assert.equal(data.status, 'expired');
      assert.equal(data.verified, null);
      assert.equal(data.now, expiring.expiresAt);
    });

    test('a live session has a public status too', async () => {
      const s = await createSession(h, live);
      assert.equal((await status(s.sessionId)).json().data.status, 'pending');
    });

    test('an unknown or malformed id is a JSON 404', async () => {
      for (const id of [
        'sess_01aaaaaaaaaaaaaaaaaaaaaaaa',
        'sess_nope',
        'app_01aaaaaaaaaaaaaaaaaaaaaaaa',
        'x'.repeat(64),
      ]) {
        const res = await status(id);
        assert.equal(res.statusCode, 404, id);
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(res.json().error.code, 'not_found');
      }
    });
  });

  describe('POST /wallet/sandbox/presentation', () => {
    test('every accepted format: built here, submitted through the public endpoints, verified', async () => {
      const probe = await createSession(h, sandbox);
      // The simulated wallets hold no W3C credential: jwt-vc is accepted but not built here.
      const formats = (await acceptedFormats(probe)).filter((format) => format !== 'jwt-vc');
      assert.ok(formats.length >= 2);
      for (const format of formats) {
        const s = await createSession(h, sandbox, { requiredClaims: ['university_domain', 'academic_level'] });
        assert.equal((await consent(h, s)).statusCode, 200);
        const built = await build(s, format, { ...STUDENT, university: 'pruebas.example' });
        assert.equal(built.statusCode, 200, built.body);
        assert.equal(built.json().data.format, format);
        const res = await submit(h, s, format as never, built.json().data.presentation);
        assert.equal(res.statusCode, 200, `${format}: ${res.body}`);
        assert.deepEqual(res.json().data, {
          sessionId: s.sessionId,
          status: 'completed',
          verified: true,
          failureReason: null,
          failureMessage: null,
        });
        const result = (await getSession(h, sandbox, s.sessionId)).json().data.result;
        // What the wallet was asked to disclose: the session's claims, is_active_student, and the date
        // the status is valid until, which the business receives whenever the format reveals it
        // (Groth16 proves it lies after now and shows no date). The wallet's credentials run a year.
        const validUntil = new Date(Math.floor((h.clock.now().getTime() + 365 * DAY_MS) / DAY_MS) * DAY_MS);
        assert.deepEqual(
          result.claims,
          {
            is_active_student: true,
            university_domain: 'pruebas.example',
            academic_level: 'postgraduate',
            valid_until: format === 'groth16' ? null : validUntil.toISOString(),
          },
          format,
        );
        assert.equal(result.university.name, 'Universidad de Pruebas');
      }
    });

    test('an inactive student and an expired credential complete the session unverified, with the reason', async () => {
      const inactive = await createSession(h, sandbox);
      await consent(h, inactive);
      const a = await build(inactive, 'sd-jwt-vc', { ...STUDENT, active: false });
      assert.equal(
        (await submit(h, inactive, 'sd-jwt-vc', a.json().data.presentation)).json().data.failureReason,
        'student_inactive',
      );

      const expired = await createSession(h, sandbox, { requiredClaims: ['is_active_student', 'valid_until'] });
      await consent(h, expired);
      const b = await build(expired, 'bbs', { ...STUDENT, expired: true });
      const res = await submit(h, expired, 'bbs', b.json().data.presentation);
      assert.deepEqual(res.json().data, {
        sessionId: expired.sessionId,
        status: 'completed',
        verified: false,
        failureReason: 'credential_expired',
        failureMessage: 'The credential has expired.',
      });
      const claims = (await getSession(h, sandbox, expired.sessionId)).json().data.result.claims;
      assert.ok(Date.parse(claims.valid_until) < h.clock.now().getTime());
    });

    test('the presentation is bound to the session: another session refuses it', async () => {
      const first = await createSession(h, sandbox);
      const second = await createSession(h, sandbox);
      await consent(h, second);
      const built = await build(first, 'sd-jwt-vc');
      const res = await submit(h, second, 'sd-jwt-vc', built.json().data.presentation);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error.reason, 'nonce_mismatch');
    });

    test('a live session is refused with a 403 that says why, even with its nonce', async () => {
      const s = await createSession(h, live);
      const res = await build(s, 'sd-jwt-vc');
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().error.code, 'forbidden');
      assert.match(res.json().error.message, /sandbox sessions only/);
      assert.equal((await status(s.sessionId)).json().data.status, 'pending');
    });

    test('a wrong nonce or an unknown session is a 404; an expired session a 410; a finished one a 409', async () => {
      const s = await createSession(h, sandbox);
      assert.equal(
        (await build({ sessionId: s.sessionId, challengeNonce: 'nonce_wrong' }, 'sd-jwt-vc')).statusCode,
        404,
      );
      assert.equal(
        (await build({ sessionId: 'sess_01aaaaaaaaaaaaaaaaaaaaaaaa', challengeNonce: s.challengeNonce }, 'sd-jwt-vc'))
          .statusCode,
        404,
      );

      const declined = await createSession(h, sandbox);
      await consent(h, declined, 'declined');
      const finished = await build(declined, 'sd-jwt-vc');
      assert.equal(finished.statusCode, 409);
      assert.match(finished.json().error.message, /declined/);

      const expiring = await createSession(h, sandbox, { expiresInSeconds: 30 });
      h.clock.advance(30_000);
      const gone = await build(expiring, 'sd-jwt-vc');
      assert.equal(gone.statusCode, 410);
      assert.equal(gone.json().error.code, 'session_expired');
    });

    test('the body is checked strictly: sandbox universities and catalogue levels only, no extra fields', async () => {
      const s = await createSession(h, sandbox);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ format: 'sd-jwt-vc', student: { ...STUDENT, university: 'harvard.edu' } }, 'student.university'],
        [{ format: 'sd-jwt-vc', student: { ...STUDENT, academicLevel: 'kindergarten' } }, 'student.academicLevel'],
        [{ format: 'sd-jwt-vc', student: { ...STUDENT, active: 'yes' } }, 'student.active'],
        [{ format: 'jwt', student: STUDENT }, 'format'],
        [{ format: 'sd-jwt-vc', student: { ...STUDENT, holderSeed: 'x' } }, 'student.holderSeed'],
        [{ format: 'sd-jwt-vc', student: STUDENT, validUntil: '2099-01-01T00:00:00.000Z' }, 'validUntil'],
      ];
      for (const [body, param] of cases) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/wallet/sandbox/presentation',
          payload: { sessionId: s.sessionId, nonce: s.challengeNonce, ...body },
        });
        assert.equal(res.statusCode, 400, param);
        assert.equal(res.json().error.param, param);
      }
    });
  });

  test('OpenAPI documents both endpoints without bearer security, and hides the pages', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const statusOp = doc.paths['/verification/v1/sessions/{sessionId}/status'].get;
    const buildOp = doc.paths['/wallet/sandbox/presentation'].post;
    for (const op of [statusOp, buildOp]) {
      assert.deepEqual(op.security, []);
      assert.ok(op.description.length > 40);
    }
    const data = statusOp.responses['200'].content['application/json'].schema.properties.data;
    assert.equal(data.$ref, '#/components/schemas/PublicSessionStatus');
    assert.deepEqual(Object.keys(doc.components.schemas.PublicSessionStatus.properties).sort(), [
      'expiresAt',
      'now',
      'sessionId',
      'status',
      'verified',
    ]);
    assert.ok(buildOp.responses['403']);
    for (const path of Object.keys(doc.paths)) assert.doesNotMatch(path, /^\/(verify|wallet$|assets)/);
  });
});

describe('sandbox presentation build limiter', () => {
  test('refuses work beyond its limit with rate_limited, and frees the slot when work ends', async () => {
    const run = buildLimiter(2);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = run(() => gate.then(() => 1));
    const second = run(() => gate.then(() => 2));
    await assert.rejects(
      run(async () => 3),
      (error: unknown) => error instanceof ApiError && error.code === 'rate_limited' && error.status === 429,
    );
    release();
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.equal(await run(async () => 4), 4);
    await assert.rejects(
      run(() => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(await run(async () => 5), 5);
  });
});
