/**
 * bench/scale.ts's service: the checkout under test started as an operator starts it (role all,
 * its own src/main.ts) with bench/scale-hook.ts, which keeps its periodic jobs off their timers so
 * that the benchmark runs each on demand over IPC; and a background load of the API.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { percentile, REPO_ROOT } from './support.ts';
import { unusedPort } from '../test/support/server.ts';

const HOOK = pathToFileURL(join(REPO_ROOT, 'bench/scale-hook.ts')).href;

export interface Service {
  child: ChildProcess;
  origin: string;
  jobs(): Promise<string[]>;
  /** `ms`: the run's work, its pauses left out; `wallMs`: its length. */
  run(name: string): Promise<{ ms: number; wallMs: number; error?: string }>;
  stop(): Promise<void>;
}

export async function startService(
  root: string,
  databaseUrl: string,
): Promise<{ service: Service; startupMs: number }> {
  const port = await unusedPort();
  const origin = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = fork(join(root, 'src/main.ts'), [], {
    cwd: root,
    execArgv: ['--import', 'tsx', '--import', HOOK],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: origin,
      ROLE: 'all',
      LOG_LEVEL: 'warn',
      OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true',
      RATE_LIMIT_API_KEY_PER_MINUTE: '0',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited before answering:\n${stderr}`);
    try {
      if ((await fetch(`${origin}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const startupMs = performance.now() - started;
  const ask = <T>(message: object, type: string): Promise<T> =>
    new Promise((resolve) => {
      const listener = (answer: { type: string }) => {
        if (answer.type !== type) return;
        child.off('message', listener);
        resolve(answer as T);
      };
      child.on('message', listener);
      child.send(message);
    });
  return {
    startupMs,
    service: {
      child,
      origin,
      jobs: async () => (await ask<{ names: string[] }>({ type: 'jobs' }, 'jobs')).names,
      run: (name) => ask<{ ms: number; wallMs: number; error?: string }>({ type: 'run', name }, 'ran'),
      stop: async () => {
        if (child.exitCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      },
    },
  };
}

/** A load of gets and creates, 2 in flight, until stopped: each request's end time and latency. */
export function backgroundLoad(origin: string, headers: Record<string, string>, sessionId: string, createBody: string) {
  const pool = new Pool(origin, { connections: 2 });
  const samples: Array<{ at: number; ms: number }> = [];
  let running = true;
  const workers = [0, 1].map(async (w) => {
    for (let i = 0; running; i++) {
      const t0 = performance.now();
      const post = (i + w) % 2 === 1;
      const res = await pool.request({
        method: post ? 'POST' : 'GET',
        path: post ? '/verification/v1/sessions' : `/verification/v1/sessions/${sessionId}`,
        headers: post ? { ...headers, 'content-type': 'application/json' } : headers,
        body: post ? createBody : undefined,
      });
      await res.body.text();
      const end = performance.now();
      samples.push({ at: end, ms: end - t0 });
    }
  });
  /**
   * The latencies of the requests sent within any of `windows` ([from, to] in performance.now()),
   * sorted: a request counts where it started, so that one held by what ran before a window (the
   * benchmark's own writes of due work, in its own process) is not counted in it.
   */
  const within = (windows: Array<[number, number]>) =>
    samples
      .filter((s) => windows.some(([from, to]) => s.at - s.ms >= from && s.at - s.ms <= to))
      .map((s) => s.ms)
      .sort((a, b) => a - b);
  const p99In = (windows: Array<[number, number]>) => percentile(within(windows), 99) ?? 0;
  return {
    p99In,
    /** How many requests were sent within `windows`: how many samples a p99 of them rests on. */
    countIn: (windows: Array<[number, number]>) => within(windows).length,
    p99Between: (from: number, to: number) => p99In([[from, to]]),
    stop: async () => {
      running = false;
      await Promise.all(workers);
      await pool.close();
    },
  };
}
