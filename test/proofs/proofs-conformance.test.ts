import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bn254 } from '@noble/curves/bn254';
import { createVerifiers, type Verifiers } from '../../src/proofs/formats.ts';
import { BUILDERS, BUILT_FORMATS, type BuiltFormat } from '../support/builders.ts';
import { crossCheckedBbsVerifier } from '../support/bbs-cross-check.ts';
import { crossCheckedGroth16Verifier } from '../support/groth16-cross-check.ts';
import { GROTH16_ARTIFACTS, releaseSnarkjsCurve } from '../../src/proofs/groth16/index.ts';
import { qualify, withActiveStudent } from '../../src/proofs/qualify.ts';
import { sandboxIssuers } from '../../src/proofs/issuer-definitions.ts';
import type {
  PresentationCheck,
  PresentationContext,
  RejectionReason,
  SandboxStudent,
} from '../../src/proofs/types.ts';
import type { TrustedIssuer, TrustRegistry } from '../../src/domain/credentials.ts';

/**
 * One conformance suite over every credential format with a builder here (jwt-vc's credentials
 * come from did-jwt-vc: test/integration/credential-profiles.jwt-vc.test.ts): the same promises,
 * checked the same way.
 * Pure format level (no database): an in-memory registry of the sandbox universities. Every
 * negative case names the exact rejection reason, since clients match on it.
 */
const ISSUERS: TrustedIssuer[] = sandboxIssuers().map((issuer, i) => ({ ...issuer, id: `iss_test${i}` }));
const [STATE, PRUEBAS] = ISSUERS;

function registryOf(issuers: TrustedIssuer[]): TrustRegistry {
  return { issuers: async (environment) => issuers.filter((i) => i.environment === environment) };
}

const NOW = new Date('2026-11-21T10:00:00.000Z');
const HOUR_MS = 60 * 60 * 1000;
const STUDENT: SandboxStudent = {
  university: STATE.domain,
  active: true,
  academicLevel: 'postgraduate',
  validUntil: '2027-06-30T00:00:00.000Z',
  holderSeed: 'conformance-student',
};
const CLAIMS = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'] as const;
const context = (over: Partial<PresentationContext> = {}): Required<Omit<PresentationContext, 'profiles'>> => ({
  nonce: 'nonce_conformance-1',
  audience: 'https://verify.example',
  now: NOW,
  environment: 'sandbox',
  requiredClaims: withActiveStudent([...CLAIMS]),
  ...over,
});

/** The outcome in one word: the rejection reason, or `verified`. */
const outcome = (check: PresentationCheck): RejectionReason | 'verified' => (check.ok ? 'verified' : check.reason);

/**
 * What each fault is rejected as, per format. The formats differ where one cannot tell faults
 * apart: a BBS or Groth16 proof binds the nonce, the audience, the disclosed values and the
 * issuer's key into one equation, so a change to any of them is `invalid_proof`
 * (docs/credentials-bbs.md "Verification", docs/zk-groth16.md "What the service checks"), while an
 * SD-JWT VC carries each in a field of its own and says which one is wrong. Every format carries
 * a time checked against the service clock (BBS since issue 10, finding 2: before, a captured BBS
 * presentation verified forever).
 */
const EXPECTED: Record<Fault, Record<BuiltFormat, RejectionReason | 'verified'>> = {
  otherNonce: { 'sd-jwt-vc': 'nonce_mismatch', bbs: 'invalid_proof', groth16: 'invalid_proof' },
  otherAudience: { 'sd-jwt-vc': 'audience_mismatch', bbs: 'invalid_proof', groth16: 'invalid_proof' },
  tamperedValue: { 'sd-jwt-vc': 'invalid_disclosure', bbs: 'invalid_proof', groth16: 'invalid_proof' },
  otherIssuersKey: { 'sd-jwt-vc': 'invalid_signature', bbs: 'invalid_proof', groth16: 'invalid_proof' },
  issuerNotInRegistry: { 'sd-jwt-vc': 'untrusted_issuer', bbs: 'untrusted_issuer', groth16: 'untrusted_issuer' },
  sandboxIssuerInLive: { 'sd-jwt-vc': 'untrusted_issuer', bbs: 'untrusted_issuer', groth16: 'untrusted_issuer' },
  // Without a ceremony key, live groth16 is refused before the issuer is looked at (README, GROTH16_LIVE_VERIFICATION_KEY).
  liveWithoutGroth16Key: { 'sd-jwt-vc': 'untrusted_issuer', bbs: 'untrusted_issuer', groth16: 'unsupported_format' },
  madeAnHourAgo: { 'sd-jwt-vc': 'stale_presentation', bbs: 'stale_presentation', groth16: 'stale_presentation' },
  madeAnHourAhead: { 'sd-jwt-vc': 'stale_presentation', bbs: 'stale_presentation', groth16: 'stale_presentation' },
};

interface Fixtures {
  /** Verifiers with a live groth16 key installed, so that every format can take live sessions. */
  liveEnabled: Verifiers;
  /** Verifiers as a default installation has them: no live groth16 key. */
  defaults: Verifiers;
}

interface Presentations {
  valid: unknown;
  second: unknown;
  inactive: unknown;
  expired: unknown;
}

type Fault =
  | 'otherNonce'
  | 'otherAudience'
  | 'tamperedValue'
  | 'otherIssuersKey'
  | 'issuerNotInRegistry'
  | 'sandboxIssuerInLive'
  | 'liveWithoutGroth16Key'
  | 'madeAnHourAgo'
  | 'madeAnHourAhead';

/** Each fault: one change to the valid presentation, the context or the registry. */
const FAULTS: Record<
  Fault,
  { title: string; check: (format: BuiltFormat, f: Fixtures, p: Presentations) => Promise<PresentationCheck> }
> = {
  otherNonce: {
    title: 'verified with another nonce',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(p.valid, context({ nonce: 'nonce_conformance-2' }), registryOf(ISSUERS)),
  },
  otherAudience: {
    title: 'verified for another audience',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(p.valid, context({ audience: 'https://other.example' }), registryOf(ISSUERS)),
  },
  tamperedValue: {
    title: 'a disclosed value changed',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(BUILDERS[format].tamper(p.valid), context(), registryOf(ISSUERS)),
  },
  otherIssuersKey: {
    title: "the registry holds another issuer's key for the issuer",
    check: (format, f, p) =>
      f.liveEnabled[format].verify(
        p.valid,
        context(),
        registryOf([
          { ...STATE, keys: PRUEBAS.keys },
          { ...PRUEBAS, domain: 'unrelated.example' },
        ]),
      ),
  },
  issuerNotInRegistry: {
    title: 'the issuer is not in the registry',
    check: (format, f, p) => f.liveEnabled[format].verify(p.valid, context(), registryOf([PRUEBAS])),
  },
  sandboxIssuerInLive: {
    title: 'a sandbox issuer presented to a live session',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(p.valid, context({ environment: 'live' }), registryOf(ISSUERS)),
  },
  liveWithoutGroth16Key: {
    title: 'a live session on an installation without a live groth16 key',
    check: (format, f, p) => f.defaults[format].verify(p.valid, context({ environment: 'live' }), registryOf(ISSUERS)),
  },
  madeAnHourAgo: {
    title: 'verified an hour after it was made',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(p.valid, context({ now: new Date(NOW.getTime() + HOUR_MS) }), registryOf(ISSUERS)),
  },
  madeAnHourAhead: {
    title: 'verified an hour before the time it claims',
    check: (format, f, p) =>
      f.liveEnabled[format].verify(p.valid, context({ now: new Date(NOW.getTime() - HOUR_MS) }), registryOf(ISSUERS)),
  },
};

/** Another valid verification key, as if from a ceremony: the sandbox key with delta doubled. */
function writeCeremonyVerificationKey(dir: string): string {
  const vk = JSON.parse(readFileSync(GROTH16_ARTIFACTS.verificationKey, 'utf8'));
  const [[x0, x1], [y0, y1]] = (vk.vk_delta_2 as string[][]).map((c) => c.map(BigInt));
  const { Fp2 } = bn254.fields;
  const delta = bn254.G2.ProjectivePoint.fromAffine({ x: Fp2.fromBigTuple([x0, x1]), y: Fp2.fromBigTuple([y0, y1]) })
    .double()
    .toAffine();
  vk.vk_delta_2 = [
    [delta.x.c0, delta.x.c1],
    [delta.y.c0, delta.y.c1],
    [1n, 0n],
  ].map((c) => c.map(String));
  const path = join(dir, 'live-verification-key.json');
  writeFileSync(path, JSON.stringify(vk));
  return path;
}

/** Presentations are shared by the tests of a format: frozen, so that no test can change one for the next. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

describe('conformance of every built credential format', () => {
  const keyDir = mkdtempSync(join(tmpdir(), 'matricula-conformance-'));
  const liveKeyPath = writeCeremonyVerificationKey(keyDir);
  // Groth16 presentations are verified on mcl-wasm (the service's) and @noble/curves (the reference)
  // alike, and by snarkjs whenever the pairing decides: every case below is a cross-check too.
  const crossChecked = {
    liveEnabled: crossCheckedGroth16Verifier({ liveVerificationKeyPath: liveKeyPath }),
    defaults: crossCheckedGroth16Verifier(),
  };
  // BBS proofs likewise: mcl-wasm (the service's) and @digitalbazaar/bbs-signatures must agree on each.
  const bbsCrossChecked = { liveEnabled: crossCheckedBbsVerifier(), defaults: crossCheckedBbsVerifier() };
  const fixtures: Fixtures = {
    liveEnabled: {
      ...createVerifiers({ groth16LiveVerificationKeyPath: liveKeyPath }),
      groth16: crossChecked.liveEnabled,
      bbs: bbsCrossChecked.liveEnabled,
    },
    defaults: { ...createVerifiers(), groth16: crossChecked.defaults, bbs: bbsCrossChecked.defaults },
  };
  after(async () => {
    await releaseSnarkjsCurve();
    rmSync(keyDir, { recursive: true, force: true });
  });

  test('the table names a reason for every fault and every format', () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), Object.keys(FAULTS).sort());
    for (const [fault, reasons] of Object.entries(EXPECTED))
      assert.deepEqual(Object.keys(reasons).sort(), [...BUILT_FORMATS].sort(), fault);
  });

  for (const format of BUILT_FORMATS) {
    describe(`format ${format}`, () => {
      const builder = BUILDERS[format];
      const verifier = fixtures.liveEnabled[format];
      const present = (student: Partial<SandboxStudent> = {}) => {
        const ctx = context();
        return builder.present(
          { ...STUDENT, ...student },
          { nonce: ctx.nonce, audience: ctx.audience, now: ctx.now, disclose: ctx.requiredClaims },
        );
      };
      // Built once (a groth16 proof takes seconds), one after another (snarkjs proves one at a time).
      let presentations: Presentations;
      before(async () => {
        const valid = await present();
        const second = await present();
        const inactive = await present({ active: false });
        const expired = await present({ validUntil: '2026-11-20T00:00:00.000Z' });
        presentations = deepFreeze({ valid, second, inactive, expired });
      });

      test('a valid presentation verifies against the registry and qualifies', async () => {
        const check = await verifier.verify(presentations.valid, context(), registryOf(ISSUERS));
        assert.ok(check.ok, JSON.stringify(check));
        assert.equal(check.presentation.format, format);
        assert.equal(check.presentation.issuer.id, STATE.id);
        assert.equal(check.presentation.issuer.domain, STATE.domain);
        assert.equal(check.presentation.claims.is_active_student, true);
        assert.deepEqual(qualify(check.presentation, context().requiredClaims, NOW), { verified: true });
        assert.equal(
          outcome(await fixtures.defaults[format].verify(presentations.valid, context(), registryOf(ISSUERS))),
          'verified',
          'sandbox does not need a live key',
        );
      });

      for (const [fault, { title, check }] of Object.entries(FAULTS) as Array<[Fault, (typeof FAULTS)[Fault]]>) {
        const expected = EXPECTED[fault][format];
        test(`${title}: ${expected}`, async () => {
          const result = await check(format, fixtures, presentations);
          assert.equal(outcome(result), expected, JSON.stringify(result));
          if (!result.ok) assert.ok(result.message.length > 0, 'a rejection says why');
        });
      }

      test('expired and inactive credentials verify but do not qualify', async () => {
        const inactive = await verifier.verify(presentations.inactive, context(), registryOf(ISSUERS));
        assert.ok(inactive.ok, JSON.stringify(inactive));
        assert.deepEqual(qualify(inactive.presentation, context().requiredClaims, NOW), {
          verified: false,
          failureReason: 'student_inactive',
          message: 'The credential does not show an active student.',
        });
        const expired = await verifier.verify(presentations.expired, context(), registryOf(ISSUERS));
        assert.ok(expired.ok, JSON.stringify(expired));
        const judged = qualify(expired.presentation, context().requiredClaims, NOW);
        assert.equal(judged.verified, false);
        assert.equal(!judged.verified && judged.failureReason, 'credential_expired');
      });

      test('two presentations of one credential are different, and both verify', async () => {
        assert.notEqual(JSON.stringify(presentations.second), JSON.stringify(presentations.valid));
        assert.equal(outcome(await verifier.verify(presentations.second, context(), registryOf(ISSUERS))), 'verified');
      });

      test('garbage is malformed_presentation, never a throw', async () => {
        for (const junk of [null, undefined, 42, 'x', '', [], {}, { proof: 'x' }, [presentations.valid]]) {
          const check = await verifier.verify(junk, context(), registryOf(ISSUERS));
          assert.equal(outcome(check), 'malformed_presentation', `${JSON.stringify(junk)}: ${JSON.stringify(check)}`);
        }
      });
    });
  }

  test('groth16: every presentation above was verified by mcl-wasm and @noble/curves, and by snarkjs where the pairing decided', () => {
    const { liveEnabled, defaults } = crossChecked;
    assert.ok(liveEnabled.counts.compared + defaults.counts.compared >= 20, JSON.stringify(crossChecked));
    // Valid, second, inactive and expired verify; otherNonce, otherAudience, tamperedValue and otherIssuersKey are refused by the equation.
    assert.ok(liveEnabled.counts.snarkjs + defaults.counts.snarkjs >= 9, JSON.stringify(crossChecked));
  });

  test('bbs: every proof above was checked by mcl-wasm and @digitalbazaar/bbs-signatures, which agreed', () => {
    const { liveEnabled, defaults } = bbsCrossChecked;
    assert.ok(liveEnabled.counts.compared + defaults.counts.compared >= 9, JSON.stringify(bbsCrossChecked));
    // Valid, second, inactive and expired hold; otherNonce, otherAudience, tamperedValue and otherIssuersKey do not.
    assert.ok(liveEnabled.counts.held + defaults.counts.held >= 5, JSON.stringify(bbsCrossChecked));
    assert.ok(
      liveEnabled.counts.compared + defaults.counts.compared - liveEnabled.counts.held - defaults.counts.held >= 4,
    );
  });
});
