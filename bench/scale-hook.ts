/**
 * Loaded by bench/scale.ts into the service it starts (`node --import tsx --import <this> src/main.ts`
 * in the checkout under test): the periodic jobs are built and kept as the composition root builds
 * them, but not started on their timers; the benchmark runs each one when it asks, over the IPC
 * channel, and is told how long the run took. Nothing else of the service changes.
 */
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
  void (job ? job.runOnce() : Promise.reject(new Error(`no job ${message.name}`))).then(
    (result) => process.send?.({ type: 'ran', name: message.name, ms: performance.now() - started, result }),
    (err: unknown) =>
      process.send?.({ type: 'ran', name: message.name, ms: performance.now() - started, error: String(err) }),
  );
});
process.channel?.unref();
