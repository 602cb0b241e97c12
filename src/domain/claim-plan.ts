/**
 * What a delivery worker may claim next: the policy of its claims, apart from the SQL that makes
 * them (store/webhook-deliveries/claim.ts claimDueDeliveries) and from the loop that calls it
 * (webhooks/worker.ts). A pure function of the worker's load, tested without a database.
 *
 * The claim itself ranks each endpoint's oldest due deliveries round-robin, across organizations
 * and then across each organization's endpoints, up to each endpoint's allowance. The plan says
 * what those allowances are and how many the claim may take:
 *
 * - an endpoint has at most `maxPerEndpoint` in flight from one worker, and one whose last attempt
 *   was answered `claimAhead` more claimed: they wait in the worker for one of its sends to end,
 *   so that the next send starts then, not a claim's round trip later;
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
  /**
   * How many more an answering endpoint may have claimed, beyond `maxPerEndpoint`: claimed ahead,
   * they wait in the worker for a send of that endpoint to end.
   */
  claimAhead: number;
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
  claimAhead?: number;
}): ClaimPolicy {
  const { maxInFlight, maxPerEndpoint } = options;
  return {
    maxInFlight,
    maxPerEndpoint,
    claimAhead: options.claimAhead ?? 0,
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
  /** Endpoints whose last finished attempt was answered, the most recent few (none: no claim ahead). */
  answering?: ReadonlySet<string>;
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
  const ahead = !reserved && policy.claimAhead > 0 ? (load.answering ?? new Set<string>()) : new Set<string>();
  const capOf = (endpointId: string) =>
    load.timedOut.has(endpointId)
      ? Math.min(perEndpoint, policy.maxPerTimedOutEndpoint)
      : ahead.has(endpointId)
        ? policy.maxPerEndpoint + policy.claimAhead
        : perEndpoint;
  const allowances = new Map<string, number>();
  for (const endpointId of new Set([...load.perEndpoint.keys(), ...load.timedOut, ...ahead])) {
    const allowance = Math.max(0, capOf(endpointId) - (load.perEndpoint.get(endpointId) ?? 0));
    if (allowance !== perEndpoint) allowances.set(endpointId, allowance);
  }
  return { limit, perEndpoint, allowances, reserved, capOf };
}

/** What a finished attempt says of its endpoint: it timed out, it was answered (any status), or neither. */
export type EndpointSignal = 'timed-out' | 'answered' | 'unanswered';

/** One claim about to be made: its plan, and what the planner needs to judge its result. */
export interface ClaimTicket {
  readonly plan: ClaimPlan;
  /** Deliveries are known to be due: the claim may skip the read that only checks whether any are. */
  readonly knownDue: boolean;
  /** The counts per endpoint the claim was made with (sends that finish meanwhile must not hide a cap reached). */
  readonly busy: Map<string, number>;
  /** The loop's claim (not a step): its result moves the loop's state on (see {@link ClaimPlanner.settle}). */
  readonly loop?: { at: number; pastCapped: boolean; wakeUps: number };
}

/** What a claim's batch did to the plan. */
export interface ClaimResult {
  /** An endpoint reached its cap in this batch. */
  capped: boolean;
  /** The batch is as large as the plan allowed. */
  full: boolean;
  /** The plan held the claim to the reserve. */
  reserved: boolean;
}

/** How many endpoints whose last attempt timed out a planner remembers (the oldest is forgotten first). */
export const TIMED_OUT_REMEMBERED = 10_000;

/**
 * The claim bookkeeping of one delivery worker, without I/O (times are numbers given by the caller,
 * in ms): what it has in flight, which endpoints are at their cap or timed out, and from that when
 * the loop claims and what a claim may take.
 *
 * - A claim that takes an endpoint to its cap marks it capped; the loop claims for it again once
 *   half of that cap is free ({@link release}), and a wake-up naming only capped endpoints is
 *   skipped ({@link wake}).
 * - A claim that took everything the plan allowed leaves the worker saturated: freed slots wake the
 *   loop once a quarter of them is free.
 * - Look-past: a claim made with endpoints at their cap that filled no batch and capped no other
 *   endpoint took everything else that was due. Until a wake-up or a poll interval, a claim that
 *   caps an endpoint again need not look past it (that look reads the capped endpoints' whole
 *   backlog, and under a backlog to one endpoint it followed every refill); the loop waits no
 *   longer than the rest of that interval.
 * - Claim-with-recording: finished sends free their slots as their attempts go to be recorded
 *   ({@link releaseForRecording}), and the refill they call for is planned then, with those slots
 *   free, to be made in the recording's statement.
 */
export class ClaimPlanner {
  readonly policy: ClaimPolicy;
  readonly #timedOutRemembered: number;
  /** Deliveries claimed and not yet released, in all and by endpoint id. */
  #active = 0;
  readonly #perEndpoint = new Map<string, number>();
  /** Endpoints that reached their cap, with that cap. */
  readonly #capped = new Map<string, number>();
  /** Endpoints whose last finished attempt timed out, none answered since (oldest first). */
  readonly #timedOut = new Set<string>();
  /**
   * Endpoints whose last finished attempt was answered, the `maxInFlight` most recent (least
   * recent first): each is an allowance of every claim, so few are kept, as many as can be in flight.
   */
  readonly #answering = new Set<string>();
  /**
   * The last claim took all the plan let it (a claim held to the reserve keeps what the one before
   * it said): more may be due, so freed slots should wake the loop.
   */
  #saturated = false;
  /** Deliveries are known to be due (a wake-up of this process's commit, or a capped endpoint's refill). */
  #knownDue = false;
  /** When a claim with endpoints at their cap found nothing else due (see the class's comment). */
  #nothingElseDueAt: number | undefined;
  /** Counts the wake-ups that cleared {@link #nothingElseDueAt}: a claim under way when one came must not set it again. */
  #wakeUps = 0;

  constructor(policy: ClaimPolicy, options: { timedOutRemembered?: number } = {}) {
    this.policy = policy;
    this.#timedOutRemembered = options.timedOutRemembered ?? TIMED_OUT_REMEMBERED;
  }

  /** Deliveries in flight. */
  get active(): number {
    return this.#active;
  }

  /** Whether a slot is free. */
  get hasRoom(): boolean {
    return this.#active < this.policy.maxInFlight;
  }

  /**
   * New deliveries were committed to `endpointIds` (undefined: not said). @returns whether the loop
   * should look now: not when they are all for endpoints at their cap (claimed for again once half
   * of their sends are done; a claim now would read their whole due queue to find nothing it may
   * take). `committed`: the wake-up of a commit of this process, so the deliveries it names are due.
   */
  wake(endpointIds?: ReadonlySet<string>, options: { committed?: boolean } = {}): boolean {
    if (endpointIds && endpointIds.size > 0 && [...endpointIds].every((id) => this.#capped.has(id))) return false;
    this.#nothingElseDueAt = undefined;
    this.#wakeUps++;
    if (options.committed && endpointIds) this.#knownDue = true;
    return true;
  }

  /**
   * The loop's next claim at `now`, or undefined when no slot is free (the worker is then
   * saturated). Its result goes to {@link claimed}, then {@link settle}.
   */
  nextLoopClaim(now: number): ClaimTicket | undefined {
    if (this.#active >= this.policy.maxInFlight) {
      this.#saturated = true;
      return undefined;
    }
    const knownDue = this.#saturated || this.#knownDue;
    this.#knownDue = false;
    const pastCapped = [...this.#capped].some(([id, cap]) => (this.#perEndpoint.get(id) ?? 0) >= cap);
    return this.#ticket(this.policy.maxInFlight - this.#active, knownDue, {
      at: now,
      pastCapped,
      wakeUps: this.#wakeUps,
    });
  }

  /** A claim of at most `want` outside the loop (a step): it neither uses nor moves the loop's state. */
  stepClaim(want: number): ClaimTicket {
    return this.#ticket(want, false, undefined);
  }

  #ticket(want: number, knownDue: boolean, loop: ClaimTicket['loop']): ClaimTicket {
    const busy = new Map(this.#perEndpoint);
    const plan = planClaim(
      this.policy,
      { active: this.#active, perEndpoint: busy, timedOut: this.#timedOut, answering: this.#answering },
      want,
    );
    // Held to the reserve, an endpoint with its lane's worth in flight or more gets nothing now: it
    // is claimed for again once it is down to half its lane, as one at its cap is (its sends free
    // no reserved slot, and nothing else would wake the loop for its queue).
    if (plan.limit > 0 && plan.reserved)
      for (const [endpointId, n] of busy) {
        const cap = plan.capOf(endpointId);
        if (n >= cap && !this.#capped.has(endpointId)) this.#capped.set(endpointId, cap);
      }
    return { plan, knownDue, busy, ...(loop ? { loop } : {}) };
  }

  /** The claim of `ticket` took deliveries to `endpointIds` (one entry per delivery): their slots are taken. */
  claimed(ticket: ClaimTicket, endpointIds: readonly string[]): ClaimResult {
    const { plan, busy } = ticket;
    this.#active += endpointIds.length;
    let capped = false;
    for (const endpointId of endpointIds) {
      this.#perEndpoint.set(endpointId, (this.#perEndpoint.get(endpointId) ?? 0) + 1);
      busy.set(endpointId, (busy.get(endpointId) ?? 0) + 1);
      const cap = plan.capOf(endpointId);
      if (busy.get(endpointId)! >= cap) {
        this.#capped.set(endpointId, cap);
        capped = true;
      }
    }
    return { capped, full: plan.limit > 0 && endpointIds.length === plan.limit, reserved: plan.reserved };
  }

  /**
   * After the loop's claim of `ticket` (result from {@link claimed}), at `now`: whether to claim again
   * at once, else how long to wait for a wake-up (at most `pollMs`).
   */
  settle(ticket: ClaimTicket, result: ClaimResult, now: number, pollMs: number): { more: boolean; waitMs: number } {
    const { capped, full, reserved } = result;
    // A full batch means more may be due: claim again while slots are free (a batch the plan held
    // short of the reserve is followed by a claim for the endpoints that may use it). A claim held
    // to the reserve says nothing of what the claims before it left due.
    this.#saturated = full || (reserved && this.#saturated);
    const loop = ticket.loop;
    if (loop && loop.pastCapped && !full && !capped && loop.wakeUps === this.#wakeUps) this.#nothingElseDueAt = loop.at;
    const sinceLook = now - (this.#nothingElseDueAt ?? -Infinity);
    const lookedPast = sinceLook < pollMs;
    // A look skipped is a look owed at the end of its interval, whatever woke the loop since.
    return { more: full || (capped && !lookedPast), waitMs: capped && lookedPast ? pollMs - sinceLook : pollMs };
  }

  /**
   * What a finished attempt says of its endpoint: a timeout narrows it to one send at a time (a
   * receiver that never answers holds a slot for the whole timeout), an answer widens it again and
   * lets it be claimed ahead; an attempt that got no answer (no connection) ends the claim ahead.
   */
  observe(endpointId: string, signal: EndpointSignal): void {
    this.#answering.delete(endpointId);
    if (signal === 'timed-out') {
      remember(this.#timedOut, endpointId, this.#timedOutRemembered);
      // Its cap is one from now on: claimed for again once nothing of it is in flight.
      this.#capped.set(endpointId, this.policy.maxPerTimedOutEndpoint);
    } else if (signal === 'answered') {
      this.#timedOut.delete(endpointId);
      if (this.policy.claimAhead > 0) remember(this.#answering, endpointId, this.policy.maxInFlight);
    }
  }

  /**
   * Deliveries to `endpointIds` (one entry per delivery) are done and their attempts about to be
   * recorded: their slots are free from now on, each as {@link release} frees one (a recording
   * that fails gives them up all the same: their leases run out). @returns the loop's next claim,
   * planned with those slots free, when freeing them would wake the loop: the claim to make in the
   * recording's statement instead (the claim-with-recording refill). The caller asks only while
   * the worker runs and no claim of the loop's is under way (claims are made one at a time).
   */
  releaseForRecording(endpointIds: readonly string[], now: number): ClaimTicket | undefined {
    let wake = false;
    for (const endpointId of endpointIds) wake = this.release(endpointId, true) || wake;
    return wake ? this.nextLoopClaim(now) : undefined;
  }

  /**
   * A delivery to `endpointId` is done: its slot is free. @returns whether to wake the loop (only
   * while `running`): it refills in batches, not one slot at a time, once a capped endpoint is down
   * to half its cap, or a saturated worker has a quarter of its slots free.
   */
  release(endpointId: string, running: boolean): boolean {
    this.#active--;
    const left = (this.#perEndpoint.get(endpointId) ?? 1) - 1;
    if (left === 0) this.#perEndpoint.delete(endpointId);
    else this.#perEndpoint.set(endpointId, left);
    if (!running) return false;
    const cap = this.#capped.get(endpointId);
    const endpointRefill = cap !== undefined && left <= Math.floor(cap / 2);
    if (endpointRefill) {
      this.#capped.delete(endpointId);
      this.#knownDue = true;
    }
    const max = this.policy.maxInFlight;
    const workerRefill = this.#saturated && this.#active <= max - Math.ceil(max / 4);
    return endpointRefill || workerRefill;
  }
}

/** Adds `id` to `set` as its newest member, forgetting the oldest beyond `most`. */
function remember(set: Set<string>, id: string, most: number): void {
  set.delete(id);
  set.add(id);
  if (set.size > most) set.delete(set.values().next().value!);
}
