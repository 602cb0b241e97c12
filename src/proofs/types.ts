import type { ClaimName, DisclosedClaims } from '../domain/claims.ts';
import type { CredentialProfile } from '../domain/credential-profiles.ts';
import type { CredentialFormat, TrustedIssuer, TrustRegistry } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';
import type { ResultWarning } from '../domain/session.ts';

/**
 * The contract every credential format implements: a verifier on the service side and a
 * presentation builder on the holder side (wallet simulator, tests). One conformance suite runs
 * over every format (test/proofs/proofs-conformance.test.ts).
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
  /**
   * Claims the verifier asks to see; a format may disclose more only if the holder chose to
   * (Groth16, whose proof states what it discloses, refuses more: `unrequested_disclosure`).
   * Undefined when the caller asked for nothing in particular (`/verify` without
   * `requiredClaims`): the presentation is judged on what it discloses.
   */
  requiredClaims?: readonly ClaimName[];
  /**
   * The accepted credential profiles (docs/credential-profiles.md): which credential types are
   * accepted and how their claims map onto the catalogue. The built-in StudentCredential when absent.
   */
  profiles?: readonly CredentialProfile[];
}

/**
 * Why a presentation is cryptographically unacceptable. Stable codes: clients match on them.
 * Such a presentation proves nothing; the session stays open (docs/sessions.md, Attempts).
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
  /**
   * Direct verify only: the nonce was already spent, in this organization, by a presentation
   * whose cryptography held. A nonce answers one presentation (issue 10, finding 2).
   */
  'nonce_reused',
  /**
   * Direct verify only: the nonce is a verification session's challenge. A session's
   * presentation is answered through the session, never through `/verify`.
   */
  'session_nonce',
  /**
   * The proof discloses a claim that was not requested, and the format cannot drop it afterwards
   * (a Groth16 proof made with the level disclosed is a proof of another statement).
   */
  'unrequested_disclosure',
  /**
   * Something the issuer publishes could not be fetched (its `/.well-known/jwt-vc-issuer` metadata,
   * its status list): unreachable, too slow, too large, refused by the SSRF guard. Try again later.
   */
  'issuer_unreachable',
  /**
   * The credential's status list was fetched but cannot be trusted or read (a signature by a key
   * the issuer is not trusted for, another `sub`, expired, malformed, too large once inflated), so
   * whether it is revoked is unknown (STATUS_LIST_POLICY=fail_closed).
   */
  'invalid_status_list',
  /** University login: the assertion (or ID token) was accepted before; a replay is refused. */
  'assertion_replayed',
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
  /** Set when the issuer's status list marks the credential revoked or suspended. */
  revocation?: { state: 'revoked' | 'suspended'; message: string };
  /** What could not be checked but was let through by policy (STATUS_LIST_POLICY=warn). */
  warnings?: ResultWarning[];
}

export type PresentationCheck =
  | { ok: true; presentation: VerifiedPresentation }
  /** `message` may reach the caller; `detail` (addresses, error codes of a fetch) is for the operator only. */
  | { ok: false; reason: RejectionReason; message: string; detail?: string };

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
  /**
   * The credential's entry in its university's status list (`sd-jwt-vc` only: the other formats
   * carry none, it would make the student linkable). Without it the credential has no status.
   */
  status?: { uri: string; idx: number };
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
  /**
   * Ends what the builder keeps warm between presentations (groth16: snarkjs' curve and its
   * threads, which hold the process open for a while after a proof), for a process about to end.
   */
  release?(): Promise<void>;
}
