import assert from 'node:assert/strict';
import { hkdfSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { ID_PREFIXES, isId, newId, pooledRandomBytes } from '../../src/domain/ids.ts';
import { newChallengeNonce } from '../../src/services/sessions.ts';
import { clientId, openid4vpUri, requestUri } from '../../src/services/openid4vp/request.ts';
import type { Session } from '../../src/domain/session.ts';
import { testConfig } from '../support/harness.ts';
import { TestClock } from '../../src/domain/clock.ts';
import {
  encryptionKeyPair,
  requestNonce,
  requestState,
  requestToken,
  responseCode,
  sameDeviceBinding,
} from '../../src/services/openid4vp/session-secrets.ts';
import { p256 } from '@noble/curves/p256';

/**
 * Values computed on every request, made cheaper for issue 13: ids from a pool of random bytes,
 * and the OpenID4VP derivations of a session kept once computed. Cheaper must not mean different.
 */

describe('ids from the pooled random bytes', () => {
  test('are well formed and never repeat, across many refills of the pool, within one millisecond', () => {
    const clock = new TestClock(new Date('2026-11-23T00:00:00.000Z'));
    const seen = new Set<string>();
    // 16 random bytes per id, a 4096-byte pool: 5000 ids refill it about 20 times.
    for (let i = 0; i < 5000; i++) {
      const id = newId('session', clock);
      assert.ok(isId('session', id), id);
      assert.ok(!seen.has(id), `repeated: ${id}`);
      seen.add(id);
    }
    assert.equal(seen.size, 5000);
  });

  test('hold their time in ten characters, most significant first, and sort by it', () => {
    const crockford = '0123456789abcdefghjkmnpqrstvwxyz';
    // Base 32 as Number.prototype.toString writes it (digits 0-9a-v), in the ids' alphabet.
    const timePart = (ms: number) =>
      [...ms.toString(32).padStart(10, '0')].map((digit) => crockford[parseInt(digit, 32)]).join('');
    const times = [0, 1, 31, 32, 1_795_000_000_123, 2 ** 50 - 1];
    const ids = times.map((ms, i) => {
      const clock = new TestClock(new Date(ms));
      // Kinds interleaved: each keeps its own prefix.
      const kind = i % 2 === 0 ? 'request' : 'session';
      const id = newId(kind, clock);
      assert.ok(isId(kind, id), id);
      assert.equal(id.slice(ID_PREFIXES[kind].length, ID_PREFIXES[kind].length + 10), timePart(ms), `${ms}`);
      return id.slice(ID_PREFIXES[kind].length);
    });
    assert.deepEqual([...ids].sort(), ids);
  });

  test('use every character of the alphabet in their random part', () => {
    const chars = new Set<string>();
    for (let i = 0; i < 500; i++) for (const c of newId('request').slice(ID_PREFIXES.request.length + 10)) chars.add(c);
    assert.equal(chars.size, 32);
  });
});

describe('challenge nonces from the pooled random bytes', () => {
  test('are 256 bits, never repeat, and share no bytes with the ids drawn between them', () => {
    const nonces = new Set<string>();
    const bytes: Buffer[] = [];
    // 32 bytes per nonce and 16 per id: 3000 rounds refill the pool about 35 times.
    for (let i = 0; i < 3000; i++) {
      const nonce = newChallengeNonce();
      assert.match(nonce, /^nonce_[A-Za-z0-9_-]{43}$/);
      assert.ok(!nonces.has(nonce), `repeated: ${nonce}`);
      nonces.add(nonce);
      bytes.push(Buffer.from(nonce.slice('nonce_'.length), 'base64url'));
      newId('session');
    }
    // No 8-byte window of one nonce appears in another: a byte of the pool is handed out once.
    const windows = new Set<string>();
    for (const b of bytes)
      for (let i = 0; i + 8 <= b.length; i += 8) {
        const w = b.subarray(i, i + 8).toString('hex');
        assert.ok(!windows.has(w), 'pooled bytes handed out twice');
        windows.add(w);
      }
  });

  test('a copy: changing one value changes nothing drawn after it', () => {
    const a = pooledRandomBytes(32);
    a.fill(0);
    const b = pooledRandomBytes(32);
    assert.notDeepEqual(b, Buffer.alloc(32));
    assert.throws(() => pooledRandomBytes(4097), RangeError);
  });
});

describe('OpenID4VP values derived from a session', () => {
  // node:crypto's own HKDF, the reference the derived values must equal.
  const hkdfBytes = (nonce: string, purpose: string, length: number) =>
    Buffer.from(hkdfSync('sha256', nonce, '', `matricula/openid4vp/${purpose}`, length));
  const hkdf = (nonce: string, purpose: string) => hkdfBytes(nonce, purpose, 32).toString('base64url');

  test('are HKDF-SHA-256 of the challenge, the same on every call, and still after 10,000 others', () => {
    const nonce = 'nonce_kept-while-others-come-and-go';
    const expected = {
      token: hkdf(nonce, 'request-token'),
      nonce: hkdf(nonce, 'nonce'),
      code: hkdf(nonce, 'response-code'),
    };
    const now = () => ({ token: requestToken(nonce), nonce: requestNonce(nonce), code: responseCode(nonce) });
    assert.deepEqual(now(), expected);
    assert.deepEqual(now(), expected);
    for (let i = 0; i < 12_000; i++)
      assert.equal(requestToken(`nonce_other_${i}`), hkdf(`nonce_other_${i}`, 'request-token'));
    assert.deepEqual(now(), expected);
    assert.notEqual(expected.token, expected.nonce);
  });

  // Derived by futoin-hkdf, not node:crypto's hkdfSync: a session created before the change must
  // keep its token, nonce, state, code, cookie and key, so the bytes must be hkdfSync's, exactly.
  test("are node:crypto's hkdfSync bytes for every purpose, the 48-byte key included", () => {
    const nonces = [...Array.from({ length: 200 }, () => newChallengeNonce()), '', 'é-not-ascii-ü', 'x'.repeat(200)];
    for (const nonce of nonces) {
      assert.equal(requestToken(nonce), hkdf(nonce, 'request-token'));
      assert.equal(requestNonce(nonce), hkdf(nonce, 'nonce'));
      assert.equal(requestState(nonce), hkdf(nonce, 'state'));
      assert.equal(responseCode(nonce), hkdf(nonce, 'response-code'));
      assert.equal(sameDeviceBinding(nonce), hkdf(nonce, 'same-device-binding'));
      const wide = BigInt(`0x${hkdfBytes(nonce, 'response-encryption-key', 48).toString('hex')}`);
      const d = ((wide % (p256.CURVE.n - 1n)) + 1n).toString(16).padStart(64, '0');
      assert.equal(encryptionKeyPair(nonce, 'ses_x').privateJwk.d, Buffer.from(d, 'hex').toString('base64url'));
    }
  });
});

describe('openid4vpUri kept per session', () => {
  const session = (id: string, challengeNonce = `nonce_${id}`) =>
    ({ id, challengeNonce, requiredClaims: ['is_active_student'] }) as Session;
  // A configuration object of its own computes afresh: the kept strings are per configuration.
  const fresh = (config: ReturnType<typeof testConfig>, s: Session, sameDevice = false) =>
    openid4vpUri({ ...config }, s, { sameDevice });

  // x509_san_dns: its client identifier is the BASE_URL host; x509_hash's needs the request
  // signer loaded (services/openid4vp/signer.ts), which these pure calls do not do.
  const SIGNED = { OPENID4VP_CLIENT_ID_PREFIX: 'x509_san_dns' };

  test('the same string as computed afresh, per flow, per challenge, and still after 12,000 others', () => {
    const config = testConfig(SIGNED);
    const s = session('sess_kept');
    const expected = fresh(config, s);
    assert.equal(openid4vpUri(config, s), expected);
    assert.equal(openid4vpUri(config, s), expected);
    assert.equal(openid4vpUri(config, s, { sameDevice: true }), fresh(config, s, true));
    assert.notEqual(openid4vpUri(config, s, { sameDevice: true }), expected);
    // Another challenge under the same id (never happens, but the key must not mix them).
    const other = session('sess_kept', 'nonce_other');
    assert.equal(openid4vpUri(config, other), fresh(config, other));
    assert.notEqual(openid4vpUri(config, other), expected);
    // 12,000 others push it out of the kept strings (10,000); one in 400 is checked against a
    // fresh computation, which builds a configuration's state anew (about 3 ms each: all 12,000
    // took 35 s of the suite).
    for (let i = 0; i < 12_000; i++) {
      const x = session(`sess_${i}`);
      const kept = openid4vpUri(config, x);
      if (i % 400 === 0) assert.equal(kept, fresh(config, x), `sess_${i}`);
    }
    assert.equal(openid4vpUri(config, s), expected);
  });

  test('per configuration: another client identifier prefix gives its own URI', () => {
    const s = session('sess_per_config');
    const signed = testConfig(SIGNED);
    const byValue = testConfig({ OPENID4VP_CLIENT_ID_PREFIX: 'redirect_uri' });
    assert.match(openid4vpUri(signed, s), /request_uri=/);
    assert.match(openid4vpUri(byValue, s), /client_id=redirect_uri/);
    assert.equal(openid4vpUri(byValue, s), fresh(byValue, s));
  });

  test("a signed request's URI is its three parameters form-encoded, for ids of any characters", () => {
    // Encoded once per configuration up to the session's id, then the id and token as they are
    // (request.ts, signedRequestUri): the same string as URLSearchParams makes of the whole.
    const configs = [
      testConfig(SIGNED),
      testConfig({ ...SIGNED, BASE_URL: 'http://127.0.0.1:8080/some path/with+plus', OPENID4VP_SCHEME: 'haip' }),
    ];
    const ids = ['ses_01jd8x7k2m3n4p5q6r7s8t9v0w', 'a*b.c-d_e', 'ses with space', 'ses%2F', 'ses/slash', 'sés'];
    for (const config of configs)
      for (const id of ids)
        for (const sameDevice of [false, true]) {
          const s = session(id);
          const flow = { sameDevice };
          const params = new URLSearchParams({
            client_id: clientId(config, s, flow),
            request_uri: requestUri(config, s, flow),
            request_uri_method: 'post',
          });
          assert.equal(
            openid4vpUri({ ...config }, s, flow),
            `${config.openid4vp.scheme}://?${params}`,
            `${id} ${sameDevice}`,
          );
        }
  });
});
