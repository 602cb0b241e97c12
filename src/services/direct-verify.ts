import { createHash } from 'node:crypto';
import { noReportedClaims, type ClaimName, type ReportedClaims } from '../domain/claims.ts';
import type { CredentialFormat } from '../domain/credentials.ts';
import type { Principal } from '../domain/principal.ts';
import type { SessionResult } from '../domain/session.ts';
import { SPENT_NONCE_TTL_MS } from '../domain/spent-nonces.ts';
import type { RejectionReason } from '../proofs/types.ts';
import { nonceStanding, purgeSpentNoncesBefore, spendNonce } from '../store/spent-nonces.ts';
import { purgeInBatches, type BatchOptions } from './batches.ts';
import type { ServiceDeps } from './deps.ts';
import { isOwnClientId } from './openid4vp/request.ts';
import { checkPresentation, rejectionSentence } from './presentations.ts';

export interface DirectVerifyInput {
  format: CredentialFormat;
  presentation: unknown;
  nonce: string;
  audience: string;
  /** Undefined: judge the presentation on what it discloses. */
  requiredClaims: readonly ClaimName[] | undefined;
}

/** The body of a `/verify` answer: a judged result, or a rejection as `verified: false`. */
export interface DirectVerifyResult {
  verified: boolean;
  format: CredentialFormat;
  university: SessionResult['university'];
  claims: ReportedClaims;
  issuer: string | null;
  failureReason: SessionResult['failureReason'] | RejectionReason | null;
  failureMessage: string | null;
}

/** The nonce as stored: SHA-256 hex, so the table holds no caller value. */
function nonceHash(nonce: string): string {
  return createHash('sha256').update(nonce, 'utf8').digest('hex');
}

function rejected(format: CredentialFormat, reason: RejectionReason, message: string): DirectVerifyResult {
  return {
    verified: false,
    format,
    university: null,
    claims: noReportedClaims(),
    issuer: null,
    failureReason: reason,
    failureMessage: rejectionSentence(message),
  };
}

/**
 * Verifies one presentation for an organization, outside any session (issue 10, finding 2: this
 * must not be a replay oracle). A session's nonce is refused, whatever organization owns the
 * session: its presentation belongs to the session. A nonce is spent by the first presentation
 * whose cryptography holds (verified or not), per organization: the same presentation, or any
 * other, with that nonce is then `nonce_reused`. The insert decides between racing requests; the
 * check before verifying only saves the pairing for an obvious replay. A rejected presentation
 * proves nothing and spends nothing.
 */
export async function verifyDirectly(
  deps: ServiceDeps,
  principal: Principal,
  input: DirectVerifyInput,
): Promise<DirectVerifyResult> {
  const hash = nonceHash(input.nonce);
  const standing = await nonceStanding(deps.db, principal.orgId, input.nonce, hash);
  if (standing.sessionNonce) {
    return rejected(
      input.format,
      'session_nonce',
      "this nonce is a verification session's challenge: the wallet answers the session, not /verify",
    );
  }
  if (standing.spent) return reused(input.format);
  if (isOwnClientId(deps.config, input.audience)) {
    return rejected(
      input.format,
      'session_nonce',
      "this audience is the service's OpenID4VP client identifier: presentations bound to it answer a verification session, not /verify",
    );
  }

  const now = deps.clock.now();
  const outcome = await checkPresentation(deps, {
    format: input.format,
    presentation: input.presentation,
    nonce: input.nonce,
    audience: input.audience,
    environment: principal.environment,
    requiredClaims: input.requiredClaims,
    now,
    profiles: await deps.profiles.accepted(),
  });
  if (outcome.kind === 'rejected') return rejected(input.format, outcome.reason, outcome.message);

  const spent = await spendNonce(deps.db, {
    orgId: principal.orgId,
    nonceHash: hash,
    spentAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + SPENT_NONCE_TTL_MS).toISOString(),
  });
  if (!spent) return reused(input.format);
  return { ...outcome.result, format: input.format, issuer: outcome.issuerId };
}

function reused(format: CredentialFormat): DirectVerifyResult {
  return rejected(
    format,
    'nonce_reused',
    'this nonce was already spent by another verification: give every presentation a nonce of its own',
  );
}

/**
 * Deletes spent-nonce rows past their expiry, in batches (services/batches.ts); returns how many
 * went. Run by the periodic purge job; any number of processes may run it at once.
 */
export async function purgeExpiredSpentNonces(
  deps: Pick<ServiceDeps, 'db' | 'clock'>,
  options: BatchOptions = {},
): Promise<number> {
  const now = deps.clock.now().toISOString();
  return purgeInBatches((limit) => purgeSpentNoncesBefore(deps.db, now, limit), { ...options, db: deps.db });
}
