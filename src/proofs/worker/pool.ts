import { Piscina } from 'piscina';
import type { ProofRunner, ProofTask, ProofTaskOf, ProofTaskResult } from './tasks.ts';

/**
 * A pool of worker threads for the CPU-heavy proof work (BBS and Groth16 verification, sandbox
 * presentation building), so that a proof never holds the event loop: while a thread spends
 * 75 ms on a BBS proof, the main thread keeps answering every other request. The queue in front
 * of the threads is bounded; beyond it a task is refused at once ({@link ProofPoolBusyError})
 * rather than left to wait behind work it cannot catch up with.
 */

/** Thrown when the pool's queue is full: the caller answers "busy, retry", never waits. */
export class ProofPoolBusyError extends Error {
  constructor(readonly queued: number) {
    super(`the proof pool's queue is full (${queued} tasks waiting)`);
    this.name = 'ProofPoolBusyError';
  }
}

export interface ProofPoolOptions {
  /** Worker threads. */
  threads: number;
  /** Tasks that may wait for a thread; one more is refused. */
  maxQueue: number;
}

/** The worker's module: entry.js once compiled; under tsx, a bootstrap that loads entry.ts (see tsx-entry.mjs). */
function workerModule(): URL {
  const compiled = import.meta.url.endsWith('.js');
  return new URL(compiled ? './entry.js' : './tsx-entry.mjs', import.meta.url);
}

export class ProofPool implements ProofRunner {
  readonly threads: number;
  readonly maxQueue: number;
  #piscina: Piscina | undefined;
  #closed = false;

  constructor(options: ProofPoolOptions) {
    if (!(options.threads >= 1)) throw new RangeError('a proof pool needs at least one thread');
    this.threads = options.threads;
    this.maxQueue = options.maxQueue;
  }

  /** Started on the first task: a process that never verifies a BBS or Groth16 proof starts no thread. */
  #pool(): Piscina {
    if (this.#closed) throw new Error('the proof pool is closed');
    if (!this.#piscina) {
      this.#piscina = new Piscina({
        filename: workerModule().href,
        minThreads: this.threads,
        maxThreads: this.threads,
        // Our own check below refuses first; this is piscina's backstop for the same bound.
        maxQueue: this.maxQueue,
      });
    }
    return this.#piscina;
  }

  async run<K extends ProofTask['kind']>(task: ProofTaskOf<K>): Promise<ProofTaskResult[K]> {
    const pool = this.#pool();
    // Tasks beyond the idle threads wait in the queue; a full queue refuses at once.
    if (pool.queueSize >= this.maxQueue) throw new ProofPoolBusyError(pool.queueSize);
    try {
      return (await pool.run(task)) as ProofTaskResult[K];
    } catch (error) {
      if (error instanceof Error && error.message === 'Task queue is at limit')
        throw new ProofPoolBusyError(pool.queueSize);
      throw error;
    }
  }

  /** Tasks waiting for a thread. */
  get queued(): number {
    return this.#piscina?.queueSize ?? 0;
  }

  /** Tasks the threads have finished since the pool started (metrics, tests). */
  get completed(): number {
    return this.#piscina?.completed ?? 0;
  }

  /** Stops the threads; running tasks are cancelled. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const pool = this.#piscina;
    this.#piscina = undefined;
    await pool?.destroy();
  }
}
