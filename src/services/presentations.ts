import { performance } from 'node:perf_hooks';
import type { ClaimName } from '../domain/claims.ts';
import type { MetricsRecorder } from '../domain/metrics.ts';
import type { Verifiers } from '../proofs/formats.ts';
import { claimsToRequest, qualify, reportedClaims } from '../proofs/qualify.ts';
import type { RejectionReason, VerifiedPresentation } from '../proofs/types.ts';
import type { Environment } from '../domain/environment.ts';
import type { CredentialFormat, TrustRegistry } from '../domain/credentials.ts';
import type { SessionResult } from '../domain/session.ts';

/** The closed list of rejection reasons, for the API's schemas. */
export { REJECTION_REASONS } from '../proofs/types.ts';

/** The outcome of checking one presentation: rejected (proves nothing) or judged. */
export type PresentationOutcome =
  | { kind: 'rejected'; reason: RejectionReason; message: string }
  | { kind: 'judged'; result: SessionResult; issuerId: string };

export interface CheckInput {
  format: CredentialFormat;
  presentation: unknown;
  nonce: string;
  audience: string;
  environment: Environment;
  requiredClaims: readonly ClaimName[];
  now: Date;
}

/** Verifies the cryptography with the format's verifier, then judges the claims the same way for every format. */
export async function checkPresentation(
  deps: { verifiers: Verifiers; trustRegistry: TrustRegistry; metrics: MetricsRecorder },
  input: CheckInput,
): Promise<PresentationOutcome> {
  const started = performance.now();
  const outcome = await verifyAndJudge(deps, input);
  deps.metrics.presentationChecked({
    format: input.format,
    result: outcome.kind === 'rejected' ? 'rejected' : outcome.result.verified ? 'verified' : 'not_verified',
    seconds: (performance.now() - started) / 1000,
  });
  return outcome;
}

async function verifyAndJudge(
  deps: { verifiers: Verifiers; trustRegistry: TrustRegistry },
  input: CheckInput,
): Promise<PresentationOutcome> {
  const verifier = deps.verifiers[input.format];
  if (!verifier)
    return { kind: 'rejected', reason: 'unsupported_format', message: `Format ${input.format} is not accepted.` };
  const check = await verifier.verify(
    input.presentation,
    {
      nonce: input.nonce,
      audience: input.audience,
      now: input.now,
      environment: input.environment,
      requiredClaims: claimsToRequest(input.requiredClaims),
    },
    deps.trustRegistry,
  );
  if (!check.ok) return { kind: 'rejected', reason: check.reason, message: check.message };
  return {
    kind: 'judged',
    result: judge(check.presentation, input.requiredClaims, input.now),
    issuerId: check.presentation.issuer.id,
  };
}

function judge(presentation: VerifiedPresentation, requiredClaims: readonly ClaimName[], now: Date): SessionResult {
  const qualification = qualify(presentation, requiredClaims, now);
  const { issuer } = presentation;
  return {
    verified: qualification.verified,
    format: presentation.format,
    // Who vouches is the registry entry whose key verified, never what the credential says of itself.
    university: { name: issuer.name, domain: issuer.domain, country: issuer.country },
    claims: reportedClaims(presentation.claims, requiredClaims),
    failureReason: qualification.verified ? null : qualification.failureReason,
    failureMessage: qualification.verified ? null : qualification.message,
  };
}

/**
 * A verifier's rejection as a sentence for people: the verifiers' messages are lower-case
 * fragments ("key binding JWT aud is not this service"), and they end up in error messages and
 * in `failureMessage`, followed by other sentences.
 */
export function rejectionSentence(message: string): string {
  return `The presentation was rejected: ${message.trim().replace(/[.\s]+$/, '')}.`;
}
