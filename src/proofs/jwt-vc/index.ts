/** The `jwt_vc_json` credential format: W3C Verifiable Credentials secured as JWT, in a VP JWT. */
export { jwtVcJsonVerifier, looksLikeJwtPresentation } from './verifier.ts';
export { didJwkKey, didWebUrl } from './dids.ts';
