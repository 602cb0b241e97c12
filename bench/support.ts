/**
 * What bench/sessions.ts and bench/rss.ts share: a database of their own, the service started as
 * an operator starts it (`node --import tsx src/main.ts`, a process of its own), a tenant in it,
 * and a load generator (undici pool, a fixed number of requests in flight).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { Pool, WebSocket } from 'undici';
import type * as ClockModule from '../src/domain/clock.ts';
import type * as OrganizationsModule from '../src/services/organizations.ts';
import type * as DbModule from '../src/store/db.ts';
import { unusedPort } from '../test/support/server.ts';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export type BenchDialect = 'sqlite' | 'postgres';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** An empty database: a temp SQLite file, or a PostgreSQL schema of its own (BENCH_DATABASE_URL or TEST_DATABASE_URL). */
export async function benchDatabase(dialect: BenchDialect): Promise<BenchDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-bench-'));
    return {
      url: `sqlite:${join(dir, 'bench.sqlite')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const base = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!base) throw new Error('--database postgres needs BENCH_DATABASE_URL or TEST_DATABASE_URL');
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    url,
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

export interface ServiceProcess {
  child: ChildProcess;
  origin: string;
  /** Resident set size of the service process now, in MB (Linux /proc). */
  rssMb(): number;
  /** CPU time the process has used so far, all threads, in microseconds (Linux /proc). */
  cpuMicros(): number;
  /** SIGTERM, then waits for the exit (a --cpu-prof profile is written at exit). */
  stop(): Promise<void>;
  /**
   * A full garbage collection in the service, through its inspector (a service started with
   * `inspect` only): what memory it holds, not what V8 has not collected yet.
   */
  collectGarbage?(): Promise<void>;
}

/** Sends one Chrome DevTools Protocol command to the inspector at `url` and waits for its answer. */
async function inspectorCommand(url: string, method: string): Promise<void> {
  const socket = new WebSocket(url);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => reject(new Error(`could not reach the inspector at ${url}`)), {
        once: true,
      });
    });
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('message', (event) => {
        const answer = JSON.parse(String(event.data)) as { id?: number; error?: { message: string } };
        if (answer.id !== 1) return;
        if (answer.error) reject(new Error(`${method}: ${answer.error.message}`));
        else resolve();
      });
      socket.send(JSON.stringify({ id: 1, method }));
    });
  } finally {
    socket.close();
  }
}

/**
 * CPU time of every thread of `pid`, from /proc/PID/task/TID/schedstat (nanoseconds on a CPU):
 * unlike wall time it does not grow while the process waits for a core other processes hold.
 */
function cpuMicrosOf(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended in between
    }
  }
  return ns / 1000;
}

/**
 * CPU time of the machine's PostgreSQL server so far, every process of it (backends, WAL writer,
 * checkpointer and the rest), in microseconds, from Linux /proc: 0 where none runs on this machine.
 * Sampled around a load, it says what PostgreSQL spent per request, which the server process's
 * own CPU leaves out.
 */
export function postgresCpuMicros(): number {
  let ns = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) continue;
      ns += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the process ended in between
    }
  }
  return ns / 1000;
}

async function waitUntilAnswering(origin: string, child: ChildProcess, stderr: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null)
      throw new Error(`the service exited (${child.exitCode}) before answering:\n${stderr()}`);
    try {
      if ((await fetch(`${origin}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service did not answer on ${origin} within 60 s:\n${stderr()}`);
}

/**
 * `node --import tsx <root>/src/main.ts` over `databaseUrl`, role `all` (the single-process
 * default), logging at its defaults to /dev/null. `root` lets the same client drive another
 * checkout (the "before" of a before/after). `cpuProfDir` adds --cpu-prof.
 */
/**
 * A port for a process the bench starts, chosen before it starts. The tests listen on port 0 and
 * read the port back from the log; the bench cannot: it discards the service's standard output
 * (reading it would cost the client CPU it measures) and may drive another checkout (the "before"
 * of a before/after) whose logs it does not know. Another process taking the port in between makes
 * the run fail at start, never measure the wrong server.
 */
const freePort = unusedPort;

export async function startService(options: {
  root: string;
  databaseUrl: string;
  name: string;
  cpuProfDir?: string;
  env?: Record<string, string>;
  /** Run the compiled build (`node dist/main.js`, the production start) instead of src/ under tsx. */
  compiled?: boolean;
  /** Open the inspector on a free loopback port, for {@link ServiceProcess.collectGarbage}. */
  inspect?: boolean;
}): Promise<ServiceProcess> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const profile = options.cpuProfDir
    ? // A directory per service: tsx's loader thread writes a profile of its own beside the main thread's.
      ['--cpu-prof', '--cpu-prof-dir', resolve(options.cpuProfDir, options.name)]
    : [];
  const entry = options.compiled ? ['dist/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  if (options.compiled && !existsSync(resolve(options.root, 'dist/main.js'))) {
    throw new Error(`${options.root} has no dist/main.js: run \`npm run build\` there first`);
  }
  const inspect = options.inspect ? ['--inspect=127.0.0.1:0'] : [];
  const child = spawn(process.execPath, [...inspect, ...profile, ...entry], {
    cwd: options.root,
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: origin,
      ROLE: 'all',
      // The per-key rate limit (1,200 a minute by default) would refuse most of the load; this high
      // one keeps its cost per request in the measurement without refusing any.
      RATE_LIMIT_API_KEY_PER_MINUTE: '1000000',
      ...options.env,
    },
    // Standard output (the logs) goes to /dev/null: reading it here would load the client's core.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8000);
  });
  const exited = once(child, 'exit');
  await waitUntilAnswering(origin, child, () => stderr);
  // Node prints where its inspector listens first thing on standard error.
  const inspectorUrl = /Debugger listening on (ws:\/\/\S+)/.exec(stderr)?.[1];
  return {
    child,
    origin,
    rssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
    },
    cpuMicros: () => cpuMicrosOf(child.pid!),
    ...(inspectorUrl ? { collectGarbage: () => inspectorCommand(inspectorUrl, 'HeapProfiler.collectGarbage') } : {}),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * The bare node:http baseline (bench/bare-server.ts), in a process of its own, answering the given
 * bodies; with `workUs`, after spending that much CPU time on each request; with
 * `floorDatabaseUrl`, the floor of `--floor` over that database (bench/bare-server.ts).
 */
export async function startBare(
  createBody: string,
  readBody: string,
  workUs = 0,
  floorDatabaseUrl?: string,
  framework: 'node:http' | 'fastify' = 'node:http',
): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/bare-server.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      BARE_PORT: String(port),
      BARE_CREATE_BODY: createBody,
      BARE_READ_BODY: readBody,
      BARE_WORK_US: String(workUs),
      ...(floorDatabaseUrl === undefined ? {} : { BARE_FLOOR_DATABASE_URL: floorDatabaseUrl }),
      BARE_FRAMEWORK: framework,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`bare server exited (${code})`)));
  });
  return {
    child,
    origin: `http://127.0.0.1:${port}`,
    rssMb: () => 0,
    cpuMicros: () => cpuMicrosOf(child.pid!),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

export interface Tenant {
  headers: Record<string, string>;
  createBody: string;
}

/**
 * An organization with an application and a key, written straight to the service's database by
 * the code of the checkout at `root` (this one by default): an older service's database has an
 * older schema, which this checkout's code may not fit.
 */
export async function createTenant(databaseUrl: string, root = REPO_ROOT): Promise<Tenant> {
  const from = <T>(path: string): Promise<T> => import(pathToFileURL(join(root, path)).href) as Promise<T>;
  const { openStore } = await from<typeof DbModule>('src/store/db.ts');
  const { createOrganization } = await from<typeof OrganizationsModule>('src/services/organizations.ts');
  const { systemClock } = await from<typeof ClockModule>('src/domain/clock.ts');
  const store = await openStore(databaseUrl);
  try {
    const org = await createOrganization(
      { db: store.db, clock: systemClock },
      { name: 'Bench', environment: 'sandbox' },
    );
    return {
      headers: { authorization: `Bearer ${org.apiKey.rawSecret}` },
      createBody: JSON.stringify({
        appId: org.application.id,
        purpose: 'Benchmark',
        requiredClaims: ['is_active_student', 'university_domain'],
      }),
    };
  } finally {
    await store.close();
  }
}

/** A tenant of the service and its first session, with what the service answered for it. */
export interface TenantWithSession extends Tenant {
  sessionId: string;
  /** The service's answers to creating the session and to reading it, as sent. */
  createdJson: string;
  readJson: string;
}

/**
 * A tenant (see {@link createTenant}, written by the code at `root`: the service's checkout) and
 * one session created through the running service.
 */
export async function tenantWithSession(
  service: ServiceProcess,
  databaseUrl: string,
  root = REPO_ROOT,
): Promise<TenantWithSession> {
  const tenant = await createTenant(databaseUrl, root);
  const created = await fetch(`${service.origin}/verification/v1/sessions`, {
    method: 'POST',
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    body: tenant.createBody,
  });
  const createdJson = await created.text();
  if (created.status !== 201) throw new Error(`create session answered ${created.status}: ${createdJson}`);
  const { sessionId } = (JSON.parse(createdJson) as { data: { sessionId: string } }).data;
  const read = await fetch(`${service.origin}/verification/v1/sessions/${sessionId}`, { headers: tenant.headers });
  return { ...tenant, sessionId, createdJson, readJson: await read.text() };
}

export interface BenchRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

export interface LoadResult {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time the server process used per request, microseconds. */
  cpuPerRequest: number;
  /** With `databaseCpu`: CPU time the database server used per request, microseconds. */
  databaseCpuPerRequest?: number;
  /** The status and body of the first answer of 300 or more, to say what went wrong. */
  firstError?: string;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Sends `count` requests with `concurrency` in flight; every request is built by `make(i)`. With
 * `databaseCpu` (e.g. {@link postgresCpuMicros}), the database server's CPU per request too.
 */
export async function load(
  label: string,
  server: Pick<ServiceProcess, 'origin' | 'cpuMicros'>,
  count: number,
  concurrency: number,
  make: (i: number) => BenchRequest,
  headers: Record<string, string>,
  databaseCpu?: () => number,
): Promise<LoadResult> {
  const pool = new Pool(server.origin, { connections: concurrency, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const cpuBefore = server.cpuMicros();
  const databaseCpuBefore = databaseCpu?.();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const req = make(next++);
        const t0 = performance.now();
        const res = await pool.request({
          method: req.method,
          path: req.path,
          body: req.body,
          headers: req.body ? { ...headers, 'content-type': 'application/json' } : headers,
        });
        const text = await res.body.text();
        latencies.push(performance.now() - t0);
        if (res.statusCode >= 300 && errors++ === 0) firstError = `${res.statusCode} ${text.slice(0, 300)}`;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuPerRequest = (server.cpuMicros() - cpuBefore) / count;
  const databaseCpuPerRequest =
    databaseCpu && databaseCpuBefore !== undefined ? (databaseCpu() - databaseCpuBefore) / count : undefined;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    label,
    rps: count / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    cpuPerRequest,
    databaseCpuPerRequest,
    firstError,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
