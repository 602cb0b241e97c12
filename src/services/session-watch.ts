import type { Clock, TimerHandle } from '../domain/clock.ts';
import type { SessionStatus } from '../domain/session-state.ts';

/** The longest a status request may wait for a change (`wait`, in seconds). */
export const STATUS_WAIT_MAX_SECONDS = 30;

/** Bounds on the status requests held open, so that waiting costs a known amount of memory and sockets. */
export interface WatchLimits {
  /** Requests waiting at once in this process; one more is refused (429). */
  maxOpen: number;
  /** Requests waiting at once on one session (a page and a few of its reloads); one more is refused. */
  maxPerSession: number;
  /**
   * How often the statuses of the watched sessions are read again, in one query for all of them:
   * how another process's change (several API processes on PostgreSQL) reaches a waiting request.
   * A change made in this process wakes its waiters at once.
   */
  recheckMs: number;
}

export const DEFAULT_WATCH_LIMITS: WatchLimits = { maxOpen: 10_000, maxPerSession: 4, recheckMs: 2_000 };

interface Waiter {
  sessionId: string;
  /** The status the request saw: a stored status different from it wakes the request. */
  seen: SessionStatus;
  wake: () => void;
}

/**
 * Wakes the status requests that wait for a session to change (the portal page's long poll). The
 * unit of work reports every session it changed after commit ({@link SessionWatch.changed}); a
 * change committed by another process is found by one read of every watched session each
 * `recheckMs`. A waiter is only told to look again: the request reads the session itself.
 */
export class SessionWatch {
  readonly #waiters = new Map<string, Set<Waiter>>();
  #open = 0;
  #recheck: TimerHandle | undefined;
  #rechecking = false;
  #closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly readStatuses: (ids: string[]) => Promise<Map<string, SessionStatus>>,
    private readonly limits: WatchLimits = DEFAULT_WATCH_LIMITS,
  ) {}

  /** Requests waiting now. */
  get open(): number {
    return this.#open;
  }

  /** Once closed (the server stops), nothing waits: every waiter is woken and new waits answer at once. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Waits until the session may have changed from `seen`, until the clock reaches `untilMs`, or
   * until `signal` aborts (the client went away). Undefined when the wait is refused: the limits
   * are reached, or the watch is closed.
   */
  wait(sessionId: string, seen: SessionStatus, untilMs: number, signal?: AbortSignal): Promise<void> | undefined {
    if (this.#closed || this.#open >= this.limits.maxOpen) return undefined;
    const ofSession = this.#waiters.get(sessionId) ?? new Set<Waiter>();
    if (ofSession.size >= this.limits.maxPerSession) return undefined;
    this.#waiters.set(sessionId, ofSession);
    this.#open += 1;
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        sessionId,
        seen,
        wake: () => {
          this.clock.clearTimeout(deadline);
          signal?.removeEventListener('abort', waiter.wake);
          if (!ofSession.delete(waiter)) return;
          this.#open -= 1;
          if (ofSession.size === 0) this.#waiters.delete(sessionId);
          // Nobody waits: no recheck either (a test clock shows no timer left behind).
          if (this.#waiters.size === 0) this.#cancelRecheck();
          resolve();
        },
      };
      const deadline = this.clock.setTimeout(waiter.wake, Math.max(0, untilMs - this.clock.now().getTime()), {
        keepAlive: false,
      });
      ofSession.add(waiter);
      signal?.addEventListener('abort', waiter.wake, { once: true });
      if (signal?.aborted) waiter.wake();
      this.#scheduleRecheck();
    });
  }

  /** A session changed in this process (its transaction committed): its waiters look again. */
  changed(sessionId: string): void {
    for (const waiter of [...(this.#waiters.get(sessionId) ?? [])]) waiter.wake();
  }

  /** Wakes every waiter and refuses new waits: the server is stopping. */
  close(): void {
    this.#closed = true;
    this.#cancelRecheck();
    for (const sessionId of [...this.#waiters.keys()]) this.changed(sessionId);
  }

  #scheduleRecheck(): void {
    if (this.#recheck !== undefined || this.#rechecking || this.#closed) return;
    const recheck = () => {
      this.#recheck = undefined;
      void this.#runRecheck();
    };
    this.#recheck = this.clock.setTimeout(recheck, this.limits.recheckMs, { keepAlive: false });
  }

  #cancelRecheck(): void {
    this.clock.clearTimeout(this.#recheck);
    this.#recheck = undefined;
  }

  async #runRecheck(): Promise<void> {
    this.#rechecking = true;
    try {
      const ids = [...this.#waiters.keys()];
      // Chunks keep each IN list well below the parameter limits of both databases.
      for (let i = 0; i < ids.length; i += 500) {
        const stored = await this.readStatuses(ids.slice(i, i + 500));
        for (const id of ids.slice(i, i + 500)) {
          for (const waiter of [...(this.#waiters.get(id) ?? [])]) if (stored.get(id) !== waiter.seen) waiter.wake();
        }
      }
    } catch {
      // The database is unreachable for now: the waiters' deadlines still answer them, and the next
      // recheck tries again.
    } finally {
      this.#rechecking = false;
      if (this.#waiters.size > 0) this.#scheduleRecheck();
    }
  }
}
