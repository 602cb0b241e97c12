import type { Clock, TimerHandle } from '../domain/clock.ts';
import type { Db } from '../store/db.ts';
import { giveBackUnsent, renewLeases } from '../store/webhook-deliveries/leases.ts';

/**
 * The leases of one worker's deliveries in flight, kept short and renewed by a heartbeat.
 *
 * A claim leases its deliveries for `leaseMs` (WEBHOOK_LEASE_SECONDS). While any of them is in
 * flight, every `renewEveryMs` (a third of the lease by default) one UPDATE extends all of them to
 * now + `leaseMs`. A live worker therefore never loses a lease to another worker however long its
 * request takes (two heartbeats may be missed before one runs out), and the deliveries of a worker
 * that died (SIGKILL, a lost machine) are claimable again `leaseMs` after its last heartbeat, not
 * after the longest possible request.
 *
 * Leases are held per claim token: a claim's deliveries share one token, and a renewal names the
 * tokens still in use. A delivery taken over by another worker carries that worker's token, so a
 * renewal can never take it back.
 */
export interface LeaseLog {
  warn(obj: object, msg: string): void;
}

export class LeaseKeeper {
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #log: LeaseLog | undefined;
  /** Claim token → deliveries of that claim still in flight. */
  readonly #held = new Map<string, number>();
  #timer: TimerHandle | undefined;
  #renewal: Promise<void> | undefined;
  #renewAgain = false;
  /** Deliveries to give back unsent, and the giving back that takes them ({@link giveBack}). */
  readonly #unsent: Array<{ id: string; leaseToken: string }> = [];
  #givingBack: Promise<void> | undefined;

  constructor(options: { db: Db; clock: Clock; leaseMs: number; renewEveryMs?: number; log?: LeaseLog }) {
    this.#db = options.db;
    this.#clock = options.clock;
    this.#log = options.log;
    this.leaseMs = options.leaseMs;
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(options.leaseMs / 3));
  }

  /** When a lease taken or renewed now runs out. */
  leaseUntil(now: Date = this.#clock.now()): string {
    return new Date(now.getTime() + this.leaseMs).toISOString();
  }

  /** A claim under `token` took `count` deliveries: keep their leases alive until released. */
  hold(token: string, count: number): void {
    if (count <= 0) return;
    this.#held.set(token, (this.#held.get(token) ?? 0) + count);
    this.#arm();
  }

  /** One delivery of the claim `token` is recorded (or given up): its lease needs no renewal. */
  release(token: string): void {
    const left = (this.#held.get(token) ?? 0) - 1;
    if (left > 0) this.#held.set(token, left);
    else this.#held.delete(token);
    if (this.#held.size === 0) this.#disarm();
  }

  /** Deliveries whose leases this keeper renews. */
  get held(): number {
    let n = 0;
    for (const count of this.#held.values()) n += count;
    return n;
  }

  /**
   * Renews every held lease now (the heartbeat calls this). A renewal asked for while one is
   * under way runs once that one is done, from the time it starts.
   */
  renew(): Promise<void> {
    if (this.#renewal) {
      this.#renewAgain = true;
      return this.#renewal;
    }
    const run = async () => {
      do {
        this.#renewAgain = false;
        const tokens = [...this.#held.keys()];
        const now = this.#clock.now();
        try {
          await renewLeases(this.#db, tokens, this.leaseUntil(now), now.toISOString());
        } catch (err) {
          // The next heartbeat tries again; a lease survives two missed ones.
          this.#log?.warn({ err }, 'renewing webhook delivery leases failed');
        }
      } while (this.#renewAgain);
    };
    this.#renewal = run().finally(() => (this.#renewal = undefined));
    return this.#renewal;
  }

  /**
   * Gives `delivery` back unsent (store giveBackUnsent: pending, due now, its attempt not counted),
   * with every other given back in the same turn of the event loop: one statement for all that
   * waited when the worker stopped. If the database fails, their leases run out as after a crash.
   * Its lease is still held until {@link release}.
   */
  giveBack(delivery: { id: string; leaseToken: string }): Promise<void> {
    this.#unsent.push(delivery);
    this.#givingBack ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const batch = this.#unsent.splice(0);
      this.#givingBack = undefined;
      try {
        await giveBackUnsent(this.#db, batch, this.#clock.now().toISOString());
      } catch (err) {
        this.#log?.warn(
          { err, deliveries: batch.length },
          'giving back unsent webhook deliveries failed; their leases will run out',
        );
      }
    });
    return this.#givingBack;
  }

  /** Resolves once the renewal and the giving back under way, if any, are done: for tests stepping the clock. */
  async settled(): Promise<void> {
    while (this.#renewal || this.#givingBack) await (this.#renewal ?? this.#givingBack);
  }

  /** Stops the heartbeat (the worker stopped; nothing is held any more). */
  close(): void {
    this.#disarm();
  }

  #arm(): void {
    if (this.#timer !== undefined) return;
    // The next beat is armed before this one's UPDATE runs, so a slow database does not stretch
    // the interval; overlapping beats are folded into one by renew().
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        if (this.#held.size === 0) return;
        this.#arm();
        void this.renew();
      },
      this.renewEveryMs,
      { keepAlive: false },
    );
  }

  #disarm(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
