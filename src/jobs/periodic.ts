/**
 * A background job that runs one step at a time: `runOnce()` for tests (no timers involved),
 * `start()` to repeat it every `intervalMs` in production, `stop()` that waits for the step in
 * flight. A step that throws is logged and retried at the next tick.
 */
export class PeriodicJob {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;

  constructor(
    readonly name: string,
    private readonly step: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  runOnce(): Promise<unknown> {
    this.#running ??= this.step().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(async () => {
      try {
        await this.runOnce();
      } catch (err) {
        this.onError(err);
      }
      this.#schedule();
    }, this.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => undefined);
  }
}
