import type { ClaimName, ReportedClaims } from './claims.ts';
import type { CredentialFormat } from './credentials.ts';
import type { Environment } from './environment.ts';
import type { SessionStatus } from './session-state.ts';

/**
 * Why a session completed unverified (spec 2.2 `failureReason`): a presentation whose cryptography
 * held but which does not qualify, or too many rejected presentations. Stable codes.
 */
export const FAILURE_REASONS = [
  'student_inactive',
  'credential_expired',
  'claim_not_disclosed',
  'too_many_attempts',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** The verified outcome kept once a session completes; raw presentations are never stored. */
export interface SessionResult {
  verified: boolean;
  format: CredentialFormat | null;
  university: { name: string; domain: string; country: string } | null;
  claims: ReportedClaims;
  failureReason: FailureReason | null;
  /**
   * What was wrong, in words an integrator can act on (which claim, which check); null when
   * verified. Results stored before it existed read as null.
   */
  failureMessage: string | null;
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
}
