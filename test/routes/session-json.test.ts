import assert from 'node:assert/strict';
import { test } from 'node:test';
import build from 'fast-json-stringify';
import type { TSchema } from '@sinclair/typebox';
import { TestClock } from '../../src/domain/clock.ts';
import type { Session, SessionResult } from '../../src/domain/session.ts';
import { envelope, listEnvelope } from '../../src/http/schemas.ts';
import { COMPONENT_SCHEMAS } from '../../src/routes/components.ts';
import { createdSessionJson, sessionJson, sessionListJson } from '../../src/routes/session-json.ts';
import { CreatedSessionSchema, SessionSchema } from '../../src/routes/session-schemas.ts';
import { sessionView } from '../../src/services/sessions.ts';
import { testConfig } from '../support/harness.ts';

// The session answers are serialized by hand (src/routes/session-json.ts). What the routes sent
// before, and what the OpenAPI document still promises, is fast-json-stringify over the same
// schemas; here both serialize every shape a session can take, and must agree.
const external = Object.fromEntries(COMPONENT_SCHEMAS.map((s) => [s.$id as string, s]));
type JsonSchema = Parameters<typeof build>[0];
const compile = (schema: TSchema) =>
  build(structuredClone(schema) as unknown as JsonSchema, {
    schema: structuredClone(external) as unknown as Record<string, JsonSchema>,
  });
const bySchema = {
  session: compile(envelope(SessionSchema)),
  created: compile(envelope(CreatedSessionSchema)),
  list: compile(listEnvelope(SessionSchema)),
};

const clock = new TestClock(new Date('2026-11-23T10:00:00.000Z'));
// x509_san_dns: its client identifier is the BASE_URL host; x509_hash's needs the request signer loaded.
const deps = { config: testConfig({ OPENID4VP_CLIENT_ID_PREFIX: 'x509_san_dns' }), clock };

function session(overrides: Partial<Session> = {}): Session {
  return {
    id: 'sess_01jd8x4m2n5p6q7r8s9t0v1w2x',
    appId: 'app_01jd8x4m2n5p6q7r8s9t0v1w2x',
    orgId: 'org_01jd8x4m2n5p6q7r8s9t0v1w2x',
    environment: 'sandbox',
    status: 'pending',
    challengeNonce: 'nonce_4f9c2a7d1e8b3c6f0a5d2e9b7c4f1a8d',
    purpose: 'Student "discount" \u2014 caf\u00e9\n\u0001\ud83c\udf93',
    requiredClaims: ['is_active_student', 'university_domain'],
    metadata: null,
    clientReference: null,
    failedAttempts: 0,
    result: null,
    expiresAt: '2026-11-23T10:05:00.000Z',
    createdAt: '2026-11-23T10:00:00.000Z',
    updatedAt: '2026-11-23T10:00:00.000Z',
    consentedAt: null,
    completedAt: null,
    redactedAt: null,
    returnUrl: null,
    ...overrides,
  };
}

const verified: SessionResult = {
  verified: true,
  protocol: 'openid4vp',
  format: 'sd-jwt-vc',
  university: { name: 'Universit\u00e9 de Test', domain: 'univ.test', country: 'FR' },
  claims: {
    is_active_student: true,
    university_domain: 'univ.test',
    academic_level: 'postgraduate',
    valid_until: '2027-09-30',
  },
  failureReason: null,
  failureMessage: null,
};

const completed = (result: SessionResult, extra: Partial<Session> = {}) =>
  session({
    status: 'completed',
    result,
    consentedAt: '2026-11-23T10:01:00.000Z',
    completedAt: '2026-11-23T10:02:00.000Z',
    ...extra,
  });

const shapes: Array<[string, Session]> = [
  ['pending', session()],
  [
    'pending with metadata and a client reference',
    session({ metadata: { order: '12"34', '\u00e9': '' }, clientReference: 'order-1234' }),
  ],
  ['pending with a return URL', session({ returnUrl: 'https://shop.example/back?order=1&x="y"' })],
  [
    // One kind of character JSON escapes in each field the caller writes (the return URL above
    // holds only quotes): a lone surrogate, a backslash, a control.
    'pending with text to escape in every free field',
    session({
      purpose: 'lone \ud800 surrogate, and a pair \ud83c\udf93',
      clientReference: 'back\\slash',
      returnUrl: 'https://shop.example/\u001f',
      metadata: { '\udfff': '\\\t' },
    }),
  ],
  ['consented', session({ status: 'consented', consentedAt: '2026-11-23T10:01:00.000Z' })],
  ['expired on read', session({ expiresAt: '2026-11-23T09:59:59.999Z' })],
  ['declined', session({ status: 'declined', completedAt: '2026-11-23T10:01:00.000Z' })],
  ['cancelled', session({ status: 'cancelled', completedAt: '2026-11-23T10:01:00.000Z' })],
  ['completed, verified', completed(verified)],
  [
    'completed, verified with a warning',
    completed({
      ...verified,
      warnings: [{ code: 'credential_status_unknown', message: 'The status list could not be fetched' }],
    }),
  ],
  [
    'completed, verified without university_domain asked',
    completed({
      ...verified,
      protocol: 'matricula',
      format: 'groth16',
      claims: { is_active_student: true, academic_level: null, valid_until: null },
    }),
  ],
  [
    'completed, not verified',
    completed({
      verified: false,
      protocol: 'matricula',
      format: null,
      university: null,
      claims: { is_active_student: null, academic_level: null, valid_until: null },
      failureReason: 'too_many_attempts',
      failureMessage: 'The credential has expired',
    }),
  ],
  [
    'completed and redacted',
    completed(
      { ...verified, university: null, claims: { is_active_student: null, academic_level: null, valid_until: null } },
      { redactedAt: '2026-11-23T11:00:00.000Z', metadata: null, clientReference: null },
    ),
  ],
  [
    // A stored result may carry what the schema does not show: neither serializer lets it through.
    'completed with fields the schema does not name',
    completed({
      ...verified,
      university: { ...verified.university!, internal: 'x' },
      claims: { ...verified.claims, secret: 'x' },
      internal: { presentation: 'eyJ...' },
      warnings: [{ code: 'credential_status_unknown', message: 'm' }],
    } as unknown as SessionResult),
  ],
];

for (const [name, shape] of shapes) {
  test(`a session ${name}: the same JSON as fast-json-stringify over the schema`, () => {
    const view = sessionView(shape, deps);
    assert.deepEqual(JSON.parse(sessionJson(view)), JSON.parse(bySchema.session({ success: true, data: view })));
    // Byte for byte, too: the same fields in the same order.
    assert.equal(sessionJson(view), bySchema.session({ success: true, data: view }));
  });
}

test('a warning with a field its schema forbids: dropped (fast-json-stringify threw, a 500)', () => {
  const result = { ...verified, warnings: [{ code: 'credential_status_unknown', message: 'm', detail: 'x' }] };
  const view = sessionView(completed(result as SessionResult), deps);
  assert.throws(() => bySchema.session({ success: true, data: view }), /does not match schema/);
  assert.deepEqual(JSON.parse(sessionJson(view)).data.result.warnings, [
    { code: 'credential_status_unknown', message: 'm' },
  ]);
});

test('a page of sessions of every shape: the same JSON as fast-json-stringify', () => {
  const views = shapes.map(([, s]) => sessionView(s, deps));
  for (const pagination of [
    { hasMore: true, nextCursor: 'sess_01jd8x4m2n5p6q7r8s9t0v1w2x' },
    { hasMore: false, nextCursor: null },
  ]) {
    const expected = bySchema.list({ success: true, data: views, pagination });
    assert.equal(sessionListJson(views, { ...pagination, extra: 1 } as unknown as typeof pagination), expected);
  }
  assert.equal(
    sessionListJson([], { hasMore: false, nextCursor: null }),
    bySchema.list({ success: true, data: [], pagination: { hasMore: false, nextCursor: null } }),
  );
});

test('a created session: the creation fields only, as fast-json-stringify writes them', () => {
  const view = sessionView(session({ metadata: { a: 'b' }, clientReference: 'r' }), deps);
  const json = createdSessionJson(view);
  assert.equal(json, bySchema.created({ success: true, data: view }));
  assert.deepEqual(Object.keys(JSON.parse(json).data), [
    'sessionId',
    'status',
    'challengeNonce',
    'qrPayload',
    'verificationUrl',
    'openid4vpUri',
    'expiresAt',
  ]);
});

test("a session's links, kept once made, are its own under each configuration", () => {
  const other = {
    config: testConfig({ OPENID4VP_CLIENT_ID_PREFIX: 'x509_san_dns', BASE_URL: 'https://other.example' }),
    clock,
  };
  const first = session();
  const second = session({ id: 'sess_01jd8x4m2n5p6q7r8s9t0v1w3y', challengeNonce: 'nonce_other' });
  for (const [shape, config] of [
    [first, deps],
    [second, deps],
    [first, other],
    [first, deps],
  ] as const) {
    const view = sessionView(shape, config);
    const data = (JSON.parse(sessionJson(view)) as { data: Record<string, string> }).data;
    assert.equal(sessionJson(view), bySchema.session({ success: true, data: view }));
    assert.ok(data.verificationUrl.startsWith(config.config.portalUrl), data.verificationUrl);
    assert.ok(data.verificationUrl.endsWith(`/verify/${shape.id}`), data.verificationUrl);
    assert.ok(data.qrPayload.includes(encodeURIComponent(shape.challengeNonce)), data.qrPayload);
    assert.ok(data.openid4vpUri.includes(encodeURIComponent(shape.id)), data.openid4vpUri);
    const created = (JSON.parse(createdSessionJson(view)) as { data: Record<string, string> }).data;
    assert.deepEqual([created.qrPayload, created.verificationUrl], [data.qrPayload, data.verificationUrl]);
  }
});
