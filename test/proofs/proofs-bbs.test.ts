import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deriveProof, generateKeyPair, verifyProof } from '@digitalbazaar/bbs-signatures';
import {
  BBS_CIPHERSUITE,
  HOLDER_SECRET_INDEX,
  bbsBuilder,
  bbsVerifier,
  credentialHeader,
  decodeBbsPublicKey,
  issueBbsCredential,
  issueSandboxCredential,
  presentBbsCredential,
  presentationHeader,
  sandboxIssuerKeyPair,
  sandboxIssuerPublicKeys,
  sandboxUniversityKeyPair,
  type BbsPresentation,
} from '../../src/proofs/bbs/index.ts';
import { deriveSandboxIssuerPublicKeys, SANDBOX_PUBLIC_KEYS_FILE } from '../../src/proofs/bbs/keys.ts';
import { SANDBOX_UNIVERSITIES, formatSeed, sandboxUniversity } from '../../src/proofs/sandbox-universities.ts';
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
const NOW = new Date('2026-11-21T10:00:00.000Z');
const NOW_SECONDS = Math.floor(NOW.getTime() / 1000);

const student: SandboxStudent = {
  university: STATE,
  active: true,
  academicLevel: 'undergraduate',
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

/** A tiny in-memory trust registry honouring environment and format, like the real one. */
function registryOf(entries: TrustedIssuer[]): TrustRegistry {
  return {
    async issuers(environment, format) {
      return entries.filter((e) => e.environment === environment && (format !== 'bbs' || e.keys.bbs !== undefined));
    },
  };
}

describe('bbs credentials', () => {
  let sandboxEntries: TrustedIssuer[];
  let registry: TrustRegistry;

  before(() => {
    const keys = sandboxIssuerPublicKeys();
    sandboxEntries = SANDBOX_UNIVERSITIES.map((u, i) => ({
      id: `iss_sandbox${i}`,
      name: u.name,
      domain: u.domain,
      country: u.country,
      environment: 'sandbox' as const,
      keys: { bbs: keys[u.domain] },
    }));
    registry = registryOf(sandboxEntries);
  });

  function assertRejected(check: PresentationCheck, reason: string): void {
    assert.equal(check.ok, false, 'expected a rejection');
    if (!check.ok) {
      assert.equal(check.reason, reason, check.message);
      assert.ok(check.message.length > 0);
    }
  }

  describe('bbs sandbox issuer keys', () => {
    test('are deterministic per seed and differ between seeds', () => {
      const a = sandboxIssuerKeyPair('seed-one');
      const b = sandboxIssuerKeyPair('seed-two');
      assert.deepEqual(a, sandboxIssuerKeyPair('seed-one'));
      assert.notDeepEqual(a.publicKey, b.publicKey);
      assert.equal(a.publicKey.length, 96);
      assert.equal(a.secretKey.length, 32);
    });

    test("are the library's KeyGen with key_material = SHA-256(seed)", async () => {
      for (const seed of ['seed-one', formatSeed(SANDBOX_UNIVERSITIES[1], 'bbs')]) {
        const keyMaterial = new Uint8Array(createHash('sha256').update(seed, 'utf8').digest());
        const library = await generateKeyPair({ seed: keyMaterial, ciphersuite: BBS_CIPHERSUITE });
        assert.deepEqual(sandboxIssuerKeyPair(seed), library);
      }
    });

    test('publishes one valid 96-byte key per sandbox university, derived from its bbs seed', () => {
      const keys = sandboxIssuerPublicKeys();
      assert.deepEqual(Object.keys(keys).sort(), [PRUEBAS, STATE]);
      assert.notEqual(keys[STATE], keys[PRUEBAS]);
      const expected = sandboxIssuerKeyPair(formatSeed(sandboxUniversity(STATE)!, 'bbs'));
      assert.deepEqual(decodeBbsPublicKey(keys[STATE]), expected.publicKey);
    });

    test('the committed keys are the derived ones (scripts/bbs-sandbox-keys.ts regenerates them)', () => {
      assert.deepEqual(sandboxIssuerPublicKeys(), deriveSandboxIssuerPublicKeys());
      const committed = JSON.parse(readFileSync(SANDBOX_PUBLIC_KEYS_FILE, 'utf8')) as Record<string, string>;
      assert.deepEqual(committed, deriveSandboxIssuerPublicKeys(), 'every sandbox university has its committed key');
    });

    test('decodeBbsPublicKey refuses what is not a canonical valid G2 key', () => {
      const { publicKey } = sandboxIssuerKeyPair('seed-one');
      const good = Buffer.from(publicKey).toString('base64url');
      assert.ok(decodeBbsPublicKey(good));
      assert.equal(decodeBbsPublicKey(good.slice(0, -4)), undefined, 'too short');
      assert.equal(decodeBbsPublicKey(`${good}=`), undefined, 'padding');
      assert.equal(decodeBbsPublicKey(Buffer.from(publicKey.subarray(0, 48)).toString('base64url')), undefined);
      const offCurve = Buffer.from(publicKey);
      offCurve[50] ^= 0xff;
      assert.equal(decodeBbsPublicKey(offCurve.toString('base64url')), undefined, 'off the curve');
      const identity = Buffer.alloc(96);
      identity[0] = 0xc0; // compressed point at infinity
      assert.equal(decodeBbsPublicKey(identity.toString('base64url')), undefined, 'identity');
    });
  });

  describe('bbs presentations: happy', () => {
    test('verifies and returns only the requested claims, typed, with the registry entry as issuer', async () => {
      const presentation = (await bbsBuilder.present(
        student,
        request(['is_active_student', 'valid_until']),
      )) as BbsPresentation;
      assert.deepEqual(Object.keys(presentation.disclosed), ['0', '3']);
      const check = await bbsVerifier.verify(presentation, context(), registry);
      assert.ok(check.ok, check.ok ? '' : check.message);
      assert.equal(check.presentation.format, 'bbs');
      assert.equal(check.presentation.issuer, sandboxEntries[0]);
      assert.deepEqual(check.presentation.claims, { is_active_student: true, valid_until: student.validUntil });
    });

    test('discloses every catalogue claim when asked, never the holder secret', async () => {
      const presentation = (await bbsBuilder.present(
        student,
        request(['valid_until', 'academic_level', 'university_domain', 'is_active_student', 'valid_until']),
      )) as BbsPresentation;
      assert.equal(presentation.disclosed[HOLDER_SECRET_INDEX], undefined);
      assert.ok(!JSON.stringify(presentation).includes('holder_secret'));
      const check = await bbsVerifier.verify(presentation, context(), registry);
      assert.ok(check.ok, check.ok ? '' : check.message);
      assert.deepEqual(check.presentation.claims, {
        is_active_student: true,
        university_domain: STATE,
        academic_level: 'undergraduate',
        valid_until: student.validUntil,
      });
    });

    test('a proof disclosing nothing still proves a credential of a trusted issuer', async () => {
      const presentation = await bbsBuilder.present(student, request([]));
      const check = await bbsVerifier.verify(presentation, context(), registry);
      assert.ok(check.ok, check.ok ? '' : check.message);
      assert.deepEqual(check.presentation.claims, {});
    });

    test('an inactive student verifies cryptographically (qualification is judged later)', async () => {
      const inactive = { ...student, active: false, university: PRUEBAS, holderSeed: 'holder-bob' };
      const check = await bbsVerifier.verify(
        await bbsBuilder.present(inactive, request(['is_active_student'])),
        context(),
        registry,
      );
      assert.ok(check.ok, check.ok ? '' : check.message);
      assert.equal(check.presentation.issuer.domain, PRUEBAS);
      assert.deepEqual(check.presentation.claims, { is_active_student: false });
    });

    test('two proofs from one credential are different bytes and both verify', async () => {
      const credential = await issueSandboxCredential(student);
      const first = await presentBbsCredential(credential, request(['is_active_student']));
      const second = await presentBbsCredential(credential, request(['is_active_student']));
      assert.notEqual(first.proof, second.proof);
      const a = Buffer.from(first.proof, 'base64url');
      const b = Buffer.from(second.proof, 'base64url');
      // Not even the leading point (Abar) is shared: nothing to link the two presentations by.
      assert.notDeepEqual(a.subarray(0, 48), b.subarray(0, 48));
      for (const p of [first, second]) assert.ok((await bbsVerifier.verify(p, context(), registry)).ok);
    });
  });

  describe('bbs presentations: rejected', () => {
    let valid: BbsPresentation;
    before(async () => {
      valid = (await bbsBuilder.present(student, request(['is_active_student', 'academic_level']))) as BbsPresentation;
    });

    test('for another nonce', async () => {
      assertRejected(
        await bbsVerifier.verify(valid, context({ nonce: 'nonce_01jdtest0000000000000000bb' }), registry),
        'invalid_proof',
      );
    });

    test('for another audience', async () => {
      assertRejected(
        await bbsVerifier.verify(valid, context({ audience: 'https://other.test' }), registry),
        'invalid_proof',
      );
    });

    test('when a disclosed value is changed (tamper)', async () => {
      const tampered = bbsBuilder.tamper(valid) as BbsPresentation;
      assert.equal(tampered.disclosed['0'], 'false');
      assertRejected(await bbsVerifier.verify(tampered, context(), registry), 'invalid_proof');
      const promoted = { ...valid, disclosed: { ...valid.disclosed, '2': 'doctoral' } };
      assertRejected(await bbsVerifier.verify(promoted, context(), registry), 'invalid_proof');
    });

    test('when a disclosed claim is dropped or its value moved to another index', async () => {
      assertRejected(
        await bbsVerifier.verify({ ...valid, disclosed: { '0': 'true' } }, context(), registry),
        'malformed_presentation',
      );
      const moved = { ...valid, disclosed: { '0': 'true', '1': 'undergraduate' } };
      assertRejected(await bbsVerifier.verify(moved, context(), registry), 'invalid_proof');
    });

    test('when the tampered presentation disclosed nothing (proof bytes changed)', async () => {
      const bare = await bbsBuilder.present(student, request([]));
      assertRejected(await bbsVerifier.verify(bbsBuilder.tamper(bare), context(), registry), 'invalid_proof');
    });

    test('when it names the other sandbox university as issuer', async () => {
      assertRejected(await bbsVerifier.verify({ ...valid, issuer: PRUEBAS }, context(), registry), 'invalid_proof');
    });

    test("when the registry holds another issuer's key for the named domain", async () => {
      const swapped = registryOf([{ ...sandboxEntries[0], keys: { bbs: sandboxEntries[1].keys.bbs } }]);
      assertRejected(await bbsVerifier.verify(valid, context(), swapped), 'invalid_proof');
    });

    test('when the issuer is not in the registry', async () => {
      assertRejected(
        await bbsVerifier.verify({ ...valid, issuer: 'unknown.example' }, context(), registry),
        'untrusted_issuer',
      );
      assertRejected(await bbsVerifier.verify(valid, context(), registryOf([])), 'untrusted_issuer');
    });

    test('when a sandbox issuer is presented to a live session', async () => {
      assertRejected(await bbsVerifier.verify(valid, context({ environment: 'live' }), registry), 'untrusted_issuer');
    });

    test('when a trusted issuer signed a credential for another university domain', async () => {
      const keyPair = sandboxUniversityKeyPair(sandboxUniversity(STATE)!);
      const credential = await issueBbsCredential(
        { ...keyPair, domain: STATE },
        {
          is_active_student: 'true',
          university_domain: 'harvard.example',
          academic_level: 'doctoral',
          valid_until: '2030-01-01T00:00:00.000Z',
        },
        'holder-mallory',
      );
      const presentation = await presentBbsCredential(credential, request(['university_domain']));
      assertRejected(await bbsVerifier.verify(presentation, context(), registry), 'untrusted_issuer');
      // The same credential without that claim proves nothing false and verifies.
      const quiet = await presentBbsCredential(credential, request(['is_active_student']));
      assert.ok((await bbsVerifier.verify(quiet, context(), registry)).ok);
    });

    test('Finding 3: when a trusted issuer signed an academic_level outside the catalogue', async () => {
      const keyPair = sandboxUniversityKeyPair(sandboxUniversity(STATE)!);
      const credential = await issueBbsCredential(
        { ...keyPair, domain: STATE },
        {
          is_active_student: 'true',
          university_domain: STATE,
          academic_level: 'professor',
          valid_until: '2030-01-01T00:00:00.000Z',
        },
        'holder-mallory',
      );
      const presentation = await presentBbsCredential(credential, request(['academic_level']));
      assertRejected(await bbsVerifier.verify(presentation, context(), registry), 'invalid_claim');
    });

    test('when it discloses the holder secret, even with a proof that holds', async () => {
      const credential = await issueSandboxCredential(student);
      const proof = await deriveProof({
        publicKey: credential.publicKey,
        signature: credential.signature,
        header: credentialHeader(STATE),
        messages: credential.messages,
        presentationHeader: presentationHeader(AUDIENCE, NONCE, NOW_SECONDS),
        disclosedMessageIndexes: [0, HOLDER_SECRET_INDEX],
        ciphersuite: BBS_CIPHERSUITE,
      });
      const holds = await verifyProof({
        publicKey: credential.publicKey,
        proof,
        header: credentialHeader(STATE),
        presentationHeader: presentationHeader(AUDIENCE, NONCE, NOW_SECONDS),
        disclosedMessages: [credential.messages[0], credential.messages[HOLDER_SECRET_INDEX]],
        disclosedMessageIndexes: [0, HOLDER_SECRET_INDEX],
        ciphersuite: BBS_CIPHERSUITE,
      });
      assert.equal(holds, true, 'the leaking proof is itself valid BBS');
      const secret = new TextDecoder().decode(credential.messages[HOLDER_SECRET_INDEX]).slice('holder_secret='.length);
      const leaking = {
        issuer: STATE,
        now: NOW_SECONDS,
        proof: Buffer.from(proof).toString('base64url'),
        disclosed: { '0': 'true', '4': secret },
      };
      const check = await bbsVerifier.verify(leaking, context(), registry);
      assertRejected(check, 'malformed_presentation');
      assert.match(check.ok ? '' : check.message, /holder secret/);
    });

    test('when proof bytes of the right length do not decode', async () => {
      const length = Buffer.from(valid.proof, 'base64url').length;
      for (const fill of [0x00, 0xff, 0x42]) {
        const garbage = { ...valid, proof: Buffer.alloc(length, fill).toString('base64url') };
        assertRejected(await bbsVerifier.verify(garbage, context(), registry), 'invalid_proof');
      }
    });

    test('Finding 7: when a proof scalar is zero, which the library lets through', async () => {
      const bytes = Buffer.from(valid.proof, 'base64url');
      const scalars = (bytes.length - 3 * 48) / 32; // e^, r1^, r3^, m^_j…, challenge
      const withScalar = (i: number, value: Buffer) => {
        const changed = Buffer.from(bytes);
        value.copy(changed, 3 * 48 + i * 32);
        return changed;
      };
      for (let i = 0; i < scalars; i++) {
        const zero = { ...valid, proof: withScalar(i, Buffer.alloc(32)).toString('base64url') };
        const check = await bbsVerifier.verify(zero, context(), registry);
        assertRejected(check, 'invalid_proof');
        assert.match(check.ok ? '' : check.message, /proof scalar \S+ is zero/, `scalar ${i}`);
      }
      const order = Buffer.from('73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001', 'hex');
      const tooLarge = { ...valid, proof: withScalar(1, order).toString('base64url') };
      assert.match(
        ((c) => (c.ok ? '' : c.message))(await bbsVerifier.verify(tooLarge, context(), registry)),
        /proof scalar r1\^ is not below the group order/,
      );
    });

    test('Finding 2: a captured presentation stops verifying once its time is stale', async () => {
      const at = (offsetSeconds: number) => context({ now: new Date(NOW.getTime() + offsetSeconds * 1000) });
      // The service clock may be at most 60 s after the presentation's time and 30 s before it.
      assert.ok((await bbsVerifier.verify(valid, at(60), registry)).ok);
      assertRejected(await bbsVerifier.verify(valid, at(61), registry), 'stale_presentation');
      assertRejected(await bbsVerifier.verify(valid, at(24 * 3600), registry), 'stale_presentation');
      assert.ok((await bbsVerifier.verify(valid, at(-30), registry)).ok);
      assertRejected(await bbsVerifier.verify(valid, at(-31), registry), 'stale_presentation');
    });

    test('Finding 2: the time is bound into the proof, so restating it does not refresh a presentation', async () => {
      const later = { ...valid, now: valid.now + 3600 };
      const oneHourOn = context({ now: new Date(NOW.getTime() + 3600 * 1000) });
      assertRejected(await bbsVerifier.verify(later, oneHourOn, registry), 'invalid_proof');
    });

    test('Finding 2: the presentation header is unambiguous when the caller picks audience and nonce', async () => {
      // With the old `<audience>|<nonce>` header these two bindings were the same bytes.
      const moved = (await bbsBuilder.present(
        student,
        request(['is_active_student'], { audience: 'https://matricula.test|nonce_a', nonce: 'b' }),
      )) as BbsPresentation;
      const split = context({ audience: 'https://matricula.test', nonce: 'nonce_a|b' });
      assertRejected(await bbsVerifier.verify(moved, split, registry), 'invalid_proof');
      const same = context({ audience: 'https://matricula.test|nonce_a', nonce: 'b' });
      assert.ok((await bbsVerifier.verify(moved, same, registry)).ok, 'the binding it was made for holds');
    });

    test('Finding 2: the header is type, audience, nonce and now, each length-prefixed', () => {
      const field = (text: string) => {
        const bytes = Buffer.from(text, 'utf8');
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        return Buffer.concat([length, bytes]);
      };
      const expected = Buffer.concat(
        ['matricula:bbs:presentation-header:v2', 'https://a.example', 'nonce_é', '1795000000'].map(field),
      );
      assert.deepEqual(Buffer.from(presentationHeader('https://a.example', 'nonce_é', 1795000000)), expected);
      assert.throws(() => presentationHeader('a', 'b', -1), RangeError);
    });

    test('when the shape is wrong', async () => {
      const proofBytes = Buffer.from(valid.proof, 'base64url');
      const shapes: unknown[] = [
        undefined,
        { ...valid, now: undefined },
        { ...valid, now: '1795000000' },
        { ...valid, now: 1.5 },
        { ...valid, now: -1 },
        null,
        'eyJhbGciOi',
        42,
        [valid],
        {},
        { issuer: STATE, disclosed: valid.disclosed },
        { issuer: STATE, proof: valid.proof },
        { proof: valid.proof, disclosed: valid.disclosed },
        { ...valid, extra: true },
        { ...valid, issuer: 7 },
        { ...valid, issuer: '' },
        { ...valid, issuer: 'x'.repeat(300) },
        { ...valid, proof: 12 },
        { ...valid, proof: `${valid.proof}==` },
        { ...valid, proof: valid.proof.replace(/./, '+') },
        { ...valid, proof: proofBytes.subarray(0, proofBytes.length - 32).toString('base64url') },
        { ...valid, proof: Buffer.concat([proofBytes, Buffer.alloc(1)]).toString('base64url') },
        { ...valid, disclosed: null },
        { ...valid, disclosed: ['true'] },
        { ...valid, disclosed: { ...valid.disclosed, '01': 'x' } },
        { ...valid, disclosed: { '00': 'true', '2': 'undergraduate' } },
        { ...valid, disclosed: { '-1': 'true', '2': 'undergraduate' } },
        { ...valid, disclosed: { '0': 'true', '5': 'undergraduate' } },
        { ...valid, disclosed: { '0': 'true', academic_level: 'undergraduate' } },
        { ...valid, disclosed: { '0': 'true', '4': 'secret' } },
        { ...valid, disclosed: { '0': true, '2': 'undergraduate' } },
        { ...valid, disclosed: { '0': 'yes', '2': 'undergraduate' } },
        { ...valid, disclosed: { '0': 'true', '2': 'u'.repeat(257) } },
        JSON.parse(
          `{"issuer":"${STATE}","now":${valid.now},"proof":"${valid.proof}","disclosed":{"__proto__":"true","2":"undergraduate"}}`,
        ),
      ];
      for (const shape of shapes) {
        assertRejected(await bbsVerifier.verify(shape, context(), registry), 'malformed_presentation');
      }
    });

    test('never throws on bad input; a corrupt registry key is a fault and does throw', async () => {
      const corrupt = registryOf([{ ...sandboxEntries[0], keys: { bbs: 'AAAA' } }]);
      await assert.rejects(bbsVerifier.verify(valid, context(), corrupt), /invalid bbs public key/);
    });
  });

  describe('bbs builder', () => {
    test('refuses a university that is not a sandbox university and a value that is not a presentation', async () => {
      await assert.rejects(
        bbsBuilder.present({ ...student, university: 'unknown.example' }, request([])),
        /no sandbox university/,
      );
      assert.throws(() => bbsBuilder.tamper({ nope: true }), TypeError);
    });

    test('credentials of different holders carry different hidden secrets', async () => {
      const alice = await issueSandboxCredential(student);
      const bob = await issueSandboxCredential({ ...student, holderSeed: 'holder-bob' });
      assert.notDeepEqual(alice.messages[HOLDER_SECRET_INDEX], bob.messages[HOLDER_SECRET_INDEX]);
      assert.deepEqual(alice.messages.slice(0, HOLDER_SECRET_INDEX), bob.messages.slice(0, HOLDER_SECRET_INDEX));
      assert.notDeepEqual(alice.signature, bob.signature);
    });
  });
});
