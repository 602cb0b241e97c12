import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519';
import { Base8, addPoint, mulPointEscalar } from '@zk-kit/baby-jubjub';
import { systemClock } from '../../src/domain/clock.ts';
import type { IssuerKeys, TrustedIssuer } from '../../src/domain/credentials.ts';
import { encodeBbsPublicKey, sandboxIssuerKeyPair as bbsKeyPair } from '../../src/proofs/bbs/index.ts';
import { sandboxIssuers, validateIssuerInput } from '../../src/proofs/issuer-definitions.ts';
import {
  babyJubJubKeyProblem,
  bbsKeyProblem,
  issuerKeyProblem,
  sdJwtVcKeyProblem,
} from '../../src/proofs/issuer-keys.ts';
import { sandboxIssuerKeyPair as jwkKeyPair } from '../../src/proofs/sd-jwt-vc/index.ts';
import { databaseTrustRegistry, seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { insertIssuer } from '../../src/store/issuers.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';

/**
 * Finding 4 of the adversarial review (issue 10): the trust registry accepted the published
 * sandbox keys for live universities, and BabyJubJub points off the curve or the identity
 * (`{x: "0", y: "1"}`). Every key is now validated on entry (CLI `issuers add`, through
 * validateIssuerInput) and when the registry is read.
 */

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const point = ([x, y]: [bigint, bigint]) => ({ x: String(x), y: String(y) });

/** Keys of a made-up live university: real keys, none of them a sandbox key. */
const LIVE_KEYS: Required<IssuerKeys> = {
  sdJwtVc: jwkKeyPair('live-university-test', 'ES256').publicJwk,
  bbs: encodeBbsPublicKey(bbsKeyPair('live-university-test').publicKey),
  babyJubJub: point(mulPointEscalar(Base8, 123456789n)),
};
const LIVE_ED25519 = jwkKeyPair('live-university-test', 'EdDSA').publicJwk;
const SANDBOX = sandboxIssuers();

// BabyJubJub: (0, −1) has order 2; added to a subgroup point it gives a point on the curve outside the subgroup.
const BJJ_ORDER_TWO: [bigint, bigint] = [
  0n,
  21888242871839275222246405745257275088548364400416034343698204186575808495616n,
];
// Ed25519: y = −1 encodes the point of order 2.
const ED_ORDER_TWO = ed25519.ExtendedPoint.fromHex('ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f');

describe('issuer keys are real keys (Finding 4)', () => {
  test('Finding 4: BabyJubJub points: the identity, off the curve, outside the subgroup, non-canonical are refused', () => {
    assert.equal(babyJubJubKeyProblem(LIVE_KEYS.babyJubJub), undefined);
    for (const sandbox of SANDBOX) assert.equal(babyJubJubKeyProblem(sandbox.keys.babyJubJub), undefined);
    const bad: Array<[unknown, RegExp]> = [
      [{ x: '0', y: '1' }, /identity/],
      [{ x: '1', y: '2' }, /not on the BabyJubJub curve/],
      [point(BJJ_ORDER_TWO), /not in the prime-order subgroup/],
      [point(addPoint(mulPointEscalar(Base8, 42n), BJJ_ORDER_TWO)), /not in the prime-order subgroup/],
      [{ x: `0${LIVE_KEYS.babyJubJub.x}`, y: LIVE_KEYS.babyJubJub.y }, /canonical/],
      [{ x: 5, y: 1 }, /canonical/],
      [{ ...LIVE_KEYS.babyJubJub, z: '1' }, /only x and y/],
      ['0,1', /decimal strings/],
    ];
    for (const [key, pattern] of bad)
      assert.match(babyJubJubKeyProblem(key) ?? 'accepted', pattern, JSON.stringify(key));
  });

  test('Finding 4: sd-jwt-vc JWKs must be points of P-256 or of the Ed25519 prime-order subgroup', () => {
    assert.equal(sdJwtVcKeyProblem(LIVE_KEYS.sdJwtVc), undefined);
    assert.equal(sdJwtVcKeyProblem({ ...LIVE_ED25519, alg: 'EdDSA', kid: 'k1' }), undefined);
    const p256 = LIVE_KEYS.sdJwtVc as { x: string; y: string };
    const ed = LIVE_ED25519 as { x: string };
    const edPoint = ed25519.ExtendedPoint.fromHex(Buffer.from(ed.x, 'base64url'));
    const okp = (x: Uint8Array | string) => ({ kty: 'OKP', crv: 'Ed25519', x: typeof x === 'string' ? x : b64(x) });
    const bad: Array<[unknown, RegExp]> = [
      [{ ...p256, y: p256.x }, /not a point on P-256/],
      [{ ...p256, x: `${p256.x}A` }, /32 bytes/],
      [{ ...p256, d: 'AAAA' }, /private key/],
      [okp(ed25519.ExtendedPoint.ZERO.toRawBytes()), /small order/],
      [okp(ED_ORDER_TWO.toRawBytes()), /small order/],
      [okp(edPoint.add(ED_ORDER_TWO).toRawBytes()), /prime-order subgroup/],
      [okp(Buffer.alloc(32, 0xff)), /not an Ed25519 point/],
      [okp(`${ed.x.slice(0, -1)}${ed.x.endsWith('A') ? 'B' : 'A'}`), /canonical|Ed25519|subgroup/],
      [{ kty: 'RSA', n: 'AQAB', e: 'AQAB' }, /P-256.*Ed25519/],
      ['not a jwk', /public JWK/],
    ];
    for (const [key, pattern] of bad) assert.match(sdJwtVcKeyProblem(key) ?? 'accepted', pattern, JSON.stringify(key));
  });

  test('Finding 4: bbs keys must be G2 points of the subgroup, not the identity', () => {
    assert.equal(bbsKeyProblem(LIVE_KEYS.bbs), undefined);
    const identity = Buffer.alloc(96);
    identity[0] = 0xc0;
    for (const key of [b64(identity), b64(Buffer.alloc(96, 0x11)), `${LIVE_KEYS.bbs}A`, 42]) {
      assert.match(bbsKeyProblem(key) ?? 'accepted', /BLS12-381 G2/);
    }
  });

  test('Finding 4: a live entry may not use a published sandbox key, in any format', () => {
    for (const sandbox of SANDBOX) {
      for (const field of ['sdJwtVc', 'bbs', 'babyJubJub'] as const) {
        const key = sandbox.keys[field];
        assert.equal(issuerKeyProblem(field, key, 'sandbox'), undefined, `${field} in sandbox`);
        assert.match(issuerKeyProblem(field, key, 'live') ?? 'accepted', /published sandbox key/, `${field} in live`);
      }
    }
    // Spelled differently, still the same key: extra JWK members do not hide a sandbox key.
    const jwk = { ...(SANDBOX[0]!.keys.sdJwtVc as object), alg: 'ES256', kid: 'copied' };
    assert.match(issuerKeyProblem('sdJwtVc', jwk, 'live') ?? 'accepted', /sandbox key/);
    for (const field of ['sdJwtVc', 'bbs', 'babyJubJub'] as const)
      assert.equal(issuerKeyProblem(field, LIVE_KEYS[field], 'live'), undefined);
  });

  test('Finding 4: issuers add (validateIssuerInput) refuses sandbox keys for live and invalid points', () => {
    const entry = { name: 'Live U', domain: 'live-u.example', country: 'ES', environment: 'live' };
    assert.ok(validateIssuerInput({ ...entry, keys: LIVE_KEYS }).ok);
    const copied = validateIssuerInput({ ...entry, keys: SANDBOX[1]!.keys });
    assert.ok(!copied.ok);
    assert.equal(copied.problems.filter((p) => /published sandbox key/.test(p)).length, 3, copied.problems.join('\n'));
    const identity = validateIssuerInput({ ...entry, keys: { babyJubJub: { x: '0', y: '1' } } });
    assert.ok(!identity.ok && /keys\.babyJubJub: .*identity/.test(identity.problems.join('\n')));
    assert.ok(validateIssuerInput({ ...SANDBOX[1], domain: 'another-sandbox.example' }).ok, 'sandbox keys in sandbox');
  });
});

forEachDialect('trust registry as read (Finding 4)', (dialect) => {
  let db: TestStore;
  before(async () => {
    db = await createTestStore(dialect);
  });
  after(() => db.drop());

  test('Finding 4: a bad stored key is skipped with one warning, never trusted; good keys still are', async () => {
    await seedSandboxIssuers(db.store.db, systemClock);
    const at = systemClock.now().toISOString();
    const entry = (id: string, domain: string, keys: IssuerKeys): TrustedIssuer => ({
      id,
      name: domain,
      domain,
      country: 'ES',
      environment: 'live',
      keys,
    });
    // Written before the checks existed (or by hand): straight into the store.
    await insertIssuer(
      db.store.db,
      entry('iss_identity', 'identity.example', { ...LIVE_KEYS, babyJubJub: { x: '0', y: '1' } }),
      at,
    );
    await insertIssuer(db.store.db, entry('iss_copycat', 'copycat.example', SANDBOX[0]!.keys), at);
    const warnings: string[] = [];
    const registry = databaseTrustRegistry(db.store.db, (message) => warnings.push(message));
    const domains = async (environment: 'sandbox' | 'live', format: 'sd-jwt-vc' | 'bbs' | 'groth16') =>
      (await registry.issuers(environment, format)).map((i) => i.domain).sort();

    for (let round = 0; round < 2; round++) {
      assert.deepEqual(await domains('live', 'groth16'), []);
      assert.deepEqual(await domains('live', 'sd-jwt-vc'), ['identity.example']);
      assert.deepEqual(await domains('live', 'bbs'), ['identity.example']);
      assert.deepEqual(await domains('sandbox', 'groth16'), ['pruebas.example', 'sandbox-state.example']);
    }
    assert.equal(warnings.length, 4, warnings.join('\n')); // once per bad key, not per read
    assert.ok(warnings.some((w) => /iss_identity .*keys\.babyJubJub skipped: .*identity/.test(w)));
    for (const field of ['sdJwtVc', 'bbs', 'babyJubJub'])
      assert.ok(warnings.some((w) => new RegExp(`iss_copycat .*keys\\.${field} skipped: .*sandbox key`).test(w)));
  });
});
