/**
 * What a delivery worker may claim next: the policy of its claims, apart from the SQL that makes
 * them (store/webhook-deliveries/claim.ts claimDueDeliveries) and from the loop that calls it
 * (webhooks/worker.ts). A pure function of the worker's load, tested without a database.
 *
 * The claim itself ranks each endpoint's oldest due deliveries round-robin, across organizations
 * and then across each organization's endpoints, up to each endpoint's allowance. The plan says
 * what those allowances are and how many the claim may take:
 *
 * - an endpoint has at most `maxPerEndpoint` in flight from one worker;
 * - an endpoint whose last attempt timed out has at most `maxPerTimedOutEndpoint` (one) until one
 *   of its attempts is answered: a receiver that accepts connections and never answers holds one
 *   slot per lease, not sixteen;
 * - the last `reserve` free slots of a worker go only to endpoints with fewer than `laneWidth` in
 *   flight: before anything has timed out, slow endpoints together can hold all but those slots,
 *   so another tenant's delivery is claimed at once however many of them there are.
 */

export interface ClaimPolicy {
  /** At most this many deliveries in flight per worker. */
  maxInFlight: number;
  /** At most this many in flight to one endpoint. */
  maxPerEndpoint: number;
  /** At most this many in flight to an endpoint whose last finished attempt timed out. */
  maxPerTimedOutEndpoint: number;
  /** Free slots kept for endpoints with fewer than `laneWidth` in flight. */
  reserve: number;
  /** An endpoint with fewer than this many in flight may take a reserved slot. */
  laneWidth: number;
}

/** The default policy for a worker of `maxInFlight` slots and `maxPerEndpoint` per endpoint. */
export function claimPolicy(options: {
  maxInFlight: number;
  maxPerEndpoint: number;
  maxPerTimedOutEndpoint?: number;
}): ClaimPolicy {
  const { maxInFlight, maxPerEndpoint } = options;
  return {
    maxInFlight,
    maxPerEndpoint,
    maxPerTimedOutEndpoint: Math.min(options.maxPerTimedOutEndpoint ?? 1, maxPerEndpoint),
    // An eighth: 8 of 64. The refill of a saturated worker comes once a quarter is free, so a
    // refill always has slots beyond the reserve to give.
    reserve: Math.floor(maxInFlight / 8),
    laneWidth: Math.min(2, maxPerEndpoint),
  };
}

/** What the worker has in flight, and what it has seen of its endpoints. */
export interface WorkerLoad {
  /** Deliveries in flight, in all. */
  active: number;
  /** Deliveries in flight by endpoint id (absent: none). */
  perEndpoint: ReadonlyMap<string, number>;
  /** Endpoints whose last finished attempt timed out, and none answered since. */
  timedOut: ReadonlySet<string>;
}

/** One claim's limits, as claimDueDeliveries takes them. */
export interface ClaimPlan {
  /** How many deliveries the claim may take (0: do not claim). */
  limit: number;
  /** How many an endpoint not in `allowances` may get. */
  perEndpoint: number;
  /** How many more each listed endpoint may get (0: none). */
  allowances: Map<string, number>;
  /** The claim is held to the reserve: only endpoints below the lane width may take a slot. */
  reserved: boolean;
  /** The most an endpoint may have in flight under this plan (its cap, for the refill that follows). */
  capOf(endpointId: string): number;
}

/**
 * The plan of the next claim for a worker under `load`, taking at most `want` deliveries (the
 * caller's own bound, e.g. a test's step).
 */
export function planClaim(policy: ClaimPolicy, load: WorkerLoad, want = Infinity): ClaimPlan {
  const free = Math.max(0, policy.maxInFlight - load.active);
  const reserved = free <= policy.reserve;
  const limit = Math.max(0, Math.min(want, reserved ? free : free - policy.reserve));
  const perEndpoint = reserved ? policy.laneWidth : policy.maxPerEndpoint;
  const capOf = (endpointId: string) =>
    Math.min(perEndpoint, load.timedOut.has(endpointId) ? policy.maxPerTimedOutEndpoint : policy.maxPerEndpoint);
  const allowances = new Map<string, number>();
  for (const endpointId of new Set([...load.perEndpoint.keys(), ...load.timedOut])) {
    const allowance = Math.max(0, capOf(endpointId) - (load.perEndpoint.get(endpointId) ?? 0));
    if (allowance !== perEndpoint) allowances.set(endpointId, allowance);
  }
  return { limit, perEndpoint, allowances, reserved, capOf };
}
