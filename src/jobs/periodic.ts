import { systemClock, type Clock, type TimerHandle } from '../domain/clock.ts';

/**
 * A background job that runs one step at a time: `runOnce()` for tests (no timers involved),
 * `start()` to repeat it every `intervalMs` in production, `stop()` that aborts the step in flight
 * (its signal: a run of paced batches ends after the batch in flight) and waits for it. A step
 * that throws is logged and retried at the next tick. Its timer runs on the injected clock, so a
 * test with a TestClock moves it by moving the clock.
 */
export class PeriodicJob {
  #timer: TimerHandle | undefined;
  #running: Promise<unknown> | undefined;
  #abort: AbortController | undefined;
  #stopped = true;

  constructor(
    readonly name: string,
    private readonly step: (signal: AbortSignal) => Promise<unknown>,
    readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  runOnce(): Promise<unknown> {
    if (!this.#running) {
      const abort = new AbortController();
      this.#abort = abort;
      this.#running = this.step(abort.signal).finally(() => {
        this.#running = undefined;
      });
    }
    return this.#running;
  }

  /**
   * Resolves once no step is in flight (at once if none is), whatever its outcome: how a test that
   * moved the clock waits for the step the timer started, without starting one itself.
   */
  whenIdle(): Promise<void> {
    return (this.#running ?? Promise.resolve()).then(
      () => undefined,
      () => undefined,
    );
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    // A pending job does not keep the process alive: the server or the worker does.
    this.#timer = this.clock.setTimeout(
      () => {
        this.runOnce()
          .catch((err: unknown) => this.onError(err))
          .finally(() => this.#schedule());
      },
      this.intervalMs,
      { keepAlive: false },
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.clock.clearTimeout(this.#timer);
    if (this.#running) this.#abort?.abort();
    await this.#running?.catch(() => undefined);
  }
}
