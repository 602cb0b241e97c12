/**
 * The two worlds every resource lives in (docs/security.md): sandbox resources answer to `sk_test_` keys
 * and trust the published sandbox universities; live ones answer to `sk_live_` keys only.
 */
export const ENVIRONMENTS = ['sandbox', 'live'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export function isEnvironment(value: unknown): value is Environment {
  return value === 'sandbox' || value === 'live';
}
