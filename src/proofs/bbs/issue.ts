import { sign } from '@digitalbazaar/bbs-signatures';
import type { SandboxStudent } from '../types.ts';
import { sandboxUniversity } from '../sandbox-universities.ts';
import { BBS_CIPHERSUITE, credentialHeader, encodeCredentialMessages, type BbsCredentialValues } from './credential.ts';
import { sandboxUniversityKeyPair, type BbsKeyPair } from './keys.ts';

/**
 * A signed `bbs` credential as its holder keeps it: the issuer's public key and domain (both go
 * into the proof), every message in signing order and the signature over them.
 */
export interface BbsCredential {
  issuerDomain: string;
  publicKey: Uint8Array;
  messages: Uint8Array[];
  signature: Uint8Array;
}

/** Signs a credential stating `values` for the holder of `holderSeed`, as `issuerDomain`. */
export async function issueBbsCredential(
  issuer: BbsKeyPair & { domain: string },
  values: BbsCredentialValues,
  holderSeed: string,
): Promise<BbsCredential> {
  const messages = encodeCredentialMessages(values, holderSeed);
  const signature = await sign({
    secretKey: issuer.secretKey,
    publicKey: issuer.publicKey,
    header: credentialHeader(issuer.domain),
    messages,
    ciphersuite: BBS_CIPHERSUITE,
  });
  return { issuerDomain: issuer.domain, publicKey: issuer.publicKey, messages, signature };
}

/** The credential a sandbox university issues to `student`, signed with its published-seed key. */
export async function issueSandboxCredential(student: SandboxStudent): Promise<BbsCredential> {
  const university = sandboxUniversity(student.university);
  if (!university) throw new Error(`no sandbox university with domain ${student.university}`);
  const keyPair = sandboxUniversityKeyPair(university);
  const values: BbsCredentialValues = {
    is_active_student: student.active ? 'true' : 'false',
    university_domain: university.domain,
    academic_level: student.academicLevel,
    valid_until: student.validUntil,
  };
  return issueBbsCredential({ ...keyPair, domain: university.domain }, values, student.holderSeed);
}
