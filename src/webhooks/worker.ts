import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Dispatcher } from 'undici';
import { BoundedCache } from '../domain/bounded-cache.ts';
import { ClaimPlanner, type ClaimResult, type ClaimTicket } from '../domain/claim-plan.ts';
import { noMetrics } from '../domain/metrics.ts';
import { claimDueDeliveries, type ClaimedDelivery, type ClaimRequest } from '../store/webhook-deliveries/claim.ts';
import { refillStrategyOf } from '../store/webhook-deliveries/record-and-claim.ts';
import type { PendingRecord } from '../store/webhook-deliveries/recording.ts';
import { AttemptRecorder, type ClaimWithRecording } from './attempt-recorder.ts';
import { EndpointSends } from './endpoint-sends.ts';
import { TakenSlots } from './taken-slots.ts';
import { attemptDelivery, type AttemptContext } from './attempt.ts';
import { LeaseKeeper } from './leases.ts';
import { endpointSignalOf } from './sender.ts';
import { createGuardedDispatcher } from '../outbound/ssrf.ts';
import { listenForDeliveries, WakeSignal, type Listener } from './wake.ts';
import {
  CLAIM_BACKOFF_MAX_MS,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_MAX_PER_ENDPOINT,
  DEFAULT_POLL_INTERVAL_MS,
  URL_CHECKS_REMEMBERED,
  claimPolicyOf,
  runSummary,
  type DeliveryOutcome,
  type DeliveryWorkerOptions,
  type RunSummary,
  type WorkerLog,
  type WorkerState,
} from './worker-options.ts';

export * from './worker-options.ts';

/**
 * The delivery worker (docs/webhooks.md): claims due deliveries in batches under a short lease that a
 * heartbeat renews while they are in flight (leases.ts) and attempts them concurrently (attempt.ts:
 * signed, sent through the SSRF-guarded dispatcher with keep-alive connections per origin, the
 * retry scheduled, recorded in batches by attempt-recorder.ts). Claims are fair, by the
 * plan of domain/claim-plan.ts: each endpoint's oldest due deliveries round-robin across
 * organizations and endpoints, at most `maxPerEndpoint` in flight to one endpoint, one to an
 * endpoint whose last attempt timed out until it answers again, and the last slots kept for
 * endpoints with little in flight, so slow or silent endpoints of some organizations cannot hold
 * the slots the others need. When to claim (which wake-ups to skip, when a freed slot wakes the
 * loop, when to look past an endpoint at its cap) is the ClaimPlanner's, in the same file; this
 * class does the I/O. How it refills as sends finish is its dialect's RefillStrategy
 * (store/webhook-deliveries/record-and-claim.ts): on PostgreSQL the claim that a recording's freed
 * slots call for rides in that recording's statement (claim-with-recording); elsewhere the loop
 * claims once the recording is done. Either way claims are made one at a time. Any number of
 * workers may run against one database; a crashed worker's deliveries are claimed again once their
 * lease runs out, so nothing is lost (a delivery may arrive twice).
 *
 * States: `idle` (built, or only stepped with runOnce) → `running` (start) → `stopping` (stop:
 * no new claims, in-flight sends finish, deliveries claimed ahead and unsent are given back) →
 * `stopped`.
 */

const silent: WorkerLog = { info: () => {}, warn: () => {}, error: () => {} };

export class DeliveryWorker {
  readonly workerId: string;
  #state: WorkerState = 'idle';
  readonly #options: DeliveryWorkerOptions;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #log: WorkerLog;
  readonly #maxInFlight: number;
  /** At most `maxPerEndpoint` sent to one endpoint at once, however many are claimed. */
  readonly #sends: EndpointSends;
  /** The claim bookkeeping: slots, caps, timeouts, and when to claim (domain/claim-plan.ts). */
  readonly #planner: ClaimPlanner;
  readonly #signal: WakeSignal;
  readonly #leases: LeaseKeeper;
  readonly #recorder: AttemptRecorder;
  /** What each attempt sends with, records through and reports to (attempt.ts). */
  readonly #attempts: AttemptContext;
  #unsubscribe: (() => void) | undefined;
  readonly #inFlight = new Set<Promise<DeliveryOutcome>>();
  #loop: Promise<void> | undefined;
  /** Claims failed in a row (the database unreachable): the backoff, and one log line per outage. */
  #claimFailures = 0;
  #listener: Listener | undefined;
  readonly #slots = new TakenSlots();
  /** The loop's claim under way, settled when it is done, failed or not ({@link settled}). */
  #loopClaim: Promise<void> | undefined;
  /** A claim is under way (the loop's, or one riding in a recording): claims are made one at a time. */
  #claiming = false;
  /** The loop wanted to claim while a claim rode in a recording: it claims once that one is done. */
  #loopDeferred = false;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
    this.workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      createGuardedDispatcher({ allowPrivateTargets: options.config.outboundAllowPrivateTargets });
    this.#log = options.log ?? silent;
    this.#maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.#sends = new EndpointSends(options.maxPerEndpoint ?? DEFAULT_MAX_PER_ENDPOINT);
    const refill = options.refill ?? refillStrategyOf(options.store.db);
    this.#planner = new ClaimPlanner(claimPolicyOf(options, refill));
    this.#signal = new WakeSignal(options.clock);
    this.#leases = new LeaseKeeper({
      db: options.store.db,
      clock: options.clock,
      leaseMs: options.config.webhookLeaseSeconds * 1000,
      renewEveryMs: options.leaseRenewalMs,
      log: this.#log,
    });
    this.#recorder = new AttemptRecorder({
      db: options.store.db,
      clock: options.clock,
      ...(refill === 'claim-with-recording'
        ? { claims: { beforeWrite: (records) => this.#claimWithRecording(records) } }
        : {}),
    });
    this.#attempts = {
      clock: options.clock,
      config: options.config,
      dispatcher: this.#dispatcher,
      recorder: this.#recorder,
      workerId: this.workerId,
      log: this.#log,
      random: options.random ?? Math.random,
      timeoutMs: options.timeoutMs,
      onSent: (delivery, result) => {
        this.#sends.end(delivery);
        // A timeout narrows the endpoint to one send at a time (ClaimPlanner.observe).
        this.#planner.observe(delivery.endpoint.id, endpointSignalOf(result));
      },
      // The policy is this worker's for its whole life: a URL's verdict under it does not change.
      urlRefusals: new BoundedCache(URL_CHECKS_REMEMBERED),
    };
  }

  get state(): WorkerState {
    return this.#state;
  }

  /**
   * One step, for tests and tools: claims up to `limit` due deliveries (fairly, at most
   * `maxPerEndpoint` per endpoint), sends them all, records every attempt. Time is the injected
   * clock's: a retry scheduled 10 s ahead is due once the clock has moved 10 s, and the leases of
   * the sends in flight are renewed as the clock passes each heartbeat.
   */
  async runOnce(limit = this.#maxInFlight): Promise<RunSummary> {
    if (this.#state === 'running' || this.#state === 'stopping')
      throw new Error('runOnce() is for a worker that is not started');
    const claimed: ClaimedDelivery[] = [];
    const sends: Promise<DeliveryOutcome>[] = [];
    // Claim again after a full batch (the plan held it short of the reserve: more may be due to
    // endpoints with little in flight), or one in which an endpoint reached its cap.
    for (let more = true; more && claimed.length < limit;) {
      const { batch, capped, full } = await this.#claim(this.#planner.stepClaim(limit - claimed.length));
      claimed.push(...batch);
      sends.push(...batch.map((delivery) => this.#deliver(delivery)));
      more = batch.length > 0 && (capped || full);
    }
    return runSummary(claimed.length, await Promise.all(sends));
  }

  /** Starts the loop: claims whenever woken, when a slot frees up, and every poll interval. */
  async start(): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`cannot start a ${this.#state} worker`);
    this.#state = 'running';
    const { store } = this.#options;
    // A commit in this process that names its endpoints just made deliveries due: the claim need
    // not first read whether anything is.
    this.#unsubscribe = this.#options.wakeups?.subscribe((endpointIds) => {
      if (this.#planner.wake(endpointIds, { committed: true })) this.#signal.notify();
    });
    if (store.capabilities.listenNotify && store.pgPool) {
      // The echo of a commit announced on this worker's own wake-ups woke it in process already.
      const own = this.#options.wakeups?.origin;
      this.#listener = await listenForDeliveries(
        store.pgPool,
        ({ endpointIds, origin }) => {
          if (origin === undefined || origin !== own) this.wake(endpointIds);
        },
        this.#log,
      );
    }
    this.#loop = this.#run();
    this.#log.info({ workerId: this.workerId }, 'webhook delivery worker started');
  }

  /**
   * New deliveries were committed: look now rather than at the next poll. When they are all for
   * endpoints this worker has at their cap (`endpointIds`), it need not look (ClaimPlanner.wake):
   * under a burst to one endpoint that look read its whole due queue on every commit.
   */
  wake(endpointIds?: ReadonlySet<string>): boolean {
    if (!this.#planner.wake(endpointIds)) return false;
    this.#signal.notify();
    return true;
  }

  /**
   * Stops claiming and waits for the sends in flight to finish and be recorded. Deliveries claimed
   * ahead and not sent yet are given back, due at once, for another worker (or this one's
   * successor): a stop waits for one round of sends, not for those queued behind them.
   */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    const wasRunning = this.#state === 'running';
    this.#state = 'stopping';
    this.#sends.close();
    this.#unsubscribe?.();
    this.#signal.notify();
    await this.#listener?.close();
    await this.#loop;
    // A claim that rode in a recording under way adds sends: wait until none is left.
    while (this.#inFlight.size > 0) {
      await Promise.allSettled([...this.#inFlight]);
      await this.settled();
    }
    await this.settled();
    this.#leases.close();
    if (this.#ownsDispatcher) await this.#dispatcher.close();
    this.#state = 'stopped';
    if (wasRunning) this.#log.info({ workerId: this.workerId }, 'webhook delivery worker stopped');
  }

  /**
   * Waits for the loop's claim, the lease renewal and the recording under way: for tests that step
   * the clock and then look at the database. Once the loop's claim is done the loop waits on the
   * clock from the time it had then (a step of the clock before that would be measured from the
   * stepped time).
   */
  async settled(): Promise<void> {
    while (this.#loopClaim) await this.#loopClaim;
    await this.#leases.settled();
    await this.#recorder.settled();
  }

  async #run(): Promise<void> {
    const pollMs = this.#options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    const { clock } = this.#options;
    while (this.#state === 'running') {
      let more = false;
      let waitMs = pollMs;
      // A claim riding in a recording is under way: claim (if still called for) once it is done.
      if (this.#claiming) this.#loopDeferred = true;
      const ticket = this.#claiming ? undefined : this.#planner.nextLoopClaim(clock.now().getTime());
      if (ticket) {
        this.#claiming = true;
        try {
          const claim = this.#claim(ticket);
          this.#loopClaim = claim.then(
            () => undefined,
            () => undefined,
          );
          const { batch, ...result } = await claim;
          for (const delivery of batch) this.#track(this.#deliver(delivery));
          ({ more, waitMs } = this.#planner.settle(ticket, result, clock.now().getTime(), pollMs));
          if (this.#claimFailures > 0) {
            this.#log.info({ failedClaims: this.#claimFailures }, 'claiming webhook deliveries works again');
            this.#claimFailures = 0;
          }
        } catch (err) {
          // The database is unreachable or busy: back off (to at most CLAIM_BACKOFF_MAX_MS, so
          // delivery resumes soon after it is back) and try again. One line per outage.
          this.#claimFailures++;
          if (this.#claimFailures === 1) this.#log.error({ err }, 'claiming webhook deliveries failed; retrying');
          waitMs = Math.min(pollMs * 2 ** (this.#claimFailures - 1), Math.max(pollMs, CLAIM_BACKOFF_MAX_MS));
        } finally {
          this.#claiming = false;
          this.#loopClaim = undefined;
        }
      }
      if (more && this.#planner.hasRoom) continue;
      await this.#signal.wait(waitMs);
    }
  }

  #track(send: Promise<DeliveryOutcome>): void {
    this.#inFlight.add(send);
    void send.finally(() => this.#inFlight.delete(send));
  }

  /**
   * Makes the claim of `ticket` (planned by the ClaimPlanner) and takes its slots: leases held
   * (renewed by the heartbeat), endpoint counts.
   */
  async #claim(ticket: ClaimTicket): Promise<{ batch: ClaimedDelivery[] } & ClaimResult> {
    if (ticket.plan.limit === 0) return { batch: [], ...this.#planner.claimed(ticket, []) };
    const request = this.#claimRequest(ticket);
    const batch = await claimDueDeliveries(this.#options.store.db, request);
    return { batch, ...this.#took(ticket, request.token, batch) };
  }

  /** The claim of `ticket` now, under a lease token of its own. */
  #claimRequest(ticket: ClaimTicket): ClaimRequest {
    const { plan } = ticket;
    const now = this.#options.clock.now();
    return {
      now: now.toISOString(),
      leaseUntil: this.#leases.leaseUntil(now),
      token: randomBytes(12).toString('base64url'),
      limit: plan.limit,
      perEndpoint: plan.perEndpoint,
      allowances: plan.allowances,
      knownDue: ticket.knownDue,
    };
  }

  /** The claim of `ticket` under `token` took `batch`: their slots and leases are taken. */
  #took(ticket: ClaimTicket, token: string, batch: ClaimedDelivery[]): ClaimResult {
    this.#leases.hold(token, batch.length);
    this.#slots.take(batch);
    return this.#planner.claimed(
      ticket,
      batch.map((d) => d.endpoint.id),
    );
  }

  /**
   * The claim-with-recording refill: the attempts of `records` are about to be written, so their
   * slots are free; when that calls for a claim and none is under way, it rides in their
   * statement, planned with those slots free. Its deliveries are sent as soon as it returns, before
   * the batch's own callers go on.
   */
  #claimWithRecording(records: readonly PendingRecord[]): ClaimWithRecording | undefined {
    const endpointIds: string[] = [];
    for (const { token, deliveryId } of records) {
      const delivery = this.#slots.free(token, deliveryId);
      if (delivery) endpointIds.push(delivery.endpoint.id);
    }
    const running = this.#state === 'running';
    if (!running || this.#claiming) {
      // The loop claims (after the claim under way), as when a recorded delivery frees its slot.
      let wake = false;
      for (const endpointId of endpointIds) wake = this.#planner.release(endpointId, running) || wake;
      if (wake) this.#signal.notify();
      return undefined;
    }
    const pollMs = this.#options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    const { clock } = this.#options;
    const ticket = this.#planner.releaseForRecording(endpointIds, clock.now().getTime());
    if (!ticket) return undefined;
    this.#claiming = true;
    const request = this.#claimRequest(ticket);
    return {
      request,
      took: (batch) => {
        this.#claiming = false;
        const result = this.#took(ticket, request.token, batch);
        for (const delivery of batch) this.#track(this.#deliver(delivery));
        const { more } = this.#planner.settle(ticket, result, clock.now().getTime(), pollMs);
        // As the loop goes on after a claim of its own (its wait, if any, ends no later than
        // this claim's would: a look past a capped endpoint it owes is at most a poll interval off).
        if ((more && this.#planner.hasRoom) || this.#loopDeferred) this.#signal.notify();
        this.#loopDeferred = false;
      },
      failed: () => {
        this.#claiming = false;
        this.#loopDeferred = false;
        // The slots are free and nothing was claimed: the loop claims (or backs off if the database is down).
        this.#signal.notify();
      },
    };
  }

  /**
   * The delivery is recorded (or given up): its lease needs no renewal, its slot is free (unless
   * freed already, when its attempt went to a recording that may claim with it).
   */
  #release(delivery: ClaimedDelivery): void {
    this.#leases.release(delivery.leaseToken);
    if (!this.#slots.free(delivery.leaseToken, delivery.id)) return;
    if (this.#planner.release(delivery.endpoint.id, this.#state === 'running')) this.#signal.notify();
  }

  /**
   * Sends one claimed delivery and records the attempt, or gives it back unsent when the worker
   * stops before a send of its endpoint is free. Never rejects.
   */
  async #deliver(delivery: ClaimedDelivery): Promise<DeliveryOutcome> {
    let outcome: DeliveryOutcome;
    try {
      const turn = this.#sends.start(delivery);
      outcome =
        turn === undefined || (await turn)
          ? await attemptDelivery(delivery, this.#attempts)
          : await this.#leases.giveBack(delivery).then(() => 'returned' as const);
    } catch (err) {
      // Recording failed (database trouble): the lease runs out and another attempt follows.
      this.#log.error({ err, deliveryId: delivery.id }, 'webhook delivery could not be recorded');
      outcome = 'lost';
    } finally {
      this.#sends.end(delivery);
      this.#release(delivery);
    }
    // A delivery given back made no attempt.
    if (outcome !== 'returned') (this.#options.metrics ?? noMetrics).webhookDelivery({ result: outcome });
    return outcome;
  }
}
