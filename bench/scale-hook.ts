/**
 * Loaded by bench/scale.ts into the service it starts (`node --import tsx --import <this> src/main.ts`
 * in the checkout under test): the periodic jobs are built and kept as the composition root builds
 * them, but not started on their timers; the benchmark runs each one when it asks, over the IPC
 * channel, and is told how long the run took: its work (`ms`), without the pauses its paced
 * batches leave to requests (services/batches.ts, timed by wrapping its REAL_PACING), and its wall
 * time (`wallMs`). Nothing else of the service changes.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

interface JobLike {
  name: string;
  runOnce(): Promise<unknown>;
}

// The same module instance src/main.ts imports: the checkout's own file, resolved from its root.
const periodic = (await import(pathToFileURL(resolve('src/jobs/periodic.ts')).href)) as {
  PeriodicJob: { prototype: { start(): void } };
};
// A checkout from before the pacing was exported (or before its batches had a module): its runs
// are timed whole, pauses included.
const batchesPath = resolve('src/services/batches.ts');
const batches = existsSync(batchesPath)
  ? ((await import(pathToFileURL(batchesPath).href)) as {
      REAL_PACING?: { pause(ms: number, signal?: AbortSignal): Promise<void> };
    })
  : {};
let pausedMs = 0;
const pacing = batches.REAL_PACING;
if (pacing) {
  const pause = pacing.pause.bind(pacing);
  pacing.pause = async (ms, signal) => {
    const started = performance.now();
    try {
      await pause(ms, signal);
    } finally {
      pausedMs += performance.now() - started;
    }
  };
}
const jobs = new Map<string, JobLike>();
periodic.PeriodicJob.prototype.start = function (this: JobLike) {
  jobs.set(this.name, this);
};

type Message = { type: 'jobs' } | { type: 'run'; name: string };

process.on('message', (message: Message) => {
  if (message.type === 'jobs') {
    process.send?.({ type: 'jobs', names: [...jobs.keys()] });
    return;
  }
  const job = jobs.get(message.name);
  const started = performance.now();
  const pausedBefore = pausedMs;
  const timing = () => {
    const wallMs = performance.now() - started;
    return { ms: wallMs - (pausedMs - pausedBefore), wallMs };
  };
  void (job ? job.runOnce() : Promise.reject(new Error(`no job ${message.name}`))).then(
    (result) => process.send?.({ type: 'ran', name: message.name, ...timing(), result }),
    (err: unknown) => process.send?.({ type: 'ran', name: message.name, ...timing(), error: String(err) }),
  );
});
process.channel?.unref();
