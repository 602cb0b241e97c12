import type { Dispatcher } from 'undici';
import type { Clock, TimerHandle } from '../domain/clock.ts';
import type { EventEnvelope, EventType } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import { envelopeBody } from '../webhooks/delivery-policy.ts';
import { buildDeliveryHeaders, sendWebhook, type SendResult } from '../webhooks/sender.ts';
import { signPayload, signStandardWebhook, unixSeconds } from '../webhooks/signature.ts';
import { ApiRequestError, type ApiClient } from './api-client.ts';

/**
 * Following an organization's events through the HTTP events API, for `matricula listen` and
 * `matricula events tail`: no database, no public URL.
 *
 * The API lists events newest first with a `startingAfter` cursor. Each poll walks back from the
 * newest event until it reaches events older than the newest one seen minus a look-back window,
 * and hands on those not seen yet, oldest first. The window (30 s by default) catches an event
 * whose id is older than one already seen (two in the same millisecond, or a transaction that
 * committed late); the ids seen within it are remembered. A poll that fails changes nothing, so
 * the next one resumes where the last good one stopped.
 */

interface EventPage {
  data: EventEnvelope[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

export interface EventFollowerOptions {
  api: ApiClient;
  /** Only this application's events. */
  appId?: string;
  /** Only these event types (all when absent). */
  events?: readonly EventType[];
  lookbackMs?: number;
  pageSize?: number;
}

export const DEFAULT_LOOKBACK_MS = 30_000;

export class EventFollower {
  readonly #options: EventFollowerOptions;
  /** Event id → createdAt (ms) of the events seen within the look-back window. */
  readonly #seen = new Map<string, number>();
  /** createdAt (ms) of the newest event seen; null before any. */
  #newest: number | null = null;
  #primed = false;

  constructor(options: EventFollowerOptions) {
    this.#options = options;
  }

  get primed(): boolean {
    return this.#primed;
  }

  /**
   * The events that appeared since the last poll, oldest first. The first call only notes what
   * exists (following starts now) and returns nothing.
   * @throws ApiUnavailableError (try again later) or ApiRequestError (give up).
   */
  async poll(): Promise<EventEnvelope[]> {
    const lookback = this.#options.lookbackMs ?? DEFAULT_LOOKBACK_MS;
    const cutoff = this.#newest === null ? -Infinity : this.#newest - lookback;
    const fresh: Array<{ event: EventEnvelope; at: number }> = [];
    let cursor: string | undefined;
    scan: for (;;) {
      const page = await this.#options.api.get<EventPage>('/org/v1/events', {
        appId: this.#options.appId,
        limit: String(this.#options.pageSize ?? 100),
        startingAfter: cursor,
      });
      for (const event of page.data) {
        const at = Date.parse(event.createdAt);
        if (at < cutoff) break scan;
        if (!this.#seen.has(event.id)) fresh.push({ event, at });
      }
      if (!page.pagination.hasMore || page.pagination.nextCursor === null) break;
      cursor = page.pagination.nextCursor;
    }
    // The whole scan succeeded: only now is anything marked as seen.
    for (const { event, at } of fresh) {
      this.#seen.set(event.id, at);
      if (this.#newest === null || at > this.#newest) this.#newest = at;
    }
    if (this.#newest !== null) {
      for (const [id, at] of this.#seen) if (at < this.#newest - lookback) this.#seen.delete(id);
    }
    const wasPrimed = this.#primed;
    this.#primed = true;
    if (!wasPrimed) return [];
    const wanted = this.#options.events;
    return fresh
      .map(({ event }) => event)
      .reverse()
      .filter((event) => wanted === undefined || wanted.includes(event.event));
  }
}

/** Sends `event` to `url` signed with `secret` exactly as a real delivery is (both header schemes). */
export function forwardEvent(
  event: EventEnvelope,
  options: { url: string; secret: string; dispatcher: Dispatcher; clock: Clock; timeoutMs?: number },
): Promise<SendResult> {
  const { clock } = options;
  const body = envelopeBody(event);
  const timestamp = unixSeconds(clock.now());
  const headers = buildDeliveryHeaders({
    eventName: event.event,
    deliveryId: newId('delivery', clock),
    attempt: 1,
    signature: signPayload(body, [options.secret], timestamp),
    standard: { id: event.id, timestamp, signature: signStandardWebhook(event.id, body, [options.secret], timestamp) },
  });
  return sendWebhook({
    url: options.url,
    body,
    headers,
    dispatcher: options.dispatcher,
    clock,
    timeoutMs: options.timeoutMs,
  });
}

export interface PollLoopOptions {
  follower: EventFollower;
  clock: Clock;
  /** Handles the new events of one poll, in order. */
  onEvents(events: EventEnvelope[]): Promise<void>;
  /** A poll failed and will be tried again in `retryInMs`. */
  onUnavailable?(error: Error, retryInMs: number): void;
  /** A poll succeeded after failures. */
  onRecovered?(): void;
  /** The first successful poll: following from now. */
  onReady?(): void;
  pollIntervalMs?: number;
  maxBackoffMs?: number;
}

export const DEFAULT_POLL_INTERVAL_MS = 2_000;
export const DEFAULT_MAX_BACKOFF_MS = 30_000;

/** The outcome of one step: the events handled, or the failure and when the next try is due. */
export type StepResult = { ok: true; events: number } | { ok: false; error: Error; retryInMs: number };

/**
 * Polls on the clock: every `pollIntervalMs`, or after a failure with a doubling delay from one
 * second up to `maxBackoffMs`. `step()` is one poll, for tests; `run()` loops until `stop()` and
 * rejects only for an error trying again will not fix (a revoked key, a 403).
 */
export class PollLoop {
  readonly #options: PollLoopOptions;
  #failures = 0;
  #stopped = false;
  #timer: TimerHandle | undefined;
  #wake: (() => void) | undefined;

  constructor(options: PollLoopOptions) {
    this.#options = options;
  }

  async step(): Promise<StepResult> {
    const { follower } = this.#options;
    let events: EventEnvelope[];
    const wasPrimed = follower.primed;
    try {
      events = await follower.poll();
    } catch (err) {
      if (err instanceof ApiRequestError || !(err instanceof Error)) throw err;
      this.#failures += 1;
      const maxBackoff = this.#options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
      const retryInMs = Math.min(1000 * 2 ** (this.#failures - 1), maxBackoff);
      this.#options.onUnavailable?.(err, retryInMs);
      return { ok: false, error: err, retryInMs };
    }
    if (this.#failures > 0) this.#options.onRecovered?.();
    this.#failures = 0;
    if (!wasPrimed) this.#options.onReady?.();
    await this.#options.onEvents(events);
    return { ok: true, events: events.length };
  }

  async run(): Promise<void> {
    const interval = this.#options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    while (!this.#stopped) {
      const result = await this.step();
      if (this.#stopped) break;
      await this.#sleep(result.ok ? interval : result.retryInMs);
    }
  }

  /** Ends run() after the step under way, if any. */
  stop(): void {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    this.#wake?.();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = this.#options.clock.setTimeout(resolve, ms);
    });
  }
}
