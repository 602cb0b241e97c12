import type { ClaimName, ReportedClaims } from './claims.ts';
import type { CredentialFormat } from './credentials.ts';
import type { Environment } from './environment.ts';
import type { LoginEvidenceFormat } from './identity-providers.ts';
import type { SessionStatus } from './session-state.ts';

/**
 * Why a session completed unverified (`failureReason`, docs/sessions.md): a presentation whose cryptography
 * held but which does not qualify, or too many rejected presentations. Stable codes.
 */
export const FAILURE_REASONS = [
  'student_inactive',
  'credential_expired',
  'claim_not_disclosed',
  'too_many_attempts',
  /** The issuer's status list (IETF Token Status List) marks the credential revoked or suspended. */
  'credential_revoked',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Codes of what a result could not check but accepted by policy. */
export const RESULT_WARNING_CODES = ['credential_status_unknown'] as const;

/**
 * A check a result skipped by the operator's choice: `credential_status_unknown` when the
 * credential's revocation status could not be determined and STATUS_LIST_POLICY is `warn`.
 */
export interface ResultWarning {
  code: (typeof RESULT_WARNING_CODES)[number];
  message: string;
}

/**
 * What answered: Matricula's own wallet endpoints, OpenID for Verifiable Presentations 1.0, or a
 * university login (SAML 2.0, OpenID Connect; docs/university-login.md). The session, its events
 * and webhooks are the same either way.
 */
export const WALLET_PROTOCOLS = ['matricula', 'openid4vp', 'saml', 'oidc'] as const;
export type WalletProtocol = (typeof WALLET_PROTOCOLS)[number];

/** The verified outcome kept once a session completes; raw presentations are never stored. */
export interface SessionResult {
  verified: boolean;
  /** Which wallet protocol answered. Results stored before OpenID4VP existed read as `matricula`. */
  protocol: WalletProtocol;
  /** The credential format, or what a university login rests on (`saml2-assertion`, `oidc-id-token`). */
  format: CredentialFormat | LoginEvidenceFormat | null;
  university: { name: string; domain: string; country: string } | null;
  claims: ReportedClaims;
  failureReason: FailureReason | null;
  /**
   * What was wrong, in words an integrator can act on (which claim, which check); null when
   * verified. Results stored before it existed read as null.
   */
  failureMessage: string | null;
  /** Present (non-empty) only when a check was skipped by policy; see {@link ResultWarning}. */
  warnings?: ResultWarning[];
}

/** A verification session, as stored. */
export interface Session {
  id: string;
  appId: string;
  orgId: string;
  environment: Environment;
  /** As stored; see effectiveStatus for expiry on read. */
  status: SessionStatus;
  challengeNonce: string;
  purpose: string;
  requiredClaims: ClaimName[];
  metadata: Record<string, string> | null;
  clientReference: string | null;
  failedAttempts: number;
  result: SessionResult | null;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
  consentedAt: string | null;
  completedAt: string | null;
  /** When its data was erased (domain/redaction.ts); null while it is kept. */
  redactedAt: string | null;
  /**
   * Where the portal sends the student once the session ends (domain/return-url.ts), at one of
   * the application's allowed origins; null without one, and once redacted.
   */
  returnUrl: string | null;
}
