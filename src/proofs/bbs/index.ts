/** The `bbs` credential format: BBS signatures (BLS12-381-SHA-256) over the student credential. */
export { bbsVerifier, createBbsVerifier } from './verifier.ts';
export { bbsBuilder, presentBbsCredential } from './builder.ts';
export { issueBbsCredential, issueSandboxCredential, type BbsCredential } from './issue.ts';
export {
  sandboxIssuerKeyPair,
  sandboxIssuerPublicKeys,
  sandboxUniversityKeyPair,
  decodeBbsPublicKey,
  encodeBbsPublicKey,
  type BbsKeyPair,
} from './keys.ts';
export {
  BBS_CIPHERSUITE,
  BBS_STUDENT_CREDENTIAL,
  HOLDER_SECRET_INDEX,
  credentialHeader,
  presentationHeader,
  type BbsCredentialValues,
} from './credential.ts';
export { parseBbsPresentation, type BbsPresentation } from './presentation.ts';
