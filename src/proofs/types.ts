import type { ClaimName, DisclosedClaims } from '../domain/claims.ts';
import type { CredentialFormat, TrustedIssuer, TrustRegistry } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';

/**
 * The contract every credential format implements: a verifier on the service side and a
 * presentation builder on the holder side (wallet simulator, tests). One conformance suite runs
 * over every format (test/proofs-conformance.test.ts).
 */

export { CREDENTIAL_FORMATS, KEY_OF_FORMAT } from '../domain/credentials.ts';
export type { CredentialFormat, IssuerKeys, TrustedIssuer, TrustRegistry } from '../domain/credentials.ts';
export type { Environment } from '../domain/environment.ts';

/** What the presentation must be bound to. */
export interface PresentationContext {
  /** The session's challengeNonce (`nonce_…`). */
  nonce: string;
  /** The service's BASE_URL. */
  audience: string;
  now: Date;
  environment: Environment;
  /** Claims the verifier asks to see; a format may disclose more only if the holder chose to. */
  requiredClaims: readonly ClaimName[];
}

/**
 * Why a presentation is cryptographically unacceptable. Stable codes: clients match on them.
 * Such a presentation proves nothing; the session stays open (DESIGN §4).
 */
export const REJECTION_REASONS = [
  'malformed_presentation',
  'unsupported_format',
  'untrusted_issuer',
  'invalid_signature',
  'invalid_disclosure',
  'algorithm_not_allowed',
  'missing_key_binding',
  'invalid_key_binding',
  'nonce_mismatch',
  'audience_mismatch',
  'stale_presentation',
  'invalid_proof',
  /**
   * Signed and bound, but a claim the issuer vouches for cannot be: a value outside the
   * catalogue (an unknown `academic_level`), or a credential not valid yet (`nbf`, `iat` ahead
   * of the service clock beyond the skew allowance).
   */
  'invalid_claim',
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

/** A presentation whose cryptography holds: who signed, what was disclosed, what was proven. */
export interface VerifiedPresentation {
  format: CredentialFormat;
  /** The registry entry whose key verified the credential. Never what the credential says of itself. */
  issuer: TrustedIssuer;
  claims: DisclosedClaims;
  /**
   * Facts proven without disclosing the value. `validUntilAfterNow` is the Groth16 range proof of
   * `valid_until > now`: it satisfies a required `valid_until` without revealing the date.
   */
  predicates?: { validUntilAfterNow?: boolean };
  /** Credential expiry (`exp`), when the format has one. */
  expiresAt?: string;
}

export type PresentationCheck =
  { ok: true; presentation: VerifiedPresentation } | { ok: false; reason: RejectionReason; message: string };

/** Service side of a format. Outcomes are values: a bad presentation is `{ok: false}`, never a throw. */
export interface PresentationVerifier {
  readonly format: CredentialFormat;
  verify(presentation: unknown, context: PresentationContext, registry: TrustRegistry): Promise<PresentationCheck>;
}

/** A sandbox student credential, as the wallet simulator holds it. */
export interface SandboxStudent {
  /** Domain of the issuing sandbox university. */
  university: string;
  active: boolean;
  academicLevel: string;
  /** ISO 8601 UTC. */
  validUntil: string;
  /** Seed of the holder's secret (key binding key, BBS/ZK secret); any string. */
  holderSeed: string;
}

/** What the holder answers: the session's binding and the claims to disclose. */
export interface PresentationRequest {
  nonce: string;
  audience: string;
  now: Date;
  disclose: readonly ClaimName[];
}

/** Holder side of a format: issues a sandbox credential from the published seeds and presents it. */
export interface PresentationBuilder {
  readonly format: CredentialFormat;
  /** The JSON value for the `presentation` field of a submission. */
  present(student: SandboxStudent, request: PresentationRequest): Promise<unknown>;
  /** A copy of `presentation` changed so that its cryptography no longer holds (disclosed value altered). */
  tamper(presentation: unknown): unknown;
}
