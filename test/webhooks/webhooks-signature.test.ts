import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { signPayload, signStandardWebhook, unixSeconds } from '../../src/webhooks/signature.ts';
import { isSigningSecret, newSigningSecret } from '../../src/webhooks/secrets.ts';
import { standardWebhooksKey, verifyWebhookSignature } from '../../packages/sdk/src/webhooks.ts';

const NOW = new Date('2026-11-21T10:00:00.000Z');
const T = unixSeconds(NOW);
const SECRET = 'whsec_6yQmP0aZ3rX9bT1cV5nL8kH2jG4fD7sA0eW1uY3iO5p';
const BODY = JSON.stringify({
  id: 'evt_01jd0000000000000000000000',
  event: 'verification.completed',
  createdAt: '2026-11-21T10:00:00.000Z',
  appId: 'app_01jd0000000000000000000000',
  environment: 'sandbox',
  data: { sessionId: 'sess_01jd0000000000000000000000', verified: true, note: 'Zoë ✓' },
});

/** The recipe of docs/webhooks.md (`X-Service-Signature`), written out with node:crypto and nothing from src. */
function referenceV1(t: number, body: string | Buffer, secret: string): string {
  return createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)]))
    .digest('hex');
}

describe('signPayload', () => {
  it('produces t=<unix>,v1=<hex> exactly as the documented recipe computes it', () => {
    const header = signPayload(BODY, [SECRET], T);
    assert.equal(header, `t=${T},v1=${referenceV1(T, BODY, SECRET)}`);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('keys the HMAC with the whole whsec_ string, not a decoded form', () => {
    const header = signPayload(BODY, [SECRET], T);
    const withoutPrefix = referenceV1(T, BODY, SECRET.slice('whsec_'.length));
    assert.ok(!header.includes(withoutPrefix));
  });

  it('adds one v1 per secret, in the order given (rotation)', () => {
    const next = newSigningSecret();
    const header = signPayload(BODY, [next, SECRET], T);
    assert.equal(header, `t=${T},v1=${referenceV1(T, BODY, next)},v1=${referenceV1(T, BODY, SECRET)}`);
  });

  it('refuses to sign without a secret or with a fractional timestamp', () => {
    assert.throws(() => signPayload(BODY, [], T), TypeError);
    assert.throws(() => signPayload(BODY, [''], T), TypeError);
    assert.throws(() => signPayload(BODY, [SECRET], 1.5), TypeError);
  });
});

describe('verifyWebhookSignature: accepts', () => {
  it('a roundtrip of signPayload', () => {
    const header = signPayload(BODY, [SECRET], T);
    assert.deepEqual(verifyWebhookSignature(BODY, header, SECRET, { now: NOW }), { ok: true, timestamp: T });
  });

  it('a header computed independently with node:crypto', () => {
    const header = `t=${T},v1=${referenceV1(T, BODY, SECRET)}`;
    assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: NOW }).ok, true);
  });

  it('a Buffer body, including bytes that are not valid UTF-8', () => {
    const raw = Buffer.concat([Buffer.from(BODY), Buffer.from([0xff, 0xfe])]);
    const header = `t=${T},v1=${referenceV1(T, raw, SECRET)}`;
    assert.equal(verifyWebhookSignature(raw, header, SECRET, { now: NOW }).ok, true);
    // The same bytes decoded to a string lose the invalid bytes: that must no longer match.
    assert.equal(verifyWebhookSignature(raw.toString('utf8'), header, SECRET, { now: NOW }).ok, false);
  });

  it('during rotation, either secret against a header with two v1', () => {
    const oldSecret = SECRET;
    const newSecret = newSigningSecret();
    const header = signPayload(BODY, [newSecret, oldSecret], T);
    assert.equal(verifyWebhookSignature(BODY, header, oldSecret, { now: NOW }).ok, true);
    assert.equal(verifyWebhookSignature(BODY, header, newSecret, { now: NOW }).ok, true);
    assert.equal(verifyWebhookSignature(BODY, header, [newSigningSecret(), newSecret], { now: NOW }).ok, true);
  });

  it('a receiver holding both secrets against a header signed with only one', () => {
    const newSecret = newSigningSecret();
    const header = signPayload(BODY, [newSecret], T);
    assert.equal(verifyWebhookSignature(BODY, header, [SECRET, newSecret], { now: NOW }).ok, true);
  });

  it('timestamps within tolerance in both directions, now as a number of ms', () => {
    const header = signPayload(BODY, [SECRET], T);
    assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: NOW.getTime() + 300_000 }).ok, true);
    assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: NOW.getTime() - 300_000 }).ok, true);
  });

  it('whitespace around items, uppercase hex, unknown schemes and array headers', () => {
    const v1 = referenceV1(T, BODY, SECRET);
    const header = ` t=${T} , v0=legacy, v1=${v1.toUpperCase()} `;
    assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: NOW }).ok, true);
    assert.equal(verifyWebhookSignature(BODY, [`t=${T}`, `v1=${v1}`], SECRET, { now: NOW }).ok, true);
  });
});

describe('verifyWebhookSignature: rejects', () => {
  const good = signPayload(BODY, [SECRET], T);
  const v1 = referenceV1(T, BODY, SECRET);
  const cases: Array<[string, string | undefined, string]> = [
    ['no header', undefined, 'missing_header'],
    ['an empty header', '  ', 'missing_header'],
    ['a header without t=', `v1=${v1}`, 'missing_timestamp'],
    ['a header without v1=', `t=${T}`, 'missing_signature'],
    ['a header with only another scheme', `t=${T},v0=${v1}`, 'missing_signature'],
    ['an item without =', `t=${T},${v1}`, 'malformed_header'],
    ['a non-numeric t', `t=abc,v1=${v1}`, 'malformed_header'],
    ['a fractional t', `t=${T}.5,v1=${v1}`, 'malformed_header'],
    ['two t=', `t=${T},t=${T},v1=${v1}`, 'malformed_header'],
    ['a short v1', `t=${T},v1=${v1.slice(1)}`, 'malformed_header'],
    ['a non-hex v1', `t=${T},v1=${'z'.repeat(64)}`, 'malformed_header'],
  ];
  for (const [name, header, reason] of cases) {
    it(`${name} (${reason})`, () => {
      const outcome = verifyWebhookSignature(BODY, header, SECRET, { now: NOW });
      assert.equal(outcome.ok, false);
      assert.equal(!outcome.ok && outcome.reason, reason);
      assert.ok(!outcome.ok && outcome.message.length > 0);
    });
  }

  it('a stale timestamp, one second beyond the tolerance', () => {
    const outcome = verifyWebhookSignature(BODY, good, SECRET, { now: NOW.getTime() + 301_000 });
    assert.deepEqual(outcome.ok ? null : outcome.reason, 'timestamp_outside_tolerance');
    assert.match(outcome.ok ? '' : outcome.message, /301 s in the past/);
  });

  it('a future timestamp beyond the tolerance', () => {
    const outcome = verifyWebhookSignature(BODY, good, SECRET, { now: NOW.getTime() - 301_000 });
    assert.deepEqual(outcome.ok ? null : outcome.reason, 'timestamp_outside_tolerance');
    assert.match(outcome.ok ? '' : outcome.message, /301 s in the future/);
  });

  it('a custom tolerance', () => {
    const outcome = verifyWebhookSignature(BODY, good, SECRET, { now: NOW.getTime() + 61_000, toleranceSeconds: 60 });
    assert.equal(outcome.ok ? null : outcome.reason, 'timestamp_outside_tolerance');
  });

  it('a tampered body', () => {
    const tampered = BODY.replace('"verified":true', '"verified":false');
    assert.notEqual(tampered, BODY);
    const outcome = verifyWebhookSignature(tampered, good, SECRET, { now: NOW });
    assert.equal(outcome.ok ? null : outcome.reason, 'signature_mismatch');
  });

  it('a re-serialized body (whitespace differs from the raw body)', () => {
    const reserialized = JSON.stringify(JSON.parse(BODY), null, 2);
    assert.equal(verifyWebhookSignature(reserialized, good, SECRET, { now: NOW }).ok, false);
  });

  it('a wrong secret, and the secret without its whsec_ prefix', () => {
    for (const secret of [newSigningSecret(), SECRET.slice('whsec_'.length)]) {
      const outcome = verifyWebhookSignature(BODY, good, secret, { now: NOW });
      assert.equal(outcome.ok ? null : outcome.reason, 'signature_mismatch');
    }
  });

  it('a timestamp moved forward with the old signature (replay with a fresh t)', () => {
    const replay = good.replace(`t=${T}`, `t=${T + 1000}`);
    const outcome = verifyWebhookSignature(BODY, replay, SECRET, { now: NOW.getTime() + 1_000_000 });
    assert.equal(outcome.ok ? null : outcome.reason, 'signature_mismatch');
  });

  it('a forged signature with a stale timestamp is a mismatch, not a clock problem', () => {
    const forged = `t=${T},v1=${'0'.repeat(64)}`;
    const outcome = verifyWebhookSignature(BODY, forged, SECRET, { now: NOW.getTime() + 10_000_000 });
    assert.equal(outcome.ok ? null : outcome.reason, 'signature_mismatch');
  });

  it('throws on a missing secret or a bad tolerance (receiver misconfiguration)', () => {
    assert.throws(() => verifyWebhookSignature(BODY, good, ''), TypeError);
    assert.throws(() => verifyWebhookSignature(BODY, good, []), TypeError);
    assert.throws(() => verifyWebhookSignature(BODY, good, SECRET, { toleranceSeconds: -1 }), TypeError);
  });
});

describe('newSigningSecret', () => {
  it('is whsec_ and 44 base62 characters, different every time', () => {
    const secrets = new Set(Array.from({ length: 200 }, () => newSigningSecret()));
    assert.equal(secrets.size, 200);
    for (const secret of secrets) {
      assert.match(secret, /^whsec_[0-9A-Za-z]{44}$/);
      assert.ok(isSigningSecret(secret));
    }
    // Secrets made before Standard Webhooks support (43 characters) are still secrets.
    assert.ok(isSigningSecret(SECRET));
    assert.equal(isSigningSecret('whsec_short'), false);
    assert.equal(isSigningSecret(`sk_test_${'a'.repeat(43)}`), false);
  });

  it('is canonical Standard Webhooks base64: 33 key bytes that encode back to the same 44 characters', () => {
    for (let i = 0; i < 50; i++) {
      const secret = newSigningSecret();
      const key = Buffer.from(secret.slice(6), 'base64');
      assert.equal(key.length, 33);
      assert.equal(key.toString('base64'), secret.slice(6));
      assert.deepEqual(standardWebhooksKey(secret), key);
    }
  });

  it('uses the whole alphabet evenly (no modulo bias toward the first characters)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      for (const ch of newSigningSecret().slice(6)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    assert.equal(counts.size, 62);
    // A plain `byte % 62` would draw '0'..'7' 5/4 as often as the rest; here the ratio of the two
    // groups' means must stay within 10 % (about 7 standard deviations for 44,000 draws).
    const mean = (chars: string[]) => chars.reduce((sum, ch) => sum + (counts.get(ch) ?? 0), 0) / chars.length;
    const first8 = mean([...'01234567']);
    const rest = mean([...counts.keys()].filter((ch) => !'01234567'.includes(ch)));
    assert.ok(first8 / rest < 1.1 && first8 / rest > 0.9, `first 8: ${first8}, rest: ${rest}`);
  });
});

describe('Standard Webhooks (webhook-* headers)', () => {
  const ID = 'evt_01jd0000000000000000000000';
  const NEW = 'whsec_0123456789abcdefghijABCDEFGHIJ0123456789abcd';
  const swHeaders = (secrets: string[], t = T, id = ID, body = BODY) => ({
    'webhook-id': id,
    'webhook-timestamp': String(t),
    'webhook-signature': signStandardWebhook(id, body, secrets, t),
  });

  it('signs as the standardwebhooks library signs, with the base64 after whsec_ as the key', () => {
    for (const secret of [NEW, SECRET]) {
      const library = new StandardWebhook(secret).sign(ID, NOW, BODY);
      assert.equal(signStandardWebhook(ID, BODY, [secret], T), library);
      const independent = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
        .update(`${ID}.${T}.${BODY}`)
        .digest('base64');
      assert.equal(library, `v1,${independent}`);
    }
    assert.equal(
      signStandardWebhook(ID, BODY, [NEW, SECRET], T),
      `${new StandardWebhook(NEW).sign(ID, NOW, BODY)} ${new StandardWebhook(SECRET).sign(ID, NOW, BODY)}`,
    );
  });

  it('verifyWebhookSignature takes the headers and checks every scheme present', () => {
    const both = { ...swHeaders([NEW]), 'X-Service-Signature': signPayload(BODY, [NEW], T) };
    assert.deepEqual(verifyWebhookSignature(BODY, both, NEW, { now: NOW }), {
      ok: true,
      timestamp: T,
      schemes: ['standard-webhooks', 'x-service'],
      webhookId: ID,
    });
    assert.deepEqual(verifyWebhookSignature(BODY, new Headers(swHeaders([NEW])), NEW, { now: NOW }), {
      ok: true,
      timestamp: T,
      schemes: ['standard-webhooks'],
      webhookId: ID,
    });
    // Both present, one forged: refused, naming the scheme.
    const forgedService = { ...both, 'X-Service-Signature': signPayload(BODY, [newSigningSecret()], T) };
    const refused = verifyWebhookSignature(BODY, forgedService, NEW, { now: NOW });
    assert.deepEqual(refused.ok ? 'accepted' : [refused.reason, refused.scheme], ['signature_mismatch', 'x-service']);
  });

  it('refuses a wrong secret, another id, a changed body, missing headers and an old timestamp', () => {
    const reason = (r: ReturnType<typeof verifyWebhookSignature>) => (r.ok ? 'accepted' : r.reason);
    const headers = swHeaders([NEW]);
    assert.equal(reason(verifyWebhookSignature(BODY, headers, SECRET, { now: NOW })), 'signature_mismatch');
    assert.equal(
      reason(verifyWebhookSignature(BODY, { ...headers, 'webhook-id': 'evt_other' }, NEW, { now: NOW })),
      'signature_mismatch',
    );
    assert.equal(reason(verifyWebhookSignature(`${BODY} `, headers, NEW, { now: NOW })), 'signature_mismatch');
    assert.equal(
      reason(verifyWebhookSignature(BODY, { 'webhook-signature': headers['webhook-signature'] }, NEW, { now: NOW })),
      'missing_webhook_id',
    );
    assert.equal(reason(verifyWebhookSignature(BODY, {}, NEW, { now: NOW })), 'missing_header');
    assert.equal(
      reason(verifyWebhookSignature(BODY, { ...headers, 'webhook-signature': 'v2,abc' }, NEW, { now: NOW })),
      'missing_signature',
    );
    assert.equal(
      reason(verifyWebhookSignature(BODY, headers, NEW, { now: (T + 301) * 1000 })),
      'timestamp_outside_tolerance',
    );
  });

  it('during a rotation either secret verifies the space-separated signatures', () => {
    const headers = swHeaders([NEW, SECRET]);
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const secret of [NEW, SECRET]) {
      assert.equal(verifyWebhookSignature(BODY, headers, secret, { now: NOW }).ok, true);
    }
  });
});
