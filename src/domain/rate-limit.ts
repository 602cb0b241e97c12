import type { Clock } from './clock.ts';

/**
 * A fixed-window rate limit per client: at most `limit` requests in each window of `windowMs`,
 * counted on the injected clock. The counts of a window are dropped when the next one starts, so
 * memory is bounded by the clients of one window.
 */
export class FixedWindowLimiter {
  readonly #counts = new Map<string, number>();
  #window = -1;

  constructor(
    private readonly clock: Clock,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Counts one request of `client`: allowed, or refused with the seconds until the window ends. */
  take(client: string): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    const now = this.clock.now().getTime();
    const window = Math.floor(now / this.windowMs);
    if (window !== this.#window) {
      this.#counts.clear();
      this.#window = window;
    }
    const count = (this.#counts.get(client) ?? 0) + 1;
    this.#counts.set(client, count);
    if (count <= this.limit) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(((window + 1) * this.windowMs - now) / 1000)) };
  }
}
