import pg from 'pg';
import { systemClock, type Clock, type TimerHandle } from '../domain/clock.ts';
import { randomBytes } from 'node:crypto';
import { DELIVERY_CHANNEL_EXPRESSION, readWakePayload, type WakeMessage } from './outbox.ts';

/**
 * Wake-ups for the delivery worker. In one process, {@link WakeSignal} lets a commit wake the
 * worker at once; across processes, {@link listenForDeliveries} turns PostgreSQL notifications
 * into the same wake-up. Polling remains the safety net: a wake-up lost (a listener reconnecting)
 * only delays a delivery until the next poll.
 */

/**
 * The in-process channel from the unit of work to this process's delivery workers: after a
 * transaction that enqueued deliveries commits, {@link notify} tells every subscribed worker to
 * claim now. Built once by the composition root and handed to both sides, so neither needs the
 * other.
 */
export class DeliveryWakeups {
  /**
   * Names this channel in the NOTIFY of the commits it announces (outbox.ts wakePayload): a worker
   * subscribed here, woken in process already, ignores the echo instead of claiming twice.
   */
  readonly origin = randomBytes(9).toString('base64url');
  readonly #listeners = new Set<(endpointIds?: ReadonlySet<string>) => void>();

  /**
   * Deliveries became due: wake every subscribed worker. `endpointIds`, when known, are the
   * endpoints they are for: a worker whose sends to all of them are at its cap may stay asleep
   * (it claims for a capped endpoint again once half its sends there are done).
   */
  notify(endpointIds?: ReadonlySet<string>): void {
    for (const listener of this.#listeners) listener(endpointIds);
  }

  /** @returns the unsubscribe function. */
  subscribe(listener: (endpointIds?: ReadonlySet<string>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get subscribers(): number {
    return this.#listeners.size;
  }
}

/**
 * A level-triggered signal: a `notify()` made while nobody waits is remembered, so that a wake-up
 * arriving while the worker is busy claiming is not lost. The poll timeout runs on the injected
 * clock, so a test moves it by moving the clock.
 */
export class WakeSignal {
  #pending = false;
  #waiter: { resolve: () => void; timer: TimerHandle } | undefined;

  constructor(private readonly clock: Clock = systemClock) {}

  notify(): void {
    if (this.#waiter) this.#release();
    else this.#pending = true;
  }

  /** Resolves on the next (or a remembered) notify, or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      // Kept alive: a running worker is what keeps a worker process alive.
      const timer = this.clock.setTimeout(() => this.#release(), timeoutMs);
      this.#waiter = { resolve, timer };
    });
  }

  #release(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (!waiter) return;
    this.clock.clearTimeout(waiter.timer);
    waiter.resolve();
  }
}

export interface Listener {
  close(): Promise<void>;
}

export interface ListenLog {
  warn(obj: object, msg: string): void;
}

// Capped at 5 s: once the database is back, cross-process wake-ups resume within that.
const RECONNECT_MS = [500, 1_000, 2_000, 5_000];

/**
 * LISTENs on the delivery channel on a dedicated connection (same settings as the pool, so the
 * same database and search_path) and calls `onNotify` for each notification, with the endpoint
 * ids and the origin it names (outbox.ts wakePayload). A connection that fails or is lost is re-opened with
 * backoff, and `onNotify` is called, naming no endpoint, once it is back, since notifications sent
 * in between were missed. Never rejects: the worker polls meanwhile.
 */
export async function listenForDeliveries(
  pool: pg.Pool,
  onNotify: (message: WakeMessage) => void,
  log?: ListenLog,
): Promise<Listener> {
  let client: pg.Client | undefined;
  let closed = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client(pool.options);
    let channel: string | undefined;
    next.on('notification', (message) => {
      if (message.channel === channel) onNotify(readWakePayload(message.payload));
    });
    next.on('error', (err) => {
      log?.warn({ err }, 'webhook wake-up listener lost its connection; reconnecting');
      void next.end().catch(() => undefined);
      if (client === next) client = undefined;
      scheduleReconnect();
    });
    try {
      await next.connect();
      // The channel of this connection's schema, computed as the outbox computes it.
      const { rows } = await next.query<{ channel: string }>(`select ${DELIVERY_CHANNEL_EXPRESSION} as channel`);
      channel = rows[0].channel;
      await next.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
    } catch (err) {
      await next.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      await next.end();
      return;
    }
    client = next;
    failures = 0;
  };

  const scheduleReconnect = () => {
    if (closed || retryTimer) return;
    const delay = RECONNECT_MS[Math.min(failures, RECONNECT_MS.length - 1)];
    failures++;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().then(
        () => onNotify({}),
        (err: unknown) => {
          log?.warn({ err }, 'webhook wake-up listener could not reconnect');
          scheduleReconnect();
        },
      );
    }, delay);
    retryTimer.unref();
  };

  await connect().catch((err: unknown) => {
    log?.warn({ err }, 'webhook wake-up listener could not connect; polling until it can');
    scheduleReconnect();
  });
  return {
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      await client?.end().catch(() => undefined);
      client = undefined;
    },
  };
}
