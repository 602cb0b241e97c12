import type { Clock } from './clock.ts';

/** What one counted request learns: allowed or not, and the figures the RateLimit-* headers carry. */
export type RateLimitDecision = {
  /** Requests allowed per window. */
  limit: number;
  /** Requests left in this window after this one (0 once refused). */
  remaining: number;
  /** Seconds until the window ends and the count starts again (at least 1). */
  resetSeconds: number;
} & ({ allowed: true } | { allowed: false; retryAfterSeconds: number });

/**
 * Clients counted in one window at most. Beyond that (a flood from very many addresses), new
 * clients share one count, so memory stays bounded and the flood is still limited as a whole.
 */
export const MAX_CLIENTS_PER_WINDOW = 100_000;
const OVERFLOW_CLIENT = '\u0000overflow';

/**
 * A fixed-window rate limit per client: at most `limit` requests in each window of `windowMs`,
 * counted on the injected clock. The counts of a window are dropped when the next one starts, so
 * memory is bounded by the clients of one window. Windows are aligned to the clock (every client's
 * window ends at the same instant): a client can send up to twice the limit across a boundary,
 * the known cost of a fixed window, in exchange for one number per client.
 */
export class FixedWindowLimiter {
  readonly #counts = new Map<string, number>();
  #window = -1;

  constructor(
    private readonly clock: Clock,
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Counts one request of `client`: allowed, or refused with the seconds until the window ends. */
  take(client: string): RateLimitDecision {
    const now = this.#enterWindow();
    const counted = this.#counts.get(client);
    const key = counted !== undefined || this.#counts.size < MAX_CLIENTS_PER_WINDOW ? client : OVERFLOW_CLIENT;
    const count = (key === client ? (counted ?? 0) : (this.#counts.get(key) ?? 0)) + 1;
    this.#counts.set(key, count);
    return this.#decision(count, count <= this.limit, now);
  }

  /**
   * Takes back one request of `client` counted at `countedAt` (a request that turned out to belong
   * to another budget, http/rate-limit.ts), unless that window has ended: a new window starts every
   * count from zero anyway.
   */
  giveBack(client: string, countedAt: Date): void {
    this.#enterWindow();
    if (Math.floor(countedAt.getTime() / this.windowMs) !== this.#window) return;
    const counted = this.#counts.get(client);
    if (counted !== undefined && counted > 0) this.#counts.set(client, counted - 1);
  }

  #enterWindow(): number {
    const now = this.clock.now().getTime();
    const window = Math.floor(now / this.windowMs);
    if (window !== this.#window) {
      this.#counts.clear();
      this.#window = window;
    }
    return now;
  }

  #decision(count: number, allowed: boolean, now: number): RateLimitDecision {
    const resetSeconds = Math.max(1, Math.ceil(((this.#window + 1) * this.windowMs - now) / 1000));
    const remaining = Math.max(0, this.limit - count);
    // Built whole rather than spread from a common part: every request counted makes one.
    if (allowed) return { allowed: true, limit: this.limit, remaining, resetSeconds };
    return { allowed: false, retryAfterSeconds: resetSeconds, limit: this.limit, remaining, resetSeconds };
  }
}
