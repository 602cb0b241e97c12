import { ACADEMIC_LEVELS, isAcademicLevel } from '../../domain/claims.ts';
import { sandboxUniversity } from '../sandbox-universities.ts';
import type { SandboxStudent } from '../types.ts';
import { domainHash, hashToField, MAX_TIMESTAMP } from './fields.ts';
import { sandboxIssuerPrivateKey } from './sandbox-issuers.ts';

/**
 * Issuing a sandbox `groth16` credential, as a university would: an EdDSA-Poseidon signature on
 * BabyJubJub over Poseidon(commitment, domainHash, levelCode, validUntil, active), where
 * commitment = Poseidon(studentSecret). Holder and issuer side only: it loads circomlibjs (GPL,
 * a devDependency) on first use, never when the module is merely imported.
 */

/** The private witness of the circuit: the credential, its signature and the holder's secret. */
export interface Groth16Credential {
  studentSecret: bigint;
  levelCode: bigint;
  /** Unix seconds. */
  validUntil: bigint;
  active: bigint;
  issuerAx: bigint;
  issuerAy: bigint;
  domainHash: bigint;
  signature: { R8x: bigint; R8y: bigint; S: bigint };
}

/** The holder's secret, derived from the student's seed: same seed, same credential commitment. */
export function studentSecret(holderSeed: string): bigint {
  return hashToField(`matricula-groth16-holder-v1|${holderSeed}`);
}

function unixSeconds(iso: string): bigint {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms) || ms < 0) throw new Error(`validUntil is not an ISO 8601 date: ${iso}`);
  const seconds = BigInt(Math.floor(ms / 1000));
  if (seconds > MAX_TIMESTAMP) throw new Error('validUntil does not fit in 64 bits');
  return seconds;
}

async function buildSigner() {
  const { buildEddsa, buildPoseidon } = await import('circomlibjs');
  const [eddsa, poseidon] = await Promise.all([buildEddsa(), buildPoseidon()]);
  return { eddsa, poseidon };
}

let signer: ReturnType<typeof buildSigner> | undefined;

/**
 * circomlibjs' EdDSA and Poseidon, built once per thread: building them (their field tables in
 * WebAssembly) took 1.6 s of CPU of the 1.7–1.8 s that an issuance took (2026-11-27).
 */
export function sandboxSigner(): ReturnType<typeof buildSigner> {
  return (signer ??= buildSigner());
}

/** Signs the student's sandbox credential with the published key of their sandbox university. */
export async function issueSandboxCredential(student: SandboxStudent): Promise<Groth16Credential> {
  const university = sandboxUniversity(student.university);
  if (!university) throw new Error(`${student.university} is not a sandbox university`);
  if (!isAcademicLevel(student.academicLevel)) throw new Error(`unknown academic level ${student.academicLevel}`);
  const { eddsa, poseidon } = await sandboxSigner();
  const F = poseidon.F;

  const secret = studentSecret(student.holderSeed);
  const credential = {
    studentSecret: secret,
    levelCode: BigInt(ACADEMIC_LEVELS[student.academicLevel]),
    validUntil: unixSeconds(student.validUntil),
    active: student.active ? 1n : 0n,
    domainHash: domainHash(university.domain),
  };
  const commitment = F.toObject(poseidon([secret]));
  const message = poseidon([
    commitment,
    credential.domainHash,
    credential.levelCode,
    credential.validUntil,
    credential.active,
  ]);

  const privateKey = sandboxIssuerPrivateKey(university);
  const [ax, ay] = eddsa.prv2pub(privateKey);
  const { R8, S } = eddsa.signPoseidon(privateKey, message);
  return {
    ...credential,
    issuerAx: eddsa.F.toObject(ax),
    issuerAy: eddsa.F.toObject(ay),
    signature: { R8x: eddsa.F.toObject(R8[0]), R8y: eddsa.F.toObject(R8[1]), S: BigInt(S) },
  };
}
