/**
 * The delivery worker's settings and defaults (worker.ts): how many deliveries it keeps in flight,
 * to one endpoint and to one that timed out, how often it polls, where it logs and counts.
 */
import type { Dispatcher } from 'undici';
import type { Config } from '../config.ts';
import { claimPolicy, type ClaimPolicy } from '../domain/claim-plan.ts';
import type { Clock } from '../domain/clock.ts';
import type { MetricsRecorder } from '../domain/metrics.ts';
import type { Store } from '../store/db.ts';
import type { RefillStrategy } from '../store/webhook-deliveries/record-and-claim.ts';
import type { DeliveryWakeups } from './wake.ts';
import type { Outcome } from './attempt.ts';

export type WorkerState = 'idle' | 'running' | 'stopping' | 'stopped';

/** At most this many deliveries in flight per worker. */
export const DEFAULT_MAX_IN_FLIGHT = 64;
/** At most this many in flight to one endpoint per worker: a slow receiver cannot take all slots. */
export const DEFAULT_MAX_PER_ENDPOINT = 16;
/**
 * How many more deliveries to an answering endpoint a worker claims beyond those it sends to it at
 * once: they wait in the worker and go as its sends end, not a claim's round trip later.
 */
export const DEFAULT_CLAIM_AHEAD_PER_ENDPOINT = 16;
/** At most this many in flight to an endpoint whose last attempt timed out, until one is answered. */
export const DEFAULT_MAX_PER_TIMED_OUT_ENDPOINT = 1;
/** How often a worker looks for due deliveries when nothing wakes it (retries coming due). */
export const DEFAULT_POLL_INTERVAL_MS = 1_000;
/** How many endpoint URLs' shape checks a worker remembers (the least recently used is forgotten). */
export const URL_CHECKS_REMEMBERED = 10_000;
/** Longest wait between claims while the database fails them. */
export const CLAIM_BACKOFF_MAX_MS = 2_000;

export interface WorkerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DeliveryWorkerOptions {
  store: Pick<Store, 'db' | 'capabilities' | 'pgPool'>;
  /** Time, and the timers of the poll and of each attempt's timeout. */
  clock: Clock;
  /** This process's wake-ups (ServiceDeps.wakeups): a commit that enqueued deliveries wakes the worker. */
  wakeups?: DeliveryWakeups;
  config: Pick<Config, 'webhookRetrySchedule' | 'outboundAllowPrivateTargets' | 'webhookLeaseSeconds'>;
  /** Jitter source in [0, 1); Math.random by default. */
  random?: () => number;
  /** Defaults to an SSRF-guarded dispatcher under the configured policy (closed on stop). */
  dispatcher?: Dispatcher;
  log?: WorkerLog;
  /** Counts every attempt by result (ServiceDeps.metrics); records nothing by default. */
  metrics?: MetricsRecorder;
  /** Names this worker in the attempt log; defaults to host/pid/random. */
  workerId?: string;
  maxInFlight?: number;
  /** At most this many in flight to one endpoint ({@link DEFAULT_MAX_PER_ENDPOINT}). */
  maxPerEndpoint?: number;
  /** Claimed ahead per answering endpoint ({@link DEFAULT_CLAIM_AHEAD_PER_ENDPOINT}; 0: none). */
  claimAheadPerEndpoint?: number;
  /** At most this many to an endpoint whose last attempt timed out ({@link DEFAULT_MAX_PER_TIMED_OUT_ENDPOINT}). */
  maxPerTimedOutEndpoint?: number;
  pollIntervalMs?: number;
  /** How often the leases of deliveries in flight are renewed; a third of the lease by default. */
  leaseRenewalMs?: number;
  /** Per-attempt budget; 10 s by default (docs/webhooks.md). */
  timeoutMs?: number;
  /** How the worker claims again as sends finish; its dialect's by default (refillStrategyOf). */
  refill?: RefillStrategy;
}

/** What one {@link DeliveryWorker.runOnce} did. */
export interface RunSummary {
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
  /** Sent, but the lease was lost or the endpoint deleted meanwhile: not recorded. */
  lost: number;
}

/** What became of one claimed delivery: its attempt's outcome, or `returned`, given back unsent as the worker stopped. */
export type DeliveryOutcome = Outcome | 'returned';

/** The summary of a step that claimed `claimed` deliveries and ended with `outcomes`. */
export function runSummary(claimed: number, outcomes: readonly DeliveryOutcome[]): RunSummary {
  const count = (o: Outcome) => outcomes.filter((x) => x === o).length;
  return {
    claimed,
    succeeded: count('succeeded'),
    retrying: count('retrying'),
    failed: count('failed'),
    lost: count('lost'),
  };
}

/**
 * The claim policy of a worker built with `options`, whose refill is `refill`: the defaults above
 * where an option is absent, and deliveries claimed ahead only where the refill rides in a
 * recording (a round trip, on PostgreSQL).
 */
export function claimPolicyOf(options: DeliveryWorkerOptions, refill: RefillStrategy): ClaimPolicy {
  return claimPolicy({
    maxInFlight: options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
    maxPerEndpoint: options.maxPerEndpoint ?? DEFAULT_MAX_PER_ENDPOINT,
    maxPerTimedOutEndpoint: options.maxPerTimedOutEndpoint ?? DEFAULT_MAX_PER_TIMED_OUT_ENDPOINT,
    claimAhead:
      options.claimAheadPerEndpoint ?? (refill === 'claim-with-recording' ? DEFAULT_CLAIM_AHEAD_PER_ENDPOINT : 0),
  });
}
