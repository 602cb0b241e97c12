/** How long a stored response answers a repeated `Idempotency-Key` (DESIGN §2): 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
