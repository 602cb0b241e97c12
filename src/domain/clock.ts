/** An opaque handle of a timer set on a {@link Clock}. */
export type TimerHandle = object;

export interface TimerOptions {
  /** Whether a pending timer keeps the process alive (real clock only); true by default. */
  keepAlive?: boolean;
}

/**
 * The source of "now" and of timers for everything time-dependent: expiry, retries, leases, the
 * worker's poll, the periodic jobs, the sender's timeout. Tests pass a {@link TestClock}, whose
 * time and timers move only when the test says so.
 */
export interface Clock {
  now(): Date;
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout(callback, ms, options) {
    const timer = setTimeout(callback, ms);
    if (options?.keepAlive === false) timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    if (handle !== undefined) clearTimeout(handle as NodeJS.Timeout);
  },
};

interface TestTimer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to, so tests never sleep to let time pass. Moving it fires the
 * timers that come due, in order, each with the clock set to its due time.
 */
export class TestClock implements Clock {
  #ms: number;
  #timers: TestTimer[] = [];
  #nextId = 1;

  constructor(start: Date | string = '2026-11-21T10:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = { id: this.#nextId++, at: this.#ms + Math.max(0, ms), callback };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    this.#timers = this.#timers.filter((timer) => timer !== handle);
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    this.#moveTo(this.#ms + ms);
  }

  set(to: Date | string): void {
    const target = new Date(to).getTime();
    if (target < this.#ms) {
      // Going back in time fires nothing.
      this.#ms = target;
      return;
    }
    this.#moveTo(target);
  }

  #moveTo(target: number): void {
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#ms = Math.max(this.#ms, due.at);
      due.callback();
    }
    this.#ms = target;
  }
}

/** ISO 8601 UTC with milliseconds, the one timestamp format of the API and the database. */
export function isoTimestamp(date: Date): string {
  return date.toISOString();
}
