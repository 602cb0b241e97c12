import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey, type JsonWebKey as NodeJwk } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { ES256, digest, generateSalt } from '@sd-jwt/crypto-nodejs';
import { Disclosure } from '@sd-jwt/utils';
import { p256 } from '@noble/curves/p256';
import { SANDBOX_UNIVERSITIES } from '../../src/proofs/sandbox-universities.ts';
import type { ClaimName } from '../../src/domain/claims.ts';
import type { PresentationContext, SandboxStudent } from '../../src/proofs/types.ts';
import type { Environment } from '../../src/domain/environment.ts';
import type { TrustRegistry, TrustedIssuer } from '../../src/domain/credentials.ts';
import {
  holderKeyPair,
  issueSandboxCredential,
  presentCredential,
  sandboxIssuerKeyPair,
  sandboxIssuerPublicKeys,
  sandboxUniversityKeyPair,
  sdJwtVcBuilder,
  sdJwtVcVerifier,
} from '../../src/proofs/sd-jwt-vc/index.ts';
import { signJws, type SdJwtAlgorithm } from '../../src/proofs/sd-jwt-vc/jose.ts';

// ---- fixtures -------------------------------------------------------------------------------

const NOW = new Date('2026-11-01T10:00:00Z');
const NONCE = 'nonce_0123456789abcdef';
const AUDIENCE = 'https://matricula.test';
const ALL_CLAIMS: readonly ClaimName[] = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'];

function student(university: string, overrides: Partial<SandboxStudent> = {}): SandboxStudent {
  return {
    university,
    active: true,
    academicLevel: 'postgraduate',
    validUntil: '2027-06-30T00:00:00Z',
    holderSeed: 'alice',
    ...overrides,
  };
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

/** A tiny in-memory registry with the narrowing the real one does (environment, key for format). */
function registryOf(issuers: TrustedIssuer[]): TrustRegistry {
  return {
    async issuers(environment: Environment, format) {
      return issuers.filter(
        (issuer) => issuer.environment === environment && format === 'sd-jwt-vc' && issuer.keys.sdJwtVc !== undefined,
      );
    },
  };
}

function sandboxIssuers(keys: Record<string, JsonWebKey> = sandboxIssuerPublicKeys()): TrustedIssuer[] {
  return SANDBOX_UNIVERSITIES.map((u) => ({
    id: `iss_${u.domain}`,
    name: u.name,
    domain: u.domain,
    country: u.country,
    environment: 'sandbox',
    keys: { sdJwtVc: keys[u.domain] },
  }));
}

const registry = registryOf(sandboxIssuers());

async function present(
  university: string,
  disclose: readonly ClaimName[] = ALL_CLAIMS,
  overrides: Partial<SandboxStudent> = {},
  now = NOW,
): Promise<string> {
  return (await sdJwtVcBuilder.present(student(university, overrides), {
    nonce: NONCE,
    audience: AUDIENCE,
    now,
    disclose,
  })) as string;
}

async function expectRejected(presentation: unknown, reason: string, ctx = context(), trust = registry): Promise<void> {
  const check = await sdJwtVcVerifier.verify(presentation, ctx, trust);
  assert.equal(check.ok, false, 'expected a rejection');
  if (!check.ok) {
    assert.equal(check.reason, reason, check.message);
    assert.ok(check.message.length > 0);
  }
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const fromB64 = (segment: string): any => JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

function signJwt(header: object, payload: object, privateJwk: JsonWebKey, alg: SdJwtAlgorithm): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${signJws(input, privateJwk, alg)}`;
}

/** The presentation without its KB-JWT (ends with `~`). */
function withoutKb(presentation: string): string {
  return presentation.slice(0, presentation.lastIndexOf('~') + 1);
}

/** Replaces the KB-JWT with one signed by `key` over the given payload changes (sd_hash recomputed unless given). */
function rebind(
  presentation: string,
  changes: Record<string, unknown>,
  key = holderKeyPair('alice'),
  header: object = { typ: 'kb+jwt', alg: key.alg },
): string {
  const base = withoutKb(presentation);
  const sdHash = createHash('sha256').update(base).digest('base64url');
  const payload = { iat: seconds(NOW), aud: AUDIENCE, nonce: NONCE, sd_hash: sdHash, ...changes };
  return base + signJwt(header, payload, key.privateJwk, key.alg);
}

/** An SD-JWT VC over `payload` with the catalogue claims selectively disclosable, signed by `key`. */
async function issueWith(
  payload: Record<string, unknown>,
  key: { alg: SdJwtAlgorithm; privateJwk: JsonWebKey },
  header?: object,
): Promise<string> {
  const issuer = new SDJwtVcInstance({
    signer: (data) => signJws(data, key.privateJwk, key.alg),
    signAlg: key.alg,
    hasher: digest,
    saltGenerator: generateSalt,
  });
  const claims = {
    vct: 'StudentCredential',
    iss: 'https://sandbox-state.example',
    iat: seconds(NOW),
    exp: seconds(new Date('2027-06-30T00:00:00Z')),
    cnf: { jwk: holderKeyPair('alice').publicJwk },
    is_active_student: true,
    university_domain: 'sandbox-state.example',
    ...payload,
  };
  return issuer.issue(claims, { _sd: ['is_active_student', 'university_domain'] }, header ? { header } : undefined);
}

async function presentIssued(
  credential: string,
  disclose: readonly ClaimName[] = ['is_active_student'],
): Promise<string> {
  return presentCredential(credential, 'alice', { nonce: NONCE, audience: AUDIENCE, now: NOW, disclose });
}

const attacker = sandboxIssuerKeyPair('attacker', 'ES256');

// ---- keys -----------------------------------------------------------------------------------

describe('sd-jwt-vc sandbox keys', () => {
  it('derives the documented P-256 scalar: (SHA-256(seed) mod (n - 1)) + 1', () => {
    const seed = 'matricula-sandbox-v1:sandbox-state.example:sd-jwt-vc';
    const h = BigInt(`0x${createHash('sha256').update(seed).digest('hex')}`);
    const d = (h % (p256.CURVE.n - 1n)) + 1n;
    const pair = sandboxIssuerKeyPair(seed, 'ES256');
    assert.equal(BigInt(`0x${Buffer.from(pair.privateJwk.d!, 'base64url').toString('hex')}`), d);
    assert.deepEqual(sandboxUniversityKeyPair('sandbox-state.example'), pair);
  });

  it('derives the Ed25519 key whose RFC 8032 seed is SHA-256(seed)', () => {
    const seed = 'matricula-sandbox-v1:pruebas.example:sd-jwt-vc';
    const pair = sandboxIssuerKeyPair(seed, 'EdDSA');
    assert.equal(pair.privateJwk.d, createHash('sha256').update(seed).digest('base64url'));
    assert.deepEqual(sandboxUniversityKeyPair('pruebas.example'), pair);
  });

  it('gives public keys that node:crypto derives from the private keys too', () => {
    for (const domain of ['sandbox-state.example', 'pruebas.example']) {
      const pair = sandboxUniversityKeyPair(domain)!;
      const derived = createPublicKey(createPrivateKey({ key: pair.privateJwk as NodeJwk, format: 'jwk' })).export({
        format: 'jwk',
      });
      assert.deepEqual({ ...derived }, { ...pair.publicJwk, ...derived });
      assert.equal(derived.x, pair.publicJwk.x);
    }
  });

  it('publishes stable public keys, ES256 for sandbox-state.example and EdDSA for pruebas.example', () => {
    const keys = sandboxIssuerPublicKeys();
    assert.deepEqual(Object.keys(keys).sort(), ['pruebas.example', 'sandbox-state.example']);
    assert.deepEqual(keys['sandbox-state.example'], {
      kty: 'EC',
      crv: 'P-256',
      x: 'sbU1rilNkrDxs_rL3xM4csfM8T9vQAlQIt_NWrLnGWM',
      y: 'FtHrNHEZyTfbVvvWi6jdxBK13RJ2u-aTpggyLNW7JCI',
    });
    assert.deepEqual(keys['pruebas.example'], {
      kty: 'OKP',
      crv: 'Ed25519',
      x: 'QcIubP3P3JX-8LItyz_eFVWGyq5d17UyiAk84x5Wj40',
    });
  });

  it('gives different holders different keys and no key for a non-sandbox domain', () => {
    assert.notDeepEqual(holderKeyPair('alice').publicJwk, holderKeyPair('bob').publicJwk);
    assert.equal(sandboxUniversityKeyPair('harvard.edu'), undefined);
  });
});

// ---- happy path -----------------------------------------------------------------------------

describe('sd-jwt-vc verification: valid presentations', () => {
  for (const [domain, alg] of [
    ['sandbox-state.example', 'ES256'],
    ['pruebas.example', 'EdDSA'],
  ] as const) {
    it(`verifies a ${alg} credential of ${domain} with its registry issuer and typed claims`, async () => {
      const presentation = await present(domain);
      assert.equal(fromB64(presentation.split('.')[0]!).alg, alg);
      const check = await sdJwtVcVerifier.verify(presentation, context(), registry);
      assert.ok(check.ok, check.ok ? '' : check.message);
      assert.equal(check.presentation.format, 'sd-jwt-vc');
      assert.equal(check.presentation.issuer.id, `iss_${domain}`);
      assert.deepEqual(check.presentation.claims, {
        is_active_student: true,
        university_domain: domain,
        academic_level: 'postgraduate',
        valid_until: '2027-06-30T00:00:00Z',
      });
      assert.equal(check.presentation.expiresAt, '2027-06-30T00:00:00.000Z');
    });
  }

  it('discloses only the requested claims, and the others are not in the presentation', async () => {
    const presentation = await present('sandbox-state.example', ['is_active_student']);
    const check = await sdJwtVcVerifier.verify(presentation, context(), registry);
    assert.ok(check.ok);
    assert.deepEqual(check.presentation.claims, { is_active_student: true });
    const decoded = presentation
      .split(/[.~]/)
      .map((part) => Buffer.from(part, 'base64url').toString('latin1'))
      .join(' ');
    assert.ok(!decoded.includes('postgraduate') && !decoded.includes('2027-06-30T00:00:00Z'));
  });

  it('verifies a presentation disclosing nothing, with no claims', async () => {
    const check = await sdJwtVcVerifier.verify(await present('pruebas.example', []), context(), registry);
    assert.ok(check.ok);
    assert.deepEqual(check.presentation.claims, {});
  });

  it('does not judge qualification: an inactive, expired credential verifies with what it says', async () => {
    const presentation = await present('sandbox-state.example', ALL_CLAIMS, {
      active: false,
      validUntil: '2025-01-01T00:00:00Z',
    });
    const check = await sdJwtVcVerifier.verify(presentation, context(), registry);
    assert.ok(check.ok);
    assert.equal(check.presentation.claims.is_active_student, false);
    assert.equal(check.presentation.expiresAt, '2025-01-01T00:00:00.000Z');
  });

  it('accepts a KB-JWT exactly 300 s old or 60 s ahead', async () => {
    const presentation = await present('sandbox-state.example');
    assert.ok(
      (await sdJwtVcVerifier.verify(presentation, context({ now: new Date(NOW.getTime() + 300_000) }), registry)).ok,
    );
    assert.ok(
      (await sdJwtVcVerifier.verify(presentation, context({ now: new Date(NOW.getTime() - 60_000) }), registry)).ok,
    );
  });
});

// ---- rejections -----------------------------------------------------------------------------

describe('sd-jwt-vc verification: malformed input', () => {
  it('rejects non-strings', async () => {
    for (const value of [undefined, null, 42, true, {}, [], { presentation: 'x' }])
      await expectRejected(value, 'malformed_presentation');
  });

  it('rejects garbage strings and a bare JWT', async () => {
    const valid = await present('sandbox-state.example');
    const bareJwt = valid.split('~')[0]!;
    const cases = [
      '',
      '~',
      'abc',
      'a.b.c~',
      '!!!.@@@.###~',
      `${bareJwt}`,
      `${bareJwt}~~`,
      `${bareJwt}~not-a-jwt`,
      `${valid}${'A'.repeat(70_000)}`,
    ];
    for (const value of cases) await expectRejected(value, 'malformed_presentation');
  });

  it('rejects a validly signed credential of another vct', async () => {
    const credential = await issueWith({ vct: 'DriverLicense' }, sandboxUniversityKeyPair('sandbox-state.example')!);
    await expectRejected(await presentIssued(credential), 'malformed_presentation');
  });

  it('rejects a validly signed is_active_student that is not a boolean', async () => {
    const credential = await issueWith(
      { is_active_student: 'yes' },
      sandboxUniversityKeyPair('sandbox-state.example')!,
    );
    await expectRejected(await presentIssued(credential), 'malformed_presentation');
  });
});

describe('sd-jwt-vc verification: issuer and signature', () => {
  it('rejects alg none and non-allowed algorithms', async () => {
    const [jwt, ...rest] = (await present('sandbox-state.example')).split('~');
    const [, payload] = jwt!.split('.');
    for (const alg of ['none', 'HS256', 'RS256', undefined]) {
      await expectRejected(
        [`${b64({ typ: 'dc+sd-jwt', alg })}.${payload}.`, ...rest].join('~'),
        'algorithm_not_allowed',
      );
    }
  });

  it('rejects an issuer that is not in the registry', async () => {
    const credential = await issueWith({ iss: 'https://unknown.example' }, attacker);
    await expectRejected(await presentIssued(credential), 'untrusted_issuer');
  });

  it('rejects a sandbox issuer in a live session', async () => {
    await expectRejected(await present('sandbox-state.example'), 'untrusted_issuer', context({ environment: 'live' }));
  });

  it('rejects an iss that is not exactly https://<domain>', async () => {
    for (const iss of [
      'http://sandbox-state.example',
      'https://sandbox-state.example/x',
      'https://sandbox-state.example:8443',
      'sandbox-state.example',
      42,
    ]) {
      await expectRejected(
        await presentIssued(await issueWith({ iss }, sandboxUniversityKeyPair('sandbox-state.example')!)),
        'untrusted_issuer',
      );
    }
  });

  it('rejects a credential signed by another key, even one it carries in its header', async () => {
    const credential = await issueWith({}, attacker, { jwk: attacker.publicJwk });
    await expectRejected(await presentIssued(credential), 'invalid_signature');
  });

  it('checks against the registry key: a swapped registry key fails', async () => {
    const keys = sandboxIssuerPublicKeys();
    const swapped = registryOf(
      sandboxIssuers({ ...keys, 'sandbox-state.example': sandboxIssuerKeyPair('other', 'ES256').publicJwk }),
    );
    await expectRejected(await present('sandbox-state.example'), 'invalid_signature', context(), swapped);
    const crossed = registryOf(
      sandboxIssuers({
        'sandbox-state.example': keys['pruebas.example']!,
        'pruebas.example': keys['sandbox-state.example']!,
      }),
    );
    await expectRejected(await present('pruebas.example'), 'invalid_signature', context(), crossed);
  });

  it('rejects a signed payload changed after signing', async () => {
    const [jwt, ...rest] = (await present('sandbox-state.example')).split('~');
    const [header, payload, signature] = jwt!.split('.');
    const changed = b64({ ...fromB64(payload!), exp: seconds(new Date('2099-01-01T00:00:00Z')) });
    await expectRejected([`${header}.${changed}.${signature}`, ...rest].join('~'), 'invalid_signature');
  });
});

describe('sd-jwt-vc verification: disclosures', () => {
  it('rejects a tampered presentation from the builder (both algorithms)', async () => {
    for (const domain of ['sandbox-state.example', 'pruebas.example']) {
      await expectRejected(
        sdJwtVcBuilder.tamper(await present(domain, ['is_active_student'], { active: false })),
        'invalid_disclosure',
      );
      await expectRejected(sdJwtVcBuilder.tamper(await present(domain, ['academic_level'])), 'invalid_disclosure');
      await expectRejected(sdJwtVcBuilder.tamper(await present(domain, [])), 'invalid_disclosure');
    }
  });

  it('rejects a forged extra disclosure and a repeated one', async () => {
    const presentation = await present('sandbox-state.example', ['academic_level']);
    const forged = new Disclosure(['c2FsdHNhbHRzYWx0', 'is_active_student', true]).encode();
    await expectRejected(rebind(`${withoutKb(presentation)}${forged}~`, {}), 'invalid_disclosure');
    const parts = presentation.split('~');
    await expectRejected(rebind(`${parts[0]}~${parts[1]}~${parts[1]}~`, {}), 'invalid_disclosure');
  });

  /** A hand-made, validly signed sandbox-state credential with one disclosure and the given payload extras. */
  function handMade(disclosure: string, extra: (digest: string) => Record<string, unknown>): string {
    const key = sandboxUniversityKeyPair('sandbox-state.example')!;
    const digestOf = createHash('sha256').update(disclosure).digest('base64url');
    const payload = {
      vct: 'StudentCredential',
      iss: 'https://sandbox-state.example',
      cnf: { jwk: holderKeyPair('alice').publicJwk },
      _sd_alg: 'sha-256',
      ...extra(digestOf),
    };
    return rebind(
      `${signJwt({ typ: 'dc+sd-jwt', alg: 'ES256' }, payload, key.privateJwk, 'ES256')}~${disclosure}~`,
      {},
    );
  }

  it('accepts a hand-made credential the library did not produce', async () => {
    const disclosure = b64(['c2FsdHNhbHRzYWx0', 'academic_level', 'doctoral']);
    const check = await sdJwtVcVerifier.verify(
      handMade(disclosure, (digest) => ({ _sd: [digest] })),
      context(),
      registry,
    );
    assert.ok(check.ok);
    assert.deepEqual(check.presentation.claims, { academic_level: 'doctoral' });
  });

  it('rejects a disclosure that would overwrite a signed claim', async () => {
    const disclosure = b64(['c2FsdHNhbHRzYWx0', 'university_domain', 'harvard.edu']);
    await expectRejected(
      handMade(disclosure, (digest) => ({ university_domain: 'sandbox-state.example', _sd: [digest] })),
      'invalid_disclosure',
    );
  });

  it('rejects a digest that appears twice in the signed payload', async () => {
    const disclosure = b64(['c2FsdHNhbHRzYWx0', 'academic_level', 'doctoral']);
    await expectRejected(
      handMade(disclosure, (digest) => ({ _sd: [digest, digest] })),
      'invalid_disclosure',
    );
    await expectRejected(
      handMade(disclosure, (digest) => ({ _sd: [digest], details: { _sd: [digest] } })),
      'invalid_disclosure',
    );
  });

  it('rejects a disclosure named __proto__ or _sd', async () => {
    for (const name of ['__proto__', '_sd']) {
      const disclosure = b64(['c2FsdHNhbHRzYWx0', name, { is_active_student: true }]);
      const check = await sdJwtVcVerifier.verify(
        handMade(disclosure, (digest) => ({ _sd: [digest] })),
        context(),
        registry,
      );
      if (name === '_sd') assert.equal(check.ok ? 'ok' : check.reason, 'invalid_disclosure');
      else
        assert.ok(
          check.ok && check.presentation.claims.is_active_student === undefined,
          'a __proto__ claim must not become a claim',
        );
    }
  });
});

describe('sd-jwt-vc verification: key binding', () => {
  it('requires a KB-JWT', async () => {
    await expectRejected(withoutKb(await present('sandbox-state.example')), 'missing_key_binding');
  });

  it('rejects a KB-JWT signed by another key', async () => {
    await expectRejected(rebind(await present('pruebas.example'), {}, holderKeyPair('mallory')), 'invalid_key_binding');
  });

  it('rejects a KB-JWT with alg none or a wrong typ', async () => {
    const base = withoutKb(await present('sandbox-state.example'));
    const sdHash = createHash('sha256').update(base).digest('base64url');
    const unsigned = `${b64({ typ: 'kb+jwt', alg: 'none' })}.${b64({ iat: seconds(NOW), aud: AUDIENCE, nonce: NONCE, sd_hash: sdHash })}.`;
    await expectRejected(base + unsigned, 'algorithm_not_allowed');
    await expectRejected(rebind(base, {}, holderKeyPair('alice'), { typ: 'JWT', alg: 'ES256' }), 'invalid_key_binding');
  });

  it('rejects a KB-JWT whose sd_hash does not cover the disclosures presented', async () => {
    const presentation = await present('sandbox-state.example', ['is_active_student', 'academic_level']);
    const parts = presentation.split('~');
    // Drop the academic_level disclosure but keep the KB-JWT signed over both.
    await expectRejected([parts[0], parts[1], parts[3]].join('~'), 'invalid_key_binding');
    await expectRejected(rebind(presentation, { sd_hash: 'x'.repeat(43) }), 'invalid_key_binding');
  });

  it('rejects a credential with no holder key', async () => {
    const credential = await issueWith({ cnf: undefined }, sandboxUniversityKeyPair('sandbox-state.example')!);
    await expectRejected(await presentIssued(credential), 'invalid_key_binding');
  });

  it('rejects another nonce', async () => {
    await expectRejected(await present('sandbox-state.example'), 'nonce_mismatch', context({ nonce: 'nonce_other' }));
    await expectRejected(rebind(await present('pruebas.example'), { nonce: undefined }), 'nonce_mismatch');
  });

  it('rejects another audience', async () => {
    await expectRejected(
      await present('sandbox-state.example'),
      'audience_mismatch',
      context({ audience: 'https://evil.example' }),
    );
    await expectRejected(rebind(await present('pruebas.example'), { aud: [AUDIENCE] }), 'audience_mismatch');
  });

  it('rejects a KB-JWT more than 300 s old or more than 60 s ahead', async () => {
    const presentation = await present('sandbox-state.example');
    await expectRejected(presentation, 'stale_presentation', context({ now: new Date(NOW.getTime() + 301_000) }));
    await expectRejected(presentation, 'stale_presentation', context({ now: new Date(NOW.getTime() - 61_000) }));
    await expectRejected(rebind(presentation, { iat: String(seconds(NOW)) }), 'invalid_key_binding');
  });
});

describe('sd-jwt-vc verification: what the issuer vouches for (Finding 3)', () => {
  const state = sandboxUniversityKeyPair('sandbox-state.example')!;
  const verify = async (credential: string, disclose: readonly ClaimName[] = ['is_active_student']) =>
    sdJwtVcVerifier.verify(await presentIssued(credential, disclose), context(), registry);

  it('Finding 3: refuses an issuer vouching for another university (university_domain)', async () => {
    const harvard = await issueWith({ university_domain: 'harvard.edu' }, state);
    await expectRejected(await presentIssued(harvard, ['is_active_student', 'university_domain']), 'untrusted_issuer');
    // Undisclosed, the claim says nothing, and the result names the registry entry anyway.
    assert.ok((await verify(harvard)).ok);
    const own = await verify(await issueWith({}, state), ['is_active_student', 'university_domain']);
    assert.ok(own.ok && own.presentation.claims.university_domain === 'sandbox-state.example');
  });

  it('Finding 3: refuses an academic_level outside the catalogue', async () => {
    for (const level of ['professor', 'Doctoral', '', 'constructor']) {
      await expectRejected(await presentIssued(await issueWith({ academic_level: level }, state)), 'invalid_claim');
    }
    const doctoral = await verify(await issueWith({ academic_level: 'doctoral' }, state));
    assert.ok(doctoral.ok && doctoral.presentation.claims.academic_level === 'doctoral');
  });

  it('Finding 3: enforces nbf and refuses an issuer iat in the future beyond the 60 s allowance', async () => {
    await expectRejected(await presentIssued(await issueWith({ nbf: seconds(NOW) + 61 }, state)), 'invalid_claim');
    await expectRejected(await presentIssued(await issueWith({ iat: seconds(NOW) + 61 }, state)), 'invalid_claim');
    await expectRejected(
      await presentIssued(await issueWith({ nbf: String(seconds(NOW)) }, state)),
      'malformed_presentation',
    );
    assert.ok((await verify(await issueWith({ nbf: seconds(NOW) + 60, iat: seconds(NOW) + 60 }, state))).ok);
    assert.ok((await verify(await issueWith({ nbf: seconds(NOW) - 3600 }, state))).ok);
  });
});

describe('sd-jwt-vc verification: canonical base64url (Finding 7)', () => {
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  /** The same bytes spelled differently: the last character's unused low bits flipped. */
  const reencoded = (segment: string): string => {
    const last = ALPHABET.indexOf(segment.at(-1)!);
    const other = `${segment.slice(0, -1)}${ALPHABET[last ^ 1]}`;
    assert.deepEqual(Buffer.from(other, 'base64url'), Buffer.from(segment, 'base64url'), 'same bytes');
    assert.notEqual(other, segment);
    return other;
  };
  const withSignature = (jwt: string, change: (signature: string) => string) => {
    const [header, payload, signature] = jwt.split('.');
    return `${header}.${payload}.${change(signature!)}`;
  };

  it('Finding 7: refuses a KB-JWT whose signature is re-encoded with other trailing bits', async () => {
    const presentation = await present('sandbox-state.example'); // holder key ES256: 64-byte signature, 4 spare bits
    const kb = presentation.slice(presentation.lastIndexOf('~') + 1);
    await expectRejected(withoutKb(presentation) + withSignature(kb, reencoded), 'invalid_key_binding');
  });

  it('Finding 7: refuses an issuer JWT whose signature is re-encoded with other trailing bits', async () => {
    for (const domain of ['sandbox-state.example', 'pruebas.example']) {
      const [jwt, ...rest] = (await present(domain)).split('~');
      await expectRejected([withSignature(jwt!, reencoded), ...rest].join('~'), 'invalid_signature');
    }
  });
});

describe('sd-jwt-vc verification: faults', () => {
  it('lets a registry failure propagate instead of calling it a bad presentation', async () => {
    const broken: TrustRegistry = {
      issuers: async () => {
        throw new Error('database down');
      },
    };
    await assert.rejects(
      sdJwtVcVerifier.verify(await present('sandbox-state.example'), context(), broken),
      /database down/,
    );
  });
});

// ---- interoperability -----------------------------------------------------------------------

describe('sd-jwt-vc interoperability with @sd-jwt', () => {
  async function libraryPresentation(iss: string) {
    const issuerKeys = await ES256.generateKeyPair();
    const holderKeys = await ES256.generateKeyPair();
    const issuer = new SDJwtVcInstance({
      signer: await ES256.getSigner(issuerKeys.privateKey),
      signAlg: 'ES256',
      hasher: digest,
      saltGenerator: generateSalt,
    });
    const credential = await issuer.issue(
      {
        vct: 'StudentCredential',
        iss,
        iat: seconds(NOW),
        exp: seconds(NOW) + 86_400,
        cnf: { jwk: holderKeys.publicKey },
        is_active_student: true,
        university_domain: 'interop.example',
        academic_level: 'doctoral',
      },
      { _sd: ['is_active_student', 'university_domain', 'academic_level'] },
    );
    const holder = new SDJwtVcInstance({
      hasher: digest,
      kbSigner: await ES256.getSigner(holderKeys.privateKey),
      kbSignAlg: 'ES256',
    });
    const presentation = await holder.present(
      credential,
      { is_active_student: true, academic_level: true },
      { kb: { payload: { iat: seconds(NOW), aud: AUDIENCE, nonce: NONCE } } },
    );
    const trust = registryOf([
      {
        id: 'iss_interop',
        name: 'Interop University',
        domain: 'interop.example',
        country: 'DE',
        environment: 'live',
        keys: { sdJwtVc: issuerKeys.publicKey as JsonWebKey },
      },
    ]);
    return { presentation, trust };
  }

  it('verifies a credential issued and presented with SDJwtVcInstance directly', async () => {
    const { presentation, trust } = await libraryPresentation('https://interop.example');
    const check = await sdJwtVcVerifier.verify(presentation, context({ environment: 'live' }), trust);
    assert.ok(check.ok, check.ok ? '' : check.message);
    assert.equal(check.presentation.issuer.id, 'iss_interop');
    assert.deepEqual(check.presentation.claims, { is_active_student: true, academic_level: 'doctoral' });
  });

  it('rejects one from an issuer outside the registry', async () => {
    const { presentation, trust } = await libraryPresentation('https://elsewhere.example');
    await expectRejected(presentation, 'untrusted_issuer', context({ environment: 'live' }), trust);
  });

  it('rejects one with a forged disclosure', async () => {
    const { presentation, trust } = await libraryPresentation('https://interop.example');
    const parts = presentation.split('~');
    const index = parts.findIndex((part, i) => i > 0 && fromB64(part)[1] === 'is_active_student');
    parts[index] = new Disclosure([fromB64(parts[index]!)[0], 'is_active_student', false]).encode();
    await expectRejected(parts.join('~'), 'invalid_disclosure', context({ environment: 'live' }), trust);
  });

  it('produces presentations the library itself verifies', async () => {
    const issuerKey = sandboxUniversityKeyPair('sandbox-state.example')!;
    const presentation = await present('sandbox-state.example', ['is_active_student']);
    const verifier = new SDJwtVcInstance({
      hasher: digest,
      verifier: await ES256.getVerifier(issuerKey.publicJwk),
      kbVerifier: async (data, signature, payload) => (await ES256.getVerifier(payload.cnf!.jwk))(data, signature),
    });
    const result = await verifier.verify(presentation, { keyBindingNonce: NONCE, currentDate: seconds(NOW) });
    assert.equal((result.payload as Record<string, unknown>).is_active_student, true);
    assert.equal(result.kb?.payload.aud, AUDIENCE);
  });
});

describe('sd-jwt-vc holder side', () => {
  it('issues the documented credential: vct, iss, iat, exp, cnf.jwk and four digests', async () => {
    const credential = await issueSandboxCredential(student('pruebas.example'), NOW);
    const [header, payload] = credential
      .split('~')[0]!
      .split('.')
      .slice(0, 2)
      .map((part) => fromB64(part));
    assert.deepEqual(header, { typ: 'dc+sd-jwt', alg: 'EdDSA' });
    assert.equal(payload.vct, 'StudentCredential');
    assert.equal(payload.iss, 'https://pruebas.example');
    assert.equal(payload.iat, seconds(NOW));
    assert.equal(payload.exp, seconds(new Date('2027-06-30T00:00:00Z')));
    assert.deepEqual(payload.cnf, { jwk: holderKeyPair('alice').publicJwk });
    assert.equal(payload._sd.length, 4);
    assert.equal(payload.is_active_student, undefined);
  });

  it('refuses to issue for a university that is not a sandbox one', async () => {
    await assert.rejects(issueSandboxCredential(student('harvard.edu'), NOW), /not a sandbox university/);
  });
});
