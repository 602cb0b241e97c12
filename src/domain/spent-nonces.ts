/**
 * How long direct verify remembers a spent nonce. It must outlast every presentation that nonce
 * could have verified: the longest freshness span is the SD-JWT VC key binding JWT's (issued up to
 * 300 s before the check, or 60 s after it: 360 s); BBS and Groth16 presentations are fresh for
 * 90 s. Past this, a replay is refused as stale, so forgetting the nonce lets nothing through
 * (test/routes/verify-replay.test.ts checks the margin).
 */
export const SPENT_NONCE_TTL_MS = 10 * 60 * 1000;
