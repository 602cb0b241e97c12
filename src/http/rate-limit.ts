import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimits } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { FixedWindowLimiter, type RateLimitDecision } from '../domain/rate-limit.ts';
import { ApiError } from '../errors.ts';
import type { SessionCall } from '../services/session-calls.ts';
import { routeOf } from './route-options.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `heavy`: the route checks or builds a proof, and a much tighter limit applies on top of the
     * usual one. `none`: not limited (probes and metrics, which orchestrators call on a schedule).
     * `session`: a public route that names a session ({@link FastifyContextConfig.sessionCall}): a
     * call naming an existing session (with its correct nonce or token, where the route takes one)
     * counts against that session's budget, any other against the client address's.
     */
    rateLimit?: 'heavy' | 'none' | 'session';
    /** For `rateLimit: 'session'`: the session the request names, read after validation. */
    sessionCall?: (request: FastifyRequest) => SessionCall;
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
 *   address;
 * - a session's public routes (its page and status, the wallet's calls) count per session once the
 *   call is known to name an existing session with its secret (`admit`), and per address
 *   otherwise. Many students behind one address (a campus, a carrier's NAT) then share no budget,
 *   while junk (unknown sessions, wrong nonces, malformed bodies) still spends the address's: every
 *   such call is counted on arrival, and an address whose budget is spent is refused before
 *   anything is read. Their proof work is bounded
 *   by the proof pool's queue (PROOF_QUEUE_MAX) and each session's attempt limit, not by a count
 *   per address.
 *
 * Every limited response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (the
 * IETF httpapi draft's fields, of the tightest budget the request counted against); a refused one
 * is a 429 `rate_limited` with Retry-After. Counted in onRequest: before the body is parsed, and
 * before an idempotent replay could answer for free (a session call is given back to its address
 * in preHandler, once validated and admitted).
 */
export function installRateLimits(
  app: FastifyInstance,
  options: { clock: Clock; limits: RateLimits; admit: (call: SessionCall) => Promise<boolean> },
): void {
  const { clock, limits, admit } = options;
  const limiter = (perMinute: number) =>
    perMinute > 0 ? new FixedWindowLimiter(clock, perMinute, MINUTE_MS) : undefined;
  const byAddress = limiter(limits.publicPerMinute);
  const byKey = limiter(limits.apiKeyPerMinute);
  const heavy = limiter(limits.heavyPerMinute);
  const bySession = limiter(limits.sessionPerMinute);
  // Session calls counted against their address until their session admits them: when it does, the
  // address gets the request back, so junk spends the address's budget exactly as before.
  const countedByAddress = new WeakMap<FastifyRequest, { client: string; at: Date }>();

  // Callback-style, as every request runs it; a refusal is thrown, and Fastify answers it.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    count(request, reply);
    done();
  });

  function count(request: FastifyRequest, reply: FastifyReply): void {
    const kind = routeOf(request).config?.rateLimit;
    if (kind === 'none') return;
    if (kind === 'session' && !request.principal) return checkAddress(request, reply);
    // Keys and addresses live in different namespaces: a key id never collides with an address.
    const general = request.principal ? byKey : byAddress;
    const tight = kind === 'heavy' ? heavy : undefined;
    if (!general && !tight) return;
    const client = request.principal ? `key:${request.principal.keyId}` : `ip:${request.ip}`;
    const first = general?.take(client);
    const second = tight?.take(client);
    const refused = first?.allowed === false ? first : second?.allowed === false ? second : undefined;
    const shown = refused ?? tightest(first, second);
    showFigures(reply, shown);
    if (refused) {
      const what = request.principal ? 'this API key' : 'your address';
      throw rateLimited(`Too many requests from ${what}`, refused, kind === 'heavy' ? ' here' : '');
    }
  }

  /** A session call: counted against its address now, given back if its session admits it. */
  function checkAddress(request: FastifyRequest, reply: FastifyReply): void {
    if (!byAddress) return;
    const client = `ip:${request.ip}`;
    const decision = byAddress.take(client);
    showFigures(reply, decision);
    if (!decision.allowed) throw rateLimited('Too many requests from your address', decision, '');
    countedByAddress.set(request, { client, at: clock.now() });
  }

  app.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const { rateLimit, sessionCall } = routeOf(request).config ?? {};
    if (rateLimit !== 'session' || !sessionCall || request.principal || (!byAddress && !bySession)) return done();
    const call = sessionCall(request);
    admit(call).then((admitted) => {
      if (!admitted) return done();
      const counted = countedByAddress.get(request);
      if (counted) byAddress?.giveBack(counted.client, counted.at);
      if (!bySession) return done();
      // A call that presents the session's secret has a budget apart from those that only name the
      // session: whoever learnt a session id (it is in the page's URL) cannot spend the wallet's.
      const decision = bySession.take(`${call.nonce || call.token ? 'wallet' : 'page'}:${call.sessionId}`);
      showFigures(reply, decision);
      done(decision.allowed ? undefined : rateLimited('Too many requests for this session', decision, ''));
    }, done);
  });
}

function showFigures(reply: FastifyReply, shown: RateLimitDecision): void {
  reply.header('ratelimit-limit', String(shown.limit));
  reply.header('ratelimit-remaining', String(shown.remaining));
  reply.header('ratelimit-reset', String(shown.resetSeconds));
}

function rateLimited(what: string, refused: RateLimitDecision & { allowed: false }, where: string): ApiError {
  return new ApiError(
    'rate_limited',
    `${what}: at most ${refused.limit} a minute${where}. Retry in ${refused.retryAfterSeconds} s.`,
    { retryAfterSeconds: refused.retryAfterSeconds },
  );
}

/** Of the budgets counted, the one with the fewest requests left (the general one on a tie). */
function tightest(first: RateLimitDecision | undefined, second: RateLimitDecision | undefined): RateLimitDecision {
  if (!first) return second!;
  if (!second) return first;
  return second.remaining < first.remaining ? second : first;
}

type Parts = { params?: unknown; query?: unknown; body?: unknown };
const field = (part: unknown, name: string): string | undefined => {
  const value = (part as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * The route options of a session's public route (`rateLimit: 'session'`): where its session id
 * and its secret are (path parameter `sessionId` unless said otherwise; nonce or token in the
 * query or the body), read once the request is validated.
 */
export function limitedPerSession(where: {
  sessionId?: 'params' | 'body';
  nonce?: 'query' | 'body';
  token?: 'query';
}): { rateLimit: 'session'; sessionCall: (request: FastifyRequest) => SessionCall } {
  return {
    rateLimit: 'session',
    sessionCall: (request) => {
      const parts = request as Parts;
      const call: SessionCall = { sessionId: field(parts[where.sessionId ?? 'params'], 'sessionId') ?? '' };
      // A route that takes a secret always names one: a missing one is a wrong one.
      if (where.nonce) call.nonce = field(parts[where.nonce], 'nonce') ?? '';
      if (where.token) call.token = field(parts[where.token], 'token') ?? '';
      return call;
    },
  };
}
