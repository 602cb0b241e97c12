import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimits } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { FixedWindowLimiter, type RateLimitDecision } from '../domain/rate-limit.ts';
import { ApiError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `heavy`: the route checks or builds a proof, and a much tighter limit applies on top of the
     * usual one. `none`: not limited (probes and metrics, which orchestrators call on a schedule).
     */
    rateLimit?: 'heavy' | 'none';
  }
}

const MINUTE_MS = 60_000;

/**
 * Rate limits, per process, in fixed windows of a minute on the injected clock:
 *
 * - a route that requires an API key counts per key (after authentication, so one tenant's flood
 *   never spends another's budget, and a request with a bad key never reaches the count);
 * - a route without one counts per client address (`request.ip`, see TRUST_PROXY);
 * - a heavy route (a proof checked or built) counts a second, much smaller budget per key or
 *   address.
 *
 * Every limited response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (the
 * IETF httpapi draft's fields, of the tightest budget the request counted against); a refused one
 * is a 429 `rate_limited` with Retry-After. Counted in onRequest: before the body is parsed, and
 * before an idempotent replay could answer for free.
 */
export function installRateLimits(app: FastifyInstance, options: { clock: Clock; limits: RateLimits }): void {
  const { clock, limits } = options;
  const limiter = (perMinute: number) =>
    perMinute > 0 ? new FixedWindowLimiter(clock, perMinute, MINUTE_MS) : undefined;
  const byAddress = limiter(limits.publicPerMinute);
  const byKey = limiter(limits.apiKeyPerMinute);
  const heavy = limiter(limits.heavyPerMinute);

  // Callback-style, as every request runs it; a refusal is thrown, and Fastify answers it.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    count(request, reply);
    done();
  });

  function count(request: FastifyRequest, reply: FastifyReply): void {
    const kind = request.routeOptions.config?.rateLimit;
    if (kind === 'none') return;
    // Keys and addresses live in different namespaces: a key id never collides with an address.
    const general = request.principal ? byKey : byAddress;
    const tight = kind === 'heavy' ? heavy : undefined;
    if (!general && !tight) return;
    const client = request.principal ? `key:${request.principal.keyId}` : `ip:${request.ip}`;
    const first = general?.take(client);
    const second = tight?.take(client);
    const refused = first?.allowed === false ? first : second?.allowed === false ? second : undefined;
    const shown = refused ?? tightest(first, second);
    reply.header('ratelimit-limit', String(shown.limit));
    reply.header('ratelimit-remaining', String(shown.remaining));
    reply.header('ratelimit-reset', String(shown.resetSeconds));
    if (refused) {
      const what = request.principal ? 'this API key' : 'your address';
      throw new ApiError(
        'rate_limited',
        `Too many requests from ${what}: at most ${refused.limit} a minute${kind === 'heavy' ? ' here' : ''}. Retry in ${refused.retryAfterSeconds} s.`,
        { retryAfterSeconds: refused.retryAfterSeconds },
      );
    }
  }
}

/** Of the budgets counted, the one with the fewest requests left (the general one on a tie). */
function tightest(first: RateLimitDecision | undefined, second: RateLimitDecision | undefined): RateLimitDecision {
  if (!first) return second!;
  if (!second) return first;
  return second.remaining < first.remaining ? second : first;
}
