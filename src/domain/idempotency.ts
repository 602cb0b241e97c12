import { createHash } from 'node:crypto';

/** How long a stored response answers a repeated `Idempotency-Key` (README.md, The API): 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** The idempotency scope of an API key's requests: its organization and environment. */
export function principalScope(orgId: string, environment: string): string {
  return `${orgId}:${environment}`;
}

/**
 * The idempotency scope of a wallet's requests: the session and its nonce, hashed (the nonce is a
 * secret and the scope is stored).
 */
export function walletScope(sessionId: string, nonce: string): string {
  return `wallet:${createHash('sha256').update(`${sessionId}\n${nonce}`).digest('hex')}`;
}
