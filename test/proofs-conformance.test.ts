import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createVerifiers } from '../src/proofs/formats.ts';
import { releaseSnarkjsCurve } from '../src/proofs/groth16/builder.ts';
import { qualify, withActiveStudent } from '../src/proofs/qualify.ts';
import { sandboxIssuers } from '../src/proofs/trust-registry.ts';
import {
  CREDENTIAL_FORMATS,
  type PresentationContext,
  type SandboxStudent,
  type TrustedIssuer,
  type TrustRegistry,
} from '../src/proofs/types.ts';
import { BUILDERS } from './support/builders.ts';

/**
 * One conformance suite over every credential format: the same promises, checked the same way.
 * Pure format level (no database): an in-memory registry of the sandbox universities.
 */
const ISSUERS: TrustedIssuer[] = sandboxIssuers().map((issuer, i) => ({ ...issuer, id: `iss_test${i}` }));

function registryOf(issuers: TrustedIssuer[]): TrustRegistry {
  return { issuers: async (environment) => issuers.filter((i) => i.environment === environment) };
}

const NOW = new Date('2026-11-21T10:00:00.000Z');
const STUDENT: SandboxStudent = {
  university: 'sandbox-state.example',
  active: true,
  academicLevel: 'postgraduate',
  validUntil: '2027-06-30T00:00:00.000Z',
  holderSeed: 'conformance-student',
};
const CLAIMS = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'] as const;
const context = (over: Partial<PresentationContext> = {}): PresentationContext => ({
  nonce: 'nonce_conformance-1',
  audience: 'https://verify.example',
  now: NOW,
  environment: 'sandbox',
  requiredClaims: withActiveStudent([...CLAIMS]),
  ...over,
});

const verifiers = createVerifiers();
after(() => releaseSnarkjsCurve());

for (const format of CREDENTIAL_FORMATS) {
  describe(`format ${format}`, () => {
    const builder = BUILDERS[format];
    const verifier = verifiers[format];
    const present = (student: Partial<SandboxStudent> = {}, over: Partial<PresentationContext> = {}) => {
      const ctx = context(over);
      return builder.present(
        { ...STUDENT, ...student },
        { nonce: ctx.nonce, audience: ctx.audience, now: ctx.now, disclose: ctx.requiredClaims },
      );
    };
    let valid: unknown;

    test('a valid presentation verifies against the registry and qualifies', async () => {
      valid = await present();
      const check = await verifier.verify(valid, context(), registryOf(ISSUERS));
      assert.ok(check.ok, JSON.stringify(check));
      assert.equal(check.presentation.format, format);
      assert.equal(check.presentation.issuer.domain, 'sandbox-state.example');
      assert.equal(check.presentation.claims.is_active_student, true);
      assert.deepEqual(qualify(check.presentation, context().requiredClaims, NOW), { verified: true });
    });

    test('a changed nonce, audience or disclosed value fails', async () => {
      for (const [name, ctx] of [
        ['nonce', context({ nonce: 'nonce_conformance-2' })],
        ['audience', context({ audience: 'https://other.example' })],
      ] as const) {
        const check = await verifier.verify(valid, ctx, registryOf(ISSUERS));
        assert.equal(check.ok, false, `changed ${name} must fail`);
      }
      const tampered = await verifier.verify(builder.tamper(valid), context(), registryOf(ISSUERS));
      assert.equal(tampered.ok, false, 'tampered presentation must fail');
    });

    test("another issuer's key does not verify it; an unknown or sandbox-only issuer is untrusted for live", async () => {
      const [state, pruebas] = ISSUERS;
      const swapped = registryOf([
        { ...state, keys: pruebas.keys },
        { ...pruebas, domain: 'unrelated.example' },
      ]);
      assert.equal((await verifier.verify(valid, context(), swapped)).ok, false);
      const unknown = await verifier.verify(valid, context(), registryOf([pruebas]));
      assert.equal(unknown.ok, false);
      assert.equal(!unknown.ok && unknown.reason, 'untrusted_issuer');
      const live = await verifier.verify(valid, context({ environment: 'live' }), registryOf(ISSUERS));
      assert.equal(live.ok, false);
    });

    test('expired and inactive credentials verify but do not qualify', async () => {
      const inactive = await verifier.verify(await present({ active: false }), context(), registryOf(ISSUERS));
      assert.ok(inactive.ok);
      assert.deepEqual(qualify(inactive.presentation, context().requiredClaims, NOW), {
        verified: false,
        failureReason: 'student_inactive',
        message: 'The credential does not show an active student.',
      });
      const expired = await verifier.verify(
        await present({ validUntil: '2026-11-20T00:00:00.000Z' }),
        context(),
        registryOf(ISSUERS),
      );
      assert.ok(expired.ok);
      const judged = qualify(expired.presentation, context().requiredClaims, NOW);
      assert.equal(judged.verified, false);
      assert.equal(!judged.verified && judged.failureReason, 'credential_expired');
    });

    test('two presentations of one credential are different', async () => {
      const again = await present();
      assert.notDeepEqual(JSON.stringify(again), JSON.stringify(valid));
    });

    test('garbage is malformed, never a throw', async () => {
      for (const junk of [null, 42, 'x', [], {}, { proof: 'x' }]) {
        const check = await verifier.verify(junk, context(), registryOf(ISSUERS));
        assert.equal(check.ok, false);
      }
    });
  });
}
