import { performance } from 'node:perf_hooks';
import { CLAIM_CATALOGUE, type ClaimName } from '../domain/claims.ts';
import type { MetricsRecorder } from '../domain/metrics.ts';
import type { Verifiers } from '../proofs/formats.ts';
import { claimsToRequest, qualify, reportedClaims } from '../proofs/qualify.ts';
import type { RejectionReason, VerifiedPresentation } from '../proofs/types.ts';
import type { Environment } from '../domain/environment.ts';
import type { CredentialFormat, TrustRegistry } from '../domain/credentials.ts';
import type { SessionResult } from '../domain/session.ts';
import type { CredentialProfile } from '../domain/credential-profiles.ts';

/** The closed list of rejection reasons, for the API's schemas. */
export { REJECTION_REASONS } from '../proofs/types.ts';

/** The outcome of checking one presentation: rejected (proves nothing) or judged. */
export type PresentationOutcome =
  /** `message` may reach the caller; `detail` (addresses, error codes of a fetch) is for the operator only. */
  | { kind: 'rejected'; reason: RejectionReason; message: string; detail?: string }
  | { kind: 'judged'; result: JudgedResult; issuerId: string };

/** A judged presentation: the session's result but for the protocol that carried it. */
export type JudgedResult = Omit<SessionResult, 'protocol'>;

export interface CheckInput {
  format: CredentialFormat;
  presentation: unknown;
  nonce: string;
  audience: string;
  environment: Environment;
  /** What the business asked for; undefined to judge the presentation on what it discloses. */
  requiredClaims: readonly ClaimName[] | undefined;
  now: Date;
  /** The accepted credential profiles (every channel passes the service's: docs/credential-profiles.md). */
  profiles: readonly CredentialProfile[];
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
  if (outcome.kind === 'judged' && outcome.result.warnings?.some((w) => w.code === 'credential_status_unknown'))
    deps.metrics.credentialStatusUnknown();
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
      requiredClaims: input.requiredClaims && claimsToRequest(input.requiredClaims),
      profiles: input.profiles,
    },
    deps.trustRegistry,
  );
  if (!check.ok)
    return {
      kind: 'rejected',
      reason: check.reason,
      message: check.message,
      ...(check.detail !== undefined ? { detail: check.detail } : {}),
    };
  return {
    kind: 'judged',
    result: judge(check.presentation, input.requiredClaims ?? disclosedClaimNames(check.presentation), input.now),
    issuerId: check.presentation.issuer.id,
  };
}

/** The catalogue claims a presentation disclosed: what it is judged on when nothing was asked for. */
function disclosedClaimNames(presentation: VerifiedPresentation): ClaimName[] {
  return CLAIM_CATALOGUE.filter((claim) => presentation.claims[claim] !== undefined);
}

function judge(presentation: VerifiedPresentation, requiredClaims: readonly ClaimName[], now: Date): JudgedResult {
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
    ...(presentation.warnings?.length ? { warnings: presentation.warnings } : {}),
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
