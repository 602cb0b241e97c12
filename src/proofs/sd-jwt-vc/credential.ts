import { randomBytes } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import type { ClaimName } from '../../domain/claims.ts';
import type { PresentationRequest, SandboxStudent } from '../types.ts';
import { signJws, type SdJwtAlgorithm } from './jose.ts';
import { holderKeyPair, sandboxUniversityKeyPair } from './keys.ts';

/**
 * Holder side (wallet simulator, tests): issue a sandbox StudentCredential with the published
 * university key and present it with a key binding JWT. Built on the @sd-jwt libraries so that
 * what we verify is what an ordinary SD-JWT VC wallet produces.
 */

/** The `vct` of a Matricula student credential. */
export const STUDENT_CREDENTIAL_VCT = 'StudentCredential';

/** Claims of the catalogue, all selectively disclosable. */
const DISCLOSABLE: readonly ClaimName[] = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'];

function seconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

// The library asks for 16 characters and crypto-nodejs would give 16 hex digits (64 bits); RFC 9901
// recommends 128 bits of salt, so the salt is 16 random bytes whatever length is asked for.
function salt(): string {
  return randomBytes(16).toString('base64url');
}

function jwsSigner(privateJwk: JsonWebKey, alg: SdJwtAlgorithm): (data: string) => string {
  return (data) => signJws(data, privateJwk, alg);
}

/**
 * Issues the sandbox credential of `student` (compact SD-JWT, no key binding), signed by its
 * university's sandbox key at `now`. Throws for a student of an unknown university or with an
 * unparsable validUntil: those are faults of the caller, not presentations.
 */
export async function issueSandboxCredential(student: SandboxStudent, now: Date): Promise<string> {
  const issuerKey = sandboxUniversityKeyPair(student.university);
  if (!issuerKey) throw new Error(`not a sandbox university: ${student.university}`);
  const validUntil = new Date(student.validUntil);
  if (Number.isNaN(validUntil.getTime())) throw new Error(`invalid validUntil: ${student.validUntil}`);
  const sdjwt = new SDJwtVcInstance({
    signer: jwsSigner(issuerKey.privateJwk, issuerKey.alg),
    signAlg: issuerKey.alg,
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: salt,
  });
  const payload = {
    vct: STUDENT_CREDENTIAL_VCT,
    iss: `https://${student.university}`,
    iat: seconds(now),
    exp: seconds(validUntil),
    cnf: { jwk: holderKeyPair(student.holderSeed).publicJwk },
    is_active_student: student.active,
    university_domain: student.university,
    academic_level: student.academicLevel,
    valid_until: student.validUntil,
    ...(student.status ? { status: { status_list: { uri: student.status.uri, idx: student.status.idx } } } : {}),
  };
  return sdjwt.issue(payload, { _sd: [...DISCLOSABLE] });
}

/**
 * Presents `credential` disclosing exactly `request.disclose`, with a key binding JWT signed by
 * the holder key of `holderSeed` (`nonce`, `aud`, `iat` from the request; `sd_hash` by the library).
 */
export async function presentCredential(
  credential: string,
  holderSeed: string,
  request: PresentationRequest,
): Promise<string> {
  const holderKey = holderKeyPair(holderSeed);
  const sdjwt = new SDJwtVcInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    kbSigner: jwsSigner(holderKey.privateJwk, holderKey.alg),
    kbSignAlg: holderKey.alg,
  });
  const frame = Object.fromEntries(request.disclose.map((claim) => [claim, true]));
  return sdjwt.present(credential, frame, {
    kb: { payload: { iat: seconds(request.now), aud: request.audience, nonce: request.nonce } },
  });
}
