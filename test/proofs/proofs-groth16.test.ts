// test: own process: its last test initializes mcl-wasm again, which replaces the process's one
// instance: a Groth16 key that another suite of a shared process prepared before it (verifiers keep
// theirs, src/proofs/worker/tasks.ts one per key file) would refuse to verify after it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { bn254 } from '@noble/curves/bn254';
import mclWasm from 'mcl-wasm';
import {
  BN254_P,
  BN254_R,
  GROTH16_ARTIFACTS,
  createGroth16Verifier,
  decodeProof,
  decodeProofMcl,
  domainHash,
  groth16Builder,
  issueSandboxCredential,
  loadSandboxVerificationKey,
  nonceField,
  parseFieldElement,
  prepareVerificationKeyMcl,
  proveCredential,
  publicSignals,
  OUTPUT_ORDER,
  PUBLIC_INPUT_ORDER,
  releaseSnarkjsCurve,
  sandboxIssuerPrivateKey,
  sandboxIssuerPublicKeys,
  verifyGroth16,
  verifyGroth16Mcl,
  withSnarkjsCurve,
  type Groth16PresentationJson,
  type MclVerificationKey,
} from '../../src/proofs/groth16/index.ts';
import { CURVE_KEPT_MS, curveRelease } from '../../src/proofs/groth16/builder.ts';
import { sandboxSigner } from '../../src/proofs/groth16/sandbox-credential.ts';
import { crossCheckedGroth16Verifier } from '../support/groth16-cross-check.ts';
import { SANDBOX_UNIVERSITIES, sandboxUniversity } from '../../src/proofs/sandbox-universities.ts';
import type {
  PresentationCheck,
  PresentationContext,
  PresentationRequest,
  SandboxStudent,
} from '../../src/proofs/types.ts';
import type { TrustRegistry, TrustedIssuer } from '../../src/domain/credentials.ts';

const STATE = 'sandbox-state.example';
const PRUEBAS = 'pruebas.example';
const AUDIENCE = 'https://matricula.test';
const NONCE = 'nonce_01jdtest0000000000000000aa';
const OTHER_NONCE = 'nonce_01jdtest0000000000000000bb';
const NOW = new Date('2026-11-21T10:00:00.000Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);

const alice: SandboxStudent = {
  university: STATE,
  active: true,
  academicLevel: 'postgraduate',
  validUntil: '2027-06-30T00:00:00.000Z',
  holderSeed: 'holder-alice',
};

function request(
  disclose: PresentationRequest['disclose'],
  overrides: Partial<PresentationRequest> = {},
): PresentationRequest {
  return { nonce: NONCE, audience: AUDIENCE, now: NOW, disclose, ...overrides };
}

function context(overrides: Partial<PresentationContext> = {}): PresentationContext {
  return {
    nonce: NONCE,
    audience: AUDIENCE,
    now: NOW,
    environment: 'sandbox',
    requiredClaims: ['is_active_student'],
    ...overrides,
  };
}

function issuerEntry(domain: string, environment: 'sandbox' | 'live', keyOf = domain): TrustedIssuer {
  return {
    id: `iss_${domain}_${environment}`,
    name: domain,
    domain,
    country: 'US',
    environment,
    keys: { babyJubJub: sandboxIssuerPublicKeys()[keyOf] },
  };
}

/** An in-memory trust registry honouring environment and format, like the real one. */
function registryOf(entries: TrustedIssuer[]): TrustRegistry {
  return {
    async issuers(environment, format) {
      return entries.filter(
        (e) => e.environment === environment && (format !== 'groth16' || e.keys.babyJubJub !== undefined),
      );
    },
  };
}

function assertRejected(check: PresentationCheck, reason: string): void {
  assert.equal(check.ok, false, 'expected a rejection');
  if (!check.ok) {
    assert.equal(check.reason, reason, check.message);
    assert.ok(check.message.length > 0);
  }
}

function assertVerified(check: PresentationCheck): asserts check is Extract<PresentationCheck, { ok: true }> {
  assert.ok(check.ok, check.ok ? '' : `${check.reason}: ${check.message}`);
}

const registry = registryOf([issuerEntry(STATE, 'sandbox'), issuerEntry(PRUEBAS, 'sandbox')]);
// Every presentation below is checked on mcl-wasm and @noble/curves alike, and by snarkjs when the pairing decides.
let verifier: ReturnType<typeof crossCheckedGroth16Verifier>;
// Proofs take seconds: each is made once here and reused by the tests below.
let valid: Groth16PresentationJson;
let second: Groth16PresentationJson;
let withLevel: Groth16PresentationJson;
let inactive: Groth16PresentationJson;
let expired: Groth16PresentationJson;
/** A credential that expired at NOW − 30 s, proven with a `now` 90 s behind NOW (so unexpired = 1). */
let provenBeforeExpiry: Groth16PresentationJson;

before(async () => {
  verifier = crossCheckedGroth16Verifier();
  valid = (await groth16Builder.present(alice, request(['is_active_student']))) as Groth16PresentationJson;
  second = (await groth16Builder.present(alice, request(['is_active_student']))) as Groth16PresentationJson;
  withLevel = (await groth16Builder.present(
    alice,
    request(['is_active_student', 'academic_level']),
  )) as Groth16PresentationJson;
  inactive = (await groth16Builder.present(
    { ...alice, active: false },
    request(['is_active_student']),
  )) as Groth16PresentationJson;
  expired = (await groth16Builder.present(
    { ...alice, validUntil: '2026-11-21T09:59:59.000Z' },
    request([]),
  )) as Groth16PresentationJson;
  provenBeforeExpiry = (await groth16Builder.present(
    { ...alice, validUntil: '2026-11-21T09:59:30.000Z' },
    request(['is_active_student'], { now: new Date(NOW.getTime() - 90_000) }),
  )) as Groth16PresentationJson;
});

after(releaseSnarkjsCurve);

const clone = <T>(value: T): T => structuredClone(value);

type G2Point = ReturnType<typeof bn254.G2.ProjectivePoint.fromAffine>;
const { Fp, Fp2 } = bn254.fields;

function g2FromJson(json: string[][]): G2Point {
  const [[x0, x1], [y0, y1]] = json.map((c) => c.map(BigInt));
  return bn254.G2.ProjectivePoint.fromAffine({ x: Fp2.fromBigTuple([x0, x1]), y: Fp2.fromBigTuple([y0, y1]) });
}

/** snarkjs JSON of a G2 point (no validity check: tests use it to build invalid points too). */
function g2Json(point: G2Point | { x: { c0: bigint; c1: bigint }; y: { c0: bigint; c1: bigint } }): string[][] {
  const { x, y } = 'toAffine' in point ? point.toAffine() : point;
  return [
    [x.c0, x.c1],
    [y.c0, y.c1],
    [1n, 0n],
  ].map((c) => c.map(String));
}

/** A G2 point in snarkjs JSON with c0 and c1 of both coordinates swapped: mcl's Fp2 order, if it were the other one. */
function swapHalves(json: string[][]): string[][] {
  return [[json[0][1], json[0][0]], [json[1][1], json[1][0]], json[2]];
}

/** A point on the twist y² = x³ + 3/(u + 9) that is not in the prime-order subgroup. */
function twistPointOutsideSubgroup(): { x: { c0: bigint; c1: bigint }; y: { c0: bigint; c1: bigint } } {
  const b = Fp2.div(Fp2.fromBigTuple([3n, 0n]), Fp2.fromBigTuple([9n, 1n]));
  for (let k = 1n; ; k++) {
    const x = Fp2.fromBigTuple([k, 0n]);
    try {
      const point = { x, y: Fp2.sqrt(Fp2.add(Fp2.mul(Fp2.sqr(x), x), b)) };
      assert.ok(
        !bn254.G2.ProjectivePoint.fromAffine(point).isTorsionFree(),
        'the test point must be outside the subgroup',
      );
      return point;
    } catch (error) {
      if (error instanceof assert.AssertionError) throw error;
      // x^3 + b is not a square: try the next x.
    }
  }
}

/** The public signals the service assembles for a presentation made for context() by alice. */
function signalsOf(presentation: Groth16PresentationJson): bigint[] {
  const keys = sandboxIssuerPublicKeys()[STATE];
  const o = presentation.outputs;
  return publicSignals(
    { active: BigInt(o.active), unexpired: BigInt(o.unexpired), level: BigInt(o.level) },
    {
      issuerAx: BigInt(keys.x),
      issuerAy: BigInt(keys.y),
      domainHash: domainHash(STATE),
      nonceField: nonceField(NONCE, AUDIENCE),
      now: BigInt(NOW_S),
      discloseLevel: 0n,
    },
  );
}

describe('groth16 field mappings', () => {
  const sha256Mod = (text: string) => BigInt(`0x${createHash('sha256').update(text, 'utf8').digest('hex')}`) % BN254_R;

  test('Finding 2: nonceField binds nonce and audience unambiguously: SHA-256 of their length-prefixed encoding mod r', () => {
    const lp = (...fields: string[]) =>
      Buffer.concat(fields.flatMap((f) => [Buffer.from([0, 0, 0, Buffer.byteLength(f)]), Buffer.from(f, 'utf8')]));
    const digestMod = (bytes: Buffer) => BigInt(`0x${createHash('sha256').update(bytes).digest('hex')}`) % BN254_R;
    assert.equal(nonceField(NONCE, AUDIENCE), digestMod(lp('matricula-groth16-nonce-v2', AUDIENCE, NONCE)));
    assert.equal(
      nonceField('nonce_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'http://localhost:8080'),
      9758237943835828488931370843624874683576406599873212068930529402907861182507n,
      'the example in docs/zk-groth16.md',
    );
    // With the old `<audience>|<nonce>` text these two were the same field element.
    assert.notEqual(nonceField(`x|${NONCE}`, AUDIENCE), nonceField(NONCE, `${AUDIENCE}|x`));
    assert.notEqual(nonceField(NONCE, AUDIENCE), nonceField(OTHER_NONCE, AUDIENCE));
    assert.notEqual(nonceField(NONCE, AUDIENCE), nonceField(NONCE, 'https://other.test'));
  });

  test('domain hashes are those of the table in docs/zk-groth16.md', () => {
    assert.equal(domainHash(STATE), 12793813598071639734557950416862432217200335027246770034788603181762725383429n);
    assert.equal(domainHash(PRUEBAS), 5350157167112540805744545138206525411877901598355828275052021216437230023063n);
    assert.equal(domainHash(PRUEBAS), sha256Mod(`matricula-domain-v1|${PRUEBAS}`));
  });

  test("BN254_P, the bound of proof coordinates, is the base field order of @noble/curves' bn254", () => {
    assert.equal(BN254_P, Fp.ORDER);
    assert.equal(BN254_R, bn254.fields.Fr.ORDER);
  });

  test('parseFieldElement accepts only canonical decimals below r', () => {
    assert.equal(parseFieldElement('0'), 0n);
    assert.equal(parseFieldElement((BN254_R - 1n).toString()), BN254_R - 1n);
    for (const bad of [BN254_R.toString(), '01', '-1', '1e3', ' 1', '0x10', '', 12, null]) {
      assert.equal(parseFieldElement(bad), undefined, String(bad));
    }
  });
});

describe('groth16 sandbox issuer keys', () => {
  test('the committed public keys are circomlibjs prv2pub of SHA-256(seed) for every sandbox university', async () => {
    const { buildEddsa } = await import('circomlibjs');
    const eddsa = await buildEddsa();
    const keys = sandboxIssuerPublicKeys();
    assert.deepEqual(Object.keys(keys).sort(), SANDBOX_UNIVERSITIES.map((u) => u.domain).sort());
    for (const university of SANDBOX_UNIVERSITIES) {
      const [x, y] = eddsa.prv2pub(sandboxIssuerPrivateKey(university));
      assert.deepEqual(keys[university.domain], {
        x: eddsa.F.toObject(x).toString(),
        y: eddsa.F.toObject(y).toString(),
      });
    }
    assert.notDeepEqual(keys[STATE], keys[PRUEBAS]);
  });

  test('issuances share one signer: circomlibjs builds its EdDSA and Poseidon once per thread', async () => {
    const signer = await sandboxSigner();
    assert.equal(await sandboxSigner(), signer);
    await issueSandboxCredential(alice);
    assert.equal(await sandboxSigner(), signer);
  });

  test('a sandbox credential carries the committed key of its university', async () => {
    const credential = await issueSandboxCredential(alice);
    assert.deepEqual(
      { x: credential.issuerAx.toString(), y: credential.issuerAy.toString() },
      sandboxIssuerPublicKeys()[sandboxUniversity(STATE)!.domain],
    );
  });
});

describe('groth16 presentations: happy', () => {
  test('verifies: active, unexpired, university from the registry, level and date hidden', async () => {
    const check = await verifier.verify(valid, context(), registry);
    assertVerified(check);
    assert.equal(check.presentation.format, 'groth16');
    assert.equal(check.presentation.issuer.id, `iss_${STATE}_sandbox`);
    assert.deepEqual(check.presentation.claims, { is_active_student: true, university_domain: STATE });
    assert.deepEqual(check.presentation.predicates, { validUntilAfterNow: true });
    assert.equal(valid.outputs.level, '0');
    assert.ok(
      !JSON.stringify(valid).includes(String(Date.parse(alice.validUntil) / 1000)),
      'valid_until never travels',
    );
  });

  test('discloses the academic level when the session requires it', async () => {
    assert.equal(withLevel.outputs.level, '2');
    const check = await verifier.verify(
      withLevel,
      context({ requiredClaims: ['is_active_student', 'academic_level'] }),
      registry,
    );
    assertVerified(check);
    assert.equal(check.presentation.claims.academic_level, 'postgraduate');
  });

  test('an inactive student proves validly, with active = 0', async () => {
    assert.equal(inactive.outputs.active, '0');
    const check = await verifier.verify(inactive, context(), registry);
    assertVerified(check);
    assert.equal(check.presentation.claims.is_active_student, false);
    assert.deepEqual(check.presentation.predicates, { validUntilAfterNow: true });
  });

  test('an expired credential proves validly, with unexpired = 0 (valid_until one second before now)', async () => {
    assert.equal(expired.outputs.unexpired, '0');
    const check = await verifier.verify(expired, context(), registry);
    assertVerified(check);
    assert.equal(check.presentation.claims.is_active_student, true);
    assert.deepEqual(check.presentation.predicates, { validUntilAfterNow: false });
  });

  test('two proofs of one credential for one session share no proof point', async () => {
    assertVerified(await verifier.verify(second, context(), registry));
    assert.notDeepEqual(second.proof.pi_a, valid.proof.pi_a);
    assert.notDeepEqual(second.proof.pi_b, valid.proof.pi_b);
    assert.notDeepEqual(second.proof.pi_c, valid.proof.pi_c);
  });

  test('Finding 6: presentations of one holder share no value that another student of the issuer lacks', async () => {
    // Everything a verifier sees of a presentation: its proof points and its public signals. For
    // a pair of alice's presentations, any value both carry must also be in bob's presentation
    // for the same session (bob: another holder of the same issuer), or it would link alice's two.
    type Proven = { proof: { pi_a: string[]; pi_b: string[][]; pi_c: string[] }; publicSignals: readonly string[] };
    const seen = ({ proof, publicSignals: signals }: Proven) =>
      new Set([...proof.pi_a, ...proof.pi_b.flat(), ...proof.pi_c, ...signals]);
    const linking = (a: Set<string>, b: Set<string>, other: Set<string>) =>
      [...a].filter((v) => b.has(v) && !other.has(v));
    const aliceCredential = await issueSandboxCredential(alice);
    const bobCredential = await issueSandboxCredential({ ...alice, holderSeed: 'holder-bob' });
    const sessionOne = request(['is_active_student']);
    const sessionTwo = request(['is_active_student'], { nonce: OTHER_NONCE, now: new Date(NOW.getTime() + 3_600_000) });

    // Two sessions, one credential: they share only the issuer's key and domain hash and the bits.
    const aliceOne = await proveCredential(aliceCredential, sessionOne);
    const aliceTwo = await proveCredential(aliceCredential, sessionTwo);
    const bobTwo = await proveCredential(bobCredential, sessionTwo);
    assert.deepEqual(linking(seen(aliceOne), seen(aliceTwo), seen(bobTwo)), []);
    const issuerValues = [aliceCredential.issuerAx, aliceCredential.issuerAy, domainHash(STATE)].map(String);
    const shared = [...seen(aliceOne)].filter((v) => seen(aliceTwo).has(v));
    assert.deepEqual(
      shared.filter((v) => !issuerValues.includes(v) && !['0', '1'].includes(v)),
      [],
    );

    // A reused nonce (a caller of /verify picks it), two credentials of one holder: the old tag
    // output, Poseidon(studentSecret, nonceField), was the same in both and linked them.
    const secondCredential = await issueSandboxCredential({ ...alice, validUntil: '2028-01-31T00:00:00.000Z' });
    const aliceAgain = await proveCredential(secondCredential, sessionOne);
    const bobOne = await proveCredential(bobCredential, sessionOne);
    assert.deepEqual(linking(seen(aliceOne), seen(aliceAgain), seen(bobOne)), []);

    // No holder-specific output is left: the circuit outputs active, unexpired and level only.
    assert.deepEqual(OUTPUT_ORDER, ['active', 'unexpired', 'level']);
    assert.equal(aliceOne.publicSignals.length, OUTPUT_ORDER.length + PUBLIC_INPUT_ORDER.length);
  });

  test('snarkjs public signals are the ones the service assembles', async () => {
    const credential = await issueSandboxCredential(alice);
    const req = request(['is_active_student'], { nonce: OTHER_NONCE });
    const { proof, publicSignals: snarkjsSignals } = await proveCredential(credential, req);
    const [active, unexpired, level] = snarkjsSignals.slice(0, 3).map(BigInt);
    const ours = publicSignals(
      { active, unexpired, level },
      {
        issuerAx: credential.issuerAx,
        issuerAy: credential.issuerAy,
        domainHash: domainHash(STATE),
        nonceField: nonceField(OTHER_NONCE, AUDIENCE),
        now: BigInt(NOW_S),
        discloseLevel: 0n,
      },
    );
    assert.deepEqual(snarkjsSignals, ours.map(String));
    const presentation = {
      issuer: STATE,
      now: NOW_S,
      proof,
      outputs: { active: '1', unexpired: '1', level: '0' },
    };
    assertVerified(await verifier.verify(presentation, context({ nonce: OTHER_NONCE }), registry));
  });

  test('Finding 5: accepts a `now` up to 60 s behind and 30 s ahead of the service clock', async () => {
    assertVerified(await verifier.verify(valid, context({ now: new Date(NOW.getTime() + 60_000) }), registry));
    assertVerified(await verifier.verify(valid, context({ now: new Date(NOW.getTime() - 30_000) }), registry));
  });
});

describe('groth16 presentations: rejected', () => {
  test('for another nonce', async () => {
    assertRejected(await verifier.verify(valid, context({ nonce: OTHER_NONCE }), registry), 'invalid_proof');
  });

  test('for another audience', async () => {
    assertRejected(
      await verifier.verify(valid, context({ audience: 'https://other.test' }), registry),
      'invalid_proof',
    );
  });

  test('when the registry holds another key for the issuer', async () => {
    const rekeyed = registryOf([issuerEntry(STATE, 'sandbox', PRUEBAS)]);
    assertRejected(await verifier.verify(valid, context(), rekeyed), 'invalid_proof');
  });

  test('when presented as another trusted issuer', async () => {
    assertRejected(await verifier.verify({ ...valid, issuer: PRUEBAS }, context(), registry), 'invalid_proof');
  });

  test('when another domain holds the right key (the domain hash is signed)', async () => {
    const impostor = registryOf([issuerEntry(PRUEBAS, 'sandbox', STATE)]);
    assertRejected(await verifier.verify({ ...valid, issuer: PRUEBAS }, context(), impostor), 'invalid_proof');
  });

  test('from an issuer the registry does not trust', async () => {
    assertRejected(
      await verifier.verify({ ...valid, issuer: 'unknown.example' }, context(), registry),
      'untrusted_issuer',
    );
    assertRejected(await verifier.verify(valid, context(), registryOf([])), 'untrusted_issuer');
    const keyless = registryOf([{ ...issuerEntry(STATE, 'sandbox'), keys: { babyJubJub: { x: 'nope', y: '1' } } }]);
    assertRejected(await verifier.verify(valid, context(), keyless), 'untrusted_issuer');
  });

  test('Finding 5: when `now` is more than 60 s behind or 30 s ahead of the service clock', async () => {
    const late = new Date(NOW.getTime() + 61_000);
    const early = new Date(NOW.getTime() - 31_000);
    assertRejected(await verifier.verify(valid, context({ now: late }), registry), 'stale_presentation');
    assertRejected(await verifier.verify(valid, context({ now: early }), registry), 'stale_presentation');
  });

  test('Finding 5: an expired credential never passes more than 60 s after valid_until', async () => {
    // valid_until = NOW − 30 s; the wallet proved at NOW − 90 s, when it was still valid.
    assert.equal(provenBeforeExpiry.outputs.unexpired, '1');
    const at = (offsetMs: number) => context({ now: new Date(NOW.getTime() + offsetMs) });
    assertVerified(await verifier.verify(provenBeforeExpiry, at(-30_000), registry)); // 60 s behind: still in the window
    assertRejected(await verifier.verify(provenBeforeExpiry, at(-29_000), registry), 'stale_presentation');
    assertRejected(await verifier.verify(provenBeforeExpiry, at(0), registry), 'stale_presentation');
  });

  test('when `now` is changed, even within the window', async () => {
    assertRejected(await verifier.verify({ ...valid, now: NOW_S + 1 }, context(), registry), 'invalid_proof');
  });

  test('when an output is changed (tamper flips active; unexpired; a level)', async () => {
    assertRejected(await verifier.verify(groth16Builder.tamper(valid), context(), registry), 'invalid_proof');
    assertRejected(await verifier.verify(groth16Builder.tamper(inactive), context(), registry), 'invalid_proof');
    const unexpiredFlipped = clone(expired);
    unexpiredFlipped.outputs.unexpired = '1';
    assertRejected(await verifier.verify(unexpiredFlipped, context(), registry), 'invalid_proof');
    const otherLevel = clone(withLevel);
    otherLevel.outputs.level = '3';
    const levelContext = context({ requiredClaims: ['academic_level'] });
    assertRejected(await verifier.verify(otherLevel, levelContext, registry), 'invalid_proof');
  });

  test('a hidden level proves nothing of the level; a level shown but not requested is unrequested_disclosure', async () => {
    // Hidden: the proof verifies (discloseLevel = 0) and no level is claimed; qualification then
    // finds academic_level not disclosed.
    const hidden = await verifier.verify(valid, context({ requiredClaims: ['academic_level'] }), registry);
    assertVerified(hidden);
    assert.equal(hidden.presentation.claims.academic_level, undefined);
    assertRejected(await verifier.verify(withLevel, context(), registry), 'unrequested_disclosure');
    // Not asked for anything in particular (direct verify without requiredClaims): judged as disclosed.
    const asDisclosed = await verifier.verify(withLevel, context({ requiredClaims: undefined }), registry);
    assertVerified(asDisclosed);
    assert.equal(asDisclosed.presentation.claims.academic_level, 'postgraduate');
    // A level claimed by a proof made with it hidden: the equation refuses it.
    const claimed = clone(valid);
    claimed.outputs.level = '2';
    assertRejected(await verifier.verify(claimed, context({ requiredClaims: undefined }), registry), 'invalid_proof');
  });

  test('when proof points are swapped between two valid proofs', async () => {
    const mixed = clone(valid);
    mixed.proof.pi_c = second.proof.pi_c;
    assertRejected(await verifier.verify(mixed, context(), registry), 'invalid_proof');
  });

  test('for a live session while no live verification key is installed', async () => {
    const live = registryOf([issuerEntry(STATE, 'live')]);
    assertRejected(await verifier.verify(valid, context({ environment: 'live' }), live), 'unsupported_format');
  });

  test('for a live session: a sandbox proof fails against the live key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-vk-'));
    const vk = JSON.parse(readFileSync(GROTH16_ARTIFACTS.verificationKey, 'utf8'));
    // Another valid key: delta doubled, as if another ceremony had contributed.
    vk.vk_delta_2 = g2Json(g2FromJson(vk.vk_delta_2).double());
    writeFileSync(join(dir, 'live.json'), JSON.stringify(vk));
    const withLive = crossCheckedGroth16Verifier({ liveVerificationKeyPath: join(dir, 'live.json') });
    const live = registryOf([issuerEntry(STATE, 'live')]);
    assertRejected(await withLive.verify(valid, context({ environment: 'live' }), live), 'invalid_proof');
    assertVerified(await withLive.verify(valid, context(), registry));
  });
});

describe('groth16 presentations: malformed', () => {
  const cases: Array<[string, (p: Record<string, any>) => unknown]> = [
    ['not an object', () => 'proof'],
    ['an array', () => [valid]],
    ['no issuer', ({ issuer, ...rest }) => rest],
    ['now as a string', (p) => ({ ...p, now: String(p.now) })],
    ['fractional now', (p) => ({ ...p, now: p.now + 0.5 })],
    ['no outputs', ({ outputs, ...rest }) => rest],
    ['a numeric output', (p) => ({ ...p, outputs: { ...p.outputs, active: 1 } })],
    ['an output >= r (an alias of level 0)', (p) => ({ ...p, outputs: { ...p.outputs, level: BN254_R.toString() } })],
    ['active = 2', (p) => ({ ...p, outputs: { ...p.outputs, active: '2' } })],
    ['unexpired = 2', (p) => ({ ...p, outputs: { ...p.outputs, unexpired: '2' } })],
    ['no proof', ({ proof, ...rest }) => rest],
    ['pi_a with two coordinates', (p) => ({ ...p, proof: { ...p.proof, pi_a: p.proof.pi_a.slice(0, 2) } })],
    [
      'pi_a not normalized (z != 1)',
      (p) => ({ ...p, proof: { ...p.proof, pi_a: [p.proof.pi_a[0], p.proof.pi_a[1], '2'] } }),
    ],
    [
      'a coordinate >= p',
      (p) => ({
        ...p,
        proof: { ...p.proof, pi_c: [(BigInt(p.proof.pi_c[0]) + Fp.ORDER).toString(), p.proof.pi_c[1], '1'] },
      }),
    ],
    ['pi_b as G1', (p) => ({ ...p, proof: { ...p.proof, pi_b: p.proof.pi_a } })],
  ];
  for (const [name, mutate] of cases) {
    test(name, async () => {
      assertRejected(await verifier.verify(mutate(clone(valid)), context(), registry), 'malformed_presentation');
    });
  }

  test('an unknown level code when the level is requested', async () => {
    const p = clone(withLevel);
    p.outputs.level = '99';
    assertRejected(
      await verifier.verify(p, context({ requiredClaims: ['academic_level'] }), registry),
      'malformed_presentation',
    );
  });
});

describe('groth16 proof points: invalid group elements', () => {
  test('a G1 point off the curve', async () => {
    const p = clone(valid);
    p.proof.pi_a = [p.proof.pi_a[0], (BigInt(p.proof.pi_a[1]) + 1n).toString(), '1'];
    assertRejected(await verifier.verify(p, context(), registry), 'invalid_proof');
  });

  test('the identity as A', async () => {
    const p = clone(valid);
    p.proof.pi_a = ['0', '0', '1'];
    assertRejected(await verifier.verify(p, context(), registry), 'invalid_proof');
  });

  test('a G2 point on the twist but outside the prime-order subgroup', async () => {
    const p = clone(valid);
    p.proof.pi_b = g2Json(twistPointOutsideSubgroup());
    assertRejected(await verifier.verify(p, context(), registry), 'invalid_proof');
  });
});

describe('groth16 pairing back ends: mcl-wasm, @noble/curves and snarkjs agree', () => {
  let vkJson: unknown;
  let mclKey: MclVerificationKey;
  let signals: bigint[];
  before(async () => {
    vkJson = JSON.parse(readFileSync(GROTH16_ARTIFACTS.verificationKey, 'utf8'));
    mclKey = await prepareVerificationKeyMcl(loadSandboxVerificationKey());
    signals = signalsOf(valid);
  });

  type Proof = Groth16PresentationJson['proof'];
  const negateG2 = (b: string[][]) => g2Json(g2FromJson(b).negate());
  const plusOne = (v: string) => (BigInt(v) + 1n).toString();
  /** What each variant must come to: the equation's outcome, or the decoder's refusal. */
  type Expected = 'verified' | 'refused' | 'invalid_point' | 'malformed';
  const variants: Array<[string, Expected, (s: bigint[], p: Proof) => [bigint[], Proof]]> = [
    ['the valid proof', 'verified', (s, p) => [s, p]],
    ['active flipped', 'refused', (s, p) => [[1n - s[0], ...s.slice(1)], p]],
    ['unexpired flipped', 'refused', (s, p) => [[s[0], 1n - s[1], ...s.slice(2)], p]],
    ['the issuer key changed', 'refused', (s, p) => [s.map((v, i) => (i === 3 ? v + 1n : v)), p]],
    ['now changed', 'refused', (s, p) => [s.map((v, i) => (i === 7 ? v + 1n : v)), p]],
    ['the nonce field changed', 'refused', (s, p) => [s.map((v, i) => (i === 6 ? v + 1n : v)), p]],
    ['discloseLevel set', 'refused', (s, p) => [s.map((v, i) => (i === 8 ? 1n : v)), p]],
    ['every signal zero (vk_x = IC[0])', 'refused', (s, p) => [s.map(() => 0n), p]],
    ['a signal >= r', 'refused', (s, p) => [[s[0] + BN254_R, ...s.slice(1)], p]],
    ['one signal too few', 'refused', (s, p) => [s.slice(1), p]],
    ['A replaced by C', 'refused', (s, p) => [s, { ...p, pi_a: p.pi_c }]],
    ['A from another proof', 'refused', (s, p) => [s, { ...p, pi_a: second.proof.pi_a }]],
    [
      'A negated',
      'refused',
      (s, p) => [s, { ...p, pi_a: [p.pi_a[0], (Fp.ORDER - BigInt(p.pi_a[1])).toString(), '1'] }],
    ],
    ['B from another proof', 'refused', (s, p) => [s, { ...p, pi_b: second.proof.pi_b }]],
    ['B negated', 'refused', (s, p) => [s, { ...p, pi_b: negateG2(p.pi_b) }]],
    ['B with its Fp2 halves swapped', 'invalid_point', (s, p) => [s, { ...p, pi_b: swapHalves(p.pi_b) }]],
    ['C from another proof', 'refused', (s, p) => [s, { ...p, pi_c: second.proof.pi_c }]],
    ['C replaced by A', 'refused', (s, p) => [s, { ...p, pi_c: p.pi_a }]],
    ['A off the curve', 'invalid_point', (s, p) => [s, { ...p, pi_a: [p.pi_a[0], plusOne(p.pi_a[1]), '1'] }]],
    [
      'B off the twist',
      'invalid_point',
      (s, p) => [s, { ...p, pi_b: [p.pi_b[0], [plusOne(p.pi_b[1][0]), p.pi_b[1][1]], ['1', '0']] }],
    ],
    ['C off the curve', 'invalid_point', (s, p) => [s, { ...p, pi_c: [plusOne(p.pi_c[0]), p.pi_c[1], '1'] }]],
    [
      'B outside the prime-order subgroup',
      'invalid_point',
      (s, p) => [s, { ...p, pi_b: g2Json(twistPointOutsideSubgroup()) }],
    ],
    ['A as the identity (0, 0)', 'invalid_point', (s, p) => [s, { ...p, pi_a: ['0', '0', '1'] }]],
    [
      'B as the identity (0, 0)',
      'invalid_point',
      (s, p) => [
        s,
        {
          ...p,
          pi_b: [
            ['0', '0'],
            ['0', '0'],
            ['1', '0'],
          ],
        },
      ],
    ],
    ['C as the identity (0, 0)', 'invalid_point', (s, p) => [s, { ...p, pi_c: ['0', '0', '1'] }]],
    ['A as the projective identity (0, 1, 0)', 'malformed', (s, p) => [s, { ...p, pi_a: ['0', '1', '0'] }]],
    [
      'a coordinate of B >= p',
      'malformed',
      (s, p) => [
        s,
        { ...p, pi_b: [[(BigInt(p.pi_b[0][0]) + Fp.ORDER).toString(), p.pi_b[0][1]], p.pi_b[1], ['1', '0']] },
      ],
    ],
  ];

  for (const [name, expected, variant] of variants) {
    test(`${name}: ${expected}, on every back end`, async () => {
      const [s, p] = variant(signals, valid.proof);
      const nobleProof = decodeProof(p);
      const mclProof = decodeProofMcl(p);
      const noble =
        typeof nobleProof === 'string' ? nobleProof : verifyGroth16(loadSandboxVerificationKey(), nobleProof, s);
      const mcl = typeof mclProof === 'string' ? mclProof : verifyGroth16Mcl(mclKey, mclProof, s);
      const outcome = (r: boolean | string) => (r === true ? 'verified' : r === false ? 'refused' : r);
      assert.equal(outcome(noble), expected, '@noble/curves');
      assert.equal(outcome(mcl), expected, 'mcl-wasm');
      if (
        expected === 'verified' ||
        (expected === 'refused' && s.length === signals.length && s.every((v) => v < BN254_R))
      ) {
        const snarkjs = await import('snarkjs');
        // The curve is kept between these tests (withSnarkjsCurve); its window or the file's `after` ends it.
        const theirs = await withSnarkjsCurve(() =>
          snarkjs.groth16.verify(vkJson, s.map(String), { ...p, protocol: 'groth16', curve: 'bn128' }),
        );
        assert.equal(theirs, expected === 'verified', 'snarkjs');
      }
    });
  }
});

describe('groth16 service side carries no GPL code', () => {
  test('the verifier runs with snarkjs, circomlib(js) and ffjavascript made unloadable', async () => {
    const refuse = `export async function resolve(specifier, context, next) {
      if (/^(snarkjs|circomlibjs|circomlib|ffjavascript)(\\/|$)/.test(specifier)) throw new Error('GPL module loaded: ' + specifier);
      return next(specifier, context);
    }`;
    const script = `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(refuse)}));
      const { groth16Verifier } = await import(${JSON.stringify(new URL('../../src/proofs/groth16/index.ts', import.meta.url).href)});
      const input = JSON.parse(process.argv[1]);
      const registry = { issuers: async () => input.issuers };
      const check = await groth16Verifier.verify(input.presentation, { ...input.context, now: new Date(input.context.now) }, registry);
      // The hook must really refuse them, or this test could not fail.
      const blocked = await import('snarkjs').then(() => false, () => true);
      process.stdout.write(JSON.stringify({ ok: check.ok, blocked }));
    `;
    const input = JSON.stringify({
      presentation: valid,
      context: { ...context(), now: NOW.toISOString() },
      issuers: [issuerEntry(STATE, 'sandbox')],
    });
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, input],
      {
        cwd: new URL('../..', import.meta.url).pathname,
      },
    );
    assert.deepEqual(JSON.parse(stdout), { ok: true, blocked: true });
  });
});

describe('groth16 verification keys', () => {
  test('the committed sandbox key is refused as the live key', () => {
    assert.throws(
      () => createGroth16Verifier({ liveVerificationKeyPath: GROTH16_ARTIFACTS.verificationKey }),
      /sandbox key/,
    );
  });

  test('a key for another circuit shape is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-vk-'));
    const vk = JSON.parse(readFileSync(GROTH16_ARTIFACTS.verificationKey, 'utf8'));
    vk.nPublic -= 1;
    vk.IC.pop();
    writeFileSync(join(dir, 'short.json'), JSON.stringify(vk));
    assert.throws(() => createGroth16Verifier({ liveVerificationKeyPath: join(dir, 'short.json') }), /public signals/);
    assert.throws(() => createGroth16Verifier({ liveVerificationKeyPath: join(dir, 'missing.json') }), /cannot read/);
  });
});

describe('groth16 prover: snarkjs curve between proofs', () => {
  test('the curve outlives a proof; a use within the window postpones its release; the window ending releases it', async () => {
    const curve = () => (globalThis as { curve_bn128?: unknown }).curve_bn128 ?? null;
    const scheduled: Array<{ release: () => Promise<void>; ms: number; cancelled: boolean }> = [];
    const schedule = curveRelease.schedule;
    curveRelease.schedule = (release, ms) => {
      const entry = { release, ms, cancelled: false };
      scheduled.push(entry);
      return { cancel: () => void (entry.cancelled = true) };
    };
    try {
      await releaseSnarkjsCurve();
      assert.equal(curve(), null);
      await groth16Builder.present(alice, request(['is_active_student']));
      const kept = curve();
      assert.ok(kept, 'the curve outlives the proof');
      assert.deepEqual(
        scheduled.map(({ ms, cancelled }) => ({ ms, cancelled })),
        [{ ms: CURVE_KEPT_MS, cancelled: false }],
      );
      // The next use (a proof, a verification) finds it: snarkjs builds a curve only when none is kept.
      assert.equal(await withSnarkjsCurve(async () => curve()), kept);
      assert.deepEqual(
        scheduled.map(({ cancelled }) => cancelled),
        [true, false],
        'the use postponed the release',
      );
      await scheduled[1].release();
      assert.equal(curve(), null, 'the window ended: the threads are gone');
    } finally {
      curveRelease.schedule = schedule;
      await releaseSnarkjsCurve();
    }
  });
});

describe('groth16 cross-check and the mcl-wasm instance', () => {
  test('the presentations above went through mcl-wasm and @noble/curves, and snarkjs where the pairing decided', () => {
    assert.ok(verifier.counts.compared >= 40, JSON.stringify(verifier.counts));
    assert.ok(verifier.counts.snarkjs >= 15, JSON.stringify(verifier.counts));
  });

  // Last in this file: it replaces the process's mcl instance under the keys prepared above.
  test('a key prepared before mcl-wasm is initialized again is refused; one prepared after verifies', async () => {
    const signals = signalsOf(valid);
    const stale = await prepareVerificationKeyMcl(loadSandboxVerificationKey());
    await mclWasm.init(mclWasm.BN_SNARK1);
    const proof = decodeProofMcl(valid.proof);
    assert.ok(typeof proof !== 'string');
    assert.throws(() => verifyGroth16Mcl(stale, proof, signals), /initialized again/);
    const fresh = await prepareVerificationKeyMcl(loadSandboxVerificationKey());
    assert.equal(verifyGroth16Mcl(fresh, proof, signals), true);
    assertVerified(await crossCheckedGroth16Verifier().verify(valid, context(), registry));
  });
});
