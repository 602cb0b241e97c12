/** The `sd-jwt-vc` credential format: IETF SD-JWT VC StudentCredential with key binding. */
export { sdJwtVcVerifier, issuerDomain } from './verifier.ts';
export { sdJwtVcBuilder } from './builder.ts';
export { issueSandboxCredential, presentCredential, STUDENT_CREDENTIAL_VCT } from './credential.ts';
export {
  sandboxIssuerKeyPair,
  sandboxIssuerPublicKeys,
  sandboxUniversityKeyPair,
  holderKeyPair,
  type JwkKeyPair,
} from './keys.ts';
export { ALLOWED_ALGORITHMS, type SdJwtAlgorithm } from './jose.ts';
export { MAX_KEY_BINDING_AGE_SECONDS, MAX_KEY_BINDING_FUTURE_SECONDS } from './key-binding.ts';
