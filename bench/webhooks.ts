/**
 * Webhook delivery, on SQLite and PostgreSQL: throughput, latency, fairness and crash recovery.
 *
 *   node --import tsx bench/webhooks.ts [--events 3000] [--producers 4] [--rate 100] [--paced 1000]
 *     [--slow-ms 2000] [--slow-queued 300] [--fair 200] [--black-holes 4] [--black-hole-queued 150]
 *     [--black-hole-events 1000] [--kills 10] [--database sqlite,postgres] [--cpu-prof DIR]
 *     [--claim-ahead N] [--json]
 *
 * Each phase uses the real outbox (events recorded in a transaction), the real delivery worker,
 * signing, and undici to bare node:http receivers on loopback that parse the body:
 *
 * - baseline: the same receiver loaded by bare undici POSTs of the same body (16 in flight, no
 *   database, no signing): the ceiling deliveries/s is compared with, in the same run, warm (the
 *   median of three rounds after a cold one; the cold round is reported too);
 * The events are real completions: each completes a consented session through the service's
 * completeSession (its move and its `verification.completed`, as a wallet's accepted answer
 * does), from sessions written before the phase.
 *
 * - producers: `--events` completions committed as fast as `--producers` concurrent writers can,
 *   with no worker at all: completions/s (the ceiling of the burst), this process's CPU time and
 *   the statements (on PostgreSQL each a round trip) per completion;
 * - burst: `--events` events committed as fast as `--producers` concurrent writers can, the
 *   worker (in this process, woken on commit) delivering meanwhile: deliveries/s from the first
 *   commit to the last receipt, and commit→receipt latency under that saturation; with the
 *   producers phase in the same run, `burst_vs_producers` is the burst over its ceiling;
 * - drain: `--events` events committed first, with no worker running, then the worker started:
 *   deliveries/s from its start to the last receipt. Delivery alone, where the burst also counts
 *   the producers' commits, which share this process's one thread (and on PostgreSQL bound it);
 *   and the CPU time of this process per delivery meanwhile (the receiver's included, the same for
 *   every tree compared), which moves far less with the machine's load than deliveries/s. Then
 *   the drain floor (bench/drain-floor.ts) on a second backlog of the same size: what no design of
 *   durable, signed, at-least-once delivery can skip (a lease before the send, the event read, two
 *   signatures, the POST, the delivery and its attempt recorded), batched, with none of the
 *   worker's policy; `drain_vs_floor` is the worker's drain over it. Both send at most 16 at once;
 *   `drain_mean_in_flight` and `drain_floor_mean_in_flight` are how many they kept in flight on
 *   average (a drain well below the other's waits on its refill, not the CPU). `--claim-ahead N`
 *   runs the worker's drain with N claimed ahead per endpoint instead of its default;
 * - paced: `--paced` events at `--rate` per second: commit→receipt latency when not backlogged;
 * - fairness: `--fair` events of organization Y at 50/s to a fast endpoint, alone, then again
 *   right after organization X queued `--slow-queued` events for an endpoint that answers in
 *   `--slow-ms`: Y's p50/p99 beside the slow endpoint against Y's alone;
 * - black holes: `--black-hole-events` events of organization Y at 50/s to a fast endpoint,
 *   alone, then again right after `--black-holes` other organizations queued
 *   `--black-hole-queued` events each for endpoints that accept the connection and never answer
 *   (each attempt runs into the sender's 10 s timeout): Y's commit→receipt p50/p99 beside them
 *   against Y's alone. The default, 1,000 events at 50/s, spans two rounds of timeouts;
 * - recovery: two worker processes (`src/main.ts --role worker`, as operators run them, default
 *   WEBHOOK_LEASE_SECONDS), events at 100/s to a receiver answering in 50 ms, and `--kills`
 *   SIGKILLs (one every 1.5 s or so, alternating, each once its replacement is running): events
 *   lost (never received) and the longest commit→receipt wait.
 *
 * `--cpu-prof DIR` writes a V8 CPU profile of the worker's drain and one of the floor's, each from
 * its start to its last receipt (DIR/drain-worker-<database>.cpuprofile, drain-floor-…), and one of
 * the producers phase (producers-<database>); read them with bench/cpuprofile.ts --skip-ms 0.
 *
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after);
 * without either it is skipped. Figures are printed, never asserted; with `--json` the last line
 * is one JSON object: {"sqlite": {deliveries_per_s, drain_deliveries_per_s, paced_p99_ms, …}, "postgres": {…}}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import inspector from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.ts';
import { systemClock } from '../src/domain/clock.ts';
import { newId } from '../src/domain/ids.ts';
import type { Session, SessionResult } from '../src/domain/session.ts';
import { createServiceDeps, type ServiceDeps } from '../src/services/deps.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { completedEventData } from '../src/services/sessions.ts';
import { completeSession } from '../src/services/wallet.ts';
import { insertNewEndpoint } from '../src/services/webhooks.ts';
import { migrate, openStore, type Store } from '../src/store/db.ts';
import { insertSessions } from '../src/store/sessions.ts';
import { DeliveryWorker } from '../src/webhooks/worker.ts';
import { drainFloor } from './drain-floor.ts';
import { installStatementCounter } from '../test/support/statements.ts';

// Before any store opens: a pg client binds its query method when it is made.
const statements = installStatementCounter();

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '3000' },
    producers: { type: 'string', default: '4' },
    rate: { type: 'string', default: '100' },
    paced: { type: 'string', default: '1000' },
    'slow-ms': { type: 'string', default: '2000' },
    'slow-queued': { type: 'string', default: '300' },
    fair: { type: 'string', default: '200' },
    'black-holes': { type: 'string', default: '4' },
    'black-hole-queued': { type: 'string', default: '150' },
    'black-hole-events': { type: 'string', default: '1000' },
    kills: { type: 'string', default: '10' },
    database: { type: 'string', default: 'sqlite,postgres' },
    phases: { type: 'string', default: 'baseline,producers,burst,drain,paced,fairness,black-holes,recovery' },
    'claim-ahead': { type: 'string' },
    'cpu-prof': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(values.events);
const PRODUCERS = Number(values.producers);
const RATE = Number(values.rate);
const PACED = Number(values.paced);
const SLOW_MS = Number(values['slow-ms']);
const SLOW_QUEUED = Number(values['slow-queued']);
const FAIR = Number(values.fair);
const BLACK_HOLES = Number(values['black-holes']);
const BLACK_HOLE_QUEUED = Number(values['black-hole-queued']);
const BLACK_HOLE_EVENTS = Number(values['black-hole-events']);
const KILLS = Number(values.kills);
/** `--claim-ahead N`: the drain's worker claims N ahead per endpoint instead of its default. */
const CLAIM_AHEAD = values['claim-ahead'] === undefined ? undefined : Number(values['claim-ahead']);
if (CLAIM_AHEAD !== undefined && !(Number.isInteger(CLAIM_AHEAD) && CLAIM_AHEAD >= 0))
  throw new Error(`--claim-ahead takes a whole number of deliveries, 0 or more, not ${values['claim-ahead']}`);
const PHASES = new Set(values.phases.split(',').map((p) => p.trim()));
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const CPU_PROF_DIR = values['cpu-prof'];
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const config = loadConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'silent' });
const log = (line: string) => console.log(line);

interface BenchStore {
  store: Store;
  /** The DATABASE_URL a worker process uses for this store. */
  url: string;
  drop(): Promise<void>;
}

async function openBenchStore(dialect: 'sqlite' | 'postgres'): Promise<BenchStore> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-bench-'));
    const url = `sqlite:${join(dir, 'bench.sqlite')}`;
    const store = await openStore(url);
    await migrate(store);
    return {
      store,
      url,
      drop: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const store = await openStore(PG_URL!, { schema, poolSize: 10 });
  await migrate(store);
  const url = `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    store,
    url,
    drop: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

/** A bare receiver: reads the body, notes when each session's event first arrived, answers 200 (after `delayMs`). */
async function startReceiver(delayMs = 0) {
  const receivedAt = new Map<string, number>();
  // The ids still awaited: each receipt removes one, so that waiting costs O(1) per request (a scan
  // of every awaited id per request was quadratic, and at thousands of events it was the
  // benchmark's own cost that showed, on the same thread as the worker).
  let waiting: { missing: Set<string>; resolve: () => void } | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // A session's delivery by its session's id (tenantWithEndpoint); the baseline's by its own.
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; data?: { sessionId?: string } };
      const id = body.data?.sessionId ?? body.id;
      if (!receivedAt.has(id)) receivedAt.set(id, performance.now());
      if (waiting?.missing.delete(id) && waiting.missing.size === 0) waiting.resolve();
      const answer = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    receivedAt,
    /** Resolves once every id has arrived, or after `timeoutMs` (then the caller counts what is missing). */
    waitFor(ids: Iterable<string>, timeoutMs: number): Promise<void> {
      const missing = new Set([...ids].filter((i) => !receivedAt.has(i)));
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          resolve();
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiting = undefined;
          resolve();
        };
        if (missing.size === 0) done();
        else waiting = { missing, resolve: done };
      });
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The result every benchmark session completes with, as a wallet's accepted presentation gives it. */
const result: SessionResult = {
  verified: true,
  protocol: 'matricula',
  format: 'sd-jwt-vc',
  university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
  claims: { is_active_student: true, academic_level: 'undergraduate', valid_until: '2027-09-30T00:00:00.000Z' },
  failureReason: null,
  failureMessage: null,
};
/** A delivery-sized body for the baseline: what a `verification.completed` carries. */
const data = completedEventData('sess_baseline', result);

/**
 * An organization with one endpoint at `url`. `emit()` completes one of its consented sessions
 * through the service's own completion (services/wallet.ts completeSession: the session's move
 * and its `verification.completed` with the deliveries, as a wallet's answer makes them), notes
 * the commit time and returns the session's id, which the receiver reads from each delivery.
 * `stock(n)` writes n consented sessions first, so that a measured phase does not write them.
 */
async function tenantWithEndpoint(store: Store, services: ServiceDeps, url: string, name: string) {
  const org = await createOrganization({ db: store.db, clock: systemClock }, { name, environment: 'sandbox' });
  const app = org.application;
  await store.db
    .transaction()
    .execute((trx) => insertNewEndpoint(trx, { clock: systemClock }, app, { url, events: ['verification.completed'] }));
  const committedAt = new Map<string, number>();
  const consented: Session[] = [];
  const stock = async (count: number) => {
    const now = new Date();
    const sessions = Array.from({ length: count }, (): Session => ({
      id: newId('session', systemClock),
      appId: app.id,
      orgId: org.organization.id,
      environment: 'sandbox',
      status: 'consented',
      challengeNonce: randomBytes(16).toString('base64url'),
      purpose: 'Benchmark',
      requiredClaims: ['is_active_student'],
      metadata: null,
      clientReference: null,
      failedAttempts: 0,
      result: null,
      expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      consentedAt: now.toISOString(),
      completedAt: null,
      redactedAt: null,
      returnUrl: null,
    }));
    for (let i = 0; i < sessions.length; i += 500) await insertSessions(store.db, sessions.slice(i, i + 500));
    consented.push(...sessions);
  };
  return {
    committedAt,
    stock,
    emit: async (): Promise<string> => {
      if (consented.length === 0) await stock(100);
      const session = consented.pop()!;
      if (!(await completeSession(services, session, result, new Date().toISOString())))
        throw new Error(`session ${session.id} did not complete`);
      committedAt.set(session.id, performance.now());
      return session.id;
    },
  };
}

interface Latency {
  count: number;
  received: number;
  p50: number;
  p99: number;
  max: number;
}

function latencies(ids: string[], committedAt: Map<string, number>, receiver: Receiver): Latency {
  const waits = ids
    .filter((id) => receiver.receivedAt.has(id))
    .map((id) => receiver.receivedAt.get(id)! - committedAt.get(id)!)
    .sort((a, b) => a - b);
  return {
    count: ids.length,
    received: waits.length,
    p50: round(percentile(waits, 50)),
    p99: round(percentile(waits, 99)),
    max: round(waits.at(-1) ?? NaN),
  };
}

/** Emits `count` events at `perSecond`, each through `emit`; resolves with their ids once all committed. */
async function paced(count: number, perSecond: number, emit: () => Promise<string>): Promise<string[]> {
  const start = performance.now();
  const emitted: Promise<string>[] = [];
  for (let i = 0; i < count; i++) {
    const wait = start + (i * 1000) / perSecond - performance.now();
    if (wait > 0) await pause(wait);
    emitted.push(emit());
  }
  return Promise.all(emitted);
}

/** Bare undici POSTs of a delivery-sized body to a receiver, 16 in flight: the ceiling of deliveries/s. */
/**
 * Bare undici POSTs to a receiver like the phases' own, 16 in flight: a first round of `count` with
 * the JIT cold (the first thing the process runs; what earlier sittings took as the baseline), then
 * `rounds` rounds of `count` and their median, which the ratios use. The phases run warm: the
 * burst after a warm-up, the drain after the burst. Here a cold round read 3,500–5,800 a second and
 * the warm ones about three times that.
 */
async function baseline(
  count: number,
  rounds = 3,
): Promise<{ requestsPerSecond: number; cold: number; rounds: number[] }> {
  const receiver = await startReceiver();
  const agent = new Agent();
  const body = (i: number) => JSON.stringify({ id: `evt_baseline${i}`, event: 'verification.completed', data });
  const round = async () => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const res = await request(receiver.url, { method: 'POST', body: body(next++), dispatcher: agent });
          await res.body.text();
        }
      }),
    );
    return Math.round(count / ((performance.now() - started) / 1000));
  };
  const cold = await round();
  const measured: number[] = [];
  for (let r = 0; r < rounds; r++) measured.push(await round());
  await agent.close();
  await receiver.close();
  const median = [...measured].sort((a, b) => a - b)[Math.floor(rounds / 2)];
  return { requestsPerSecond: median, cold, rounds: measured };
}

async function burstAndPaced(dialect: 'sqlite' | 'postgres') {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  const receiver = await startReceiver();
  const services = createServiceDeps({ db: store.db, clock: systemClock, config });
  const tenant = await tenantWithEndpoint(store, services, receiver.url, 'Bench');
  await tenant.stock(50 + (PHASES.has('burst') ? EVENTS : 0) + (PHASES.has('paced') ? PACED : 0));
  const worker = new DeliveryWorker({ store, clock: systemClock, config, wakeups: services.wakeups });
  await worker.start();
  const result: { burst?: Latency & { deliveriesPerSecond: number }; paced?: Latency } = {};
  // Warm-up: connections, JIT, prepared paths.
  await receiver.waitFor(await paced(50, 500, tenant.emit), 30_000);
  if (PHASES.has('burst')) {
    const started = performance.now();
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (ids.length < EVENTS) {
          const i = ids.push('') - 1;
          ids[i] = await tenant.emit();
        }
      }),
    );
    await receiver.waitFor(ids, 300_000);
    const lastReceipt = Math.max(...ids.map((id) => receiver.receivedAt.get(id) ?? 0));
    result.burst = {
      ...latencies(ids, tenant.committedAt, receiver),
      deliveriesPerSecond: Math.round(ids.length / ((lastReceipt - started) / 1000)),
    };
  }
  if (PHASES.has('paced')) {
    const ids = await paced(PACED, RATE, tenant.emit);
    await receiver.waitFor(ids, 300_000);
    result.paced = latencies(ids, tenant.committedAt, receiver);
  }
  await worker.stop();
  await receiver.close();
  await bench.drop();
  return result;
}

/**
 * The burst's producers with no worker at all: how many completions a second they commit alone,
 * the ceiling of the burst's deliveries/s; and this process's CPU time and statements per one.
 */
async function producersAlone(
  dialect: 'sqlite' | 'postgres',
): Promise<{ eventsPerSecond: number; cpuMicrosPerEvent: number; statementsPerEvent: number }> {
  const bench = await openBenchStore(dialect);
  const services = createServiceDeps({ db: bench.store.db, clock: systemClock, config });
  const tenant = await tenantWithEndpoint(bench.store, services, 'http://127.0.0.1:9/unused', 'Producers');
  await tenant.stock(50 + EVENTS);
  // Warm-up: connections, JIT, prepared paths.
  for (let i = 0; i < 50; i++) await tenant.emit();
  let done = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const seen = await statements.during(() =>
    Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (done < EVENTS) {
          done++;
          await tenant.emit();
        }
      }),
    ),
  );
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await bench.drop();
  return {
    eventsPerSecond: Math.round(done / elapsed),
    cpuMicrosPerEvent: Math.round((used.user + used.system) / done),
    statementsPerEvent: round(seen.length / done),
  };
}

/** Runs `work` under V8's CPU profiler when `--cpu-prof` names a folder, writing DIR/`name`.cpuprofile. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!CPU_PROF_DIR) return work();
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(CPU_PROF_DIR, { recursive: true });
    writeFileSync(join(CPU_PROF_DIR, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/**
 * The POSTs under way in this process, sampled as each one starts (undici's diagnostics channels:
 * a request counts from its creation to its answer's headers, or its error): the mean is how full
 * a sender keeps its pipeline. Both drains send at most 16 at once to the one endpoint, so a drain
 * well below 16 is waiting on its own refill, not on the CPU.
 */
function inFlightGauge() {
  let open = 0;
  let sum = 0;
  let starts = 0;
  const started = () => {
    open++;
    sum += open;
    starts++;
  };
  const ended = () => void open--;
  subscribe('undici:request:create', started);
  subscribe('undici:request:headers', ended);
  subscribe('undici:request:error', ended);
  return {
    /** The mean since the last call (or since the gauge was made), then starts over. */
    take(): number {
      const mean = starts === 0 ? 0 : Math.round((sum / starts) * 10) / 10;
      sum = 0;
      starts = 0;
      return mean;
    },
    close() {
      unsubscribe('undici:request:create', started);
      unsubscribe('undici:request:headers', ended);
      unsubscribe('undici:request:error', ended);
    },
  };
}

/** A backlog of `EVENTS` committed before the worker starts: how fast the worker alone drains it. */
async function drain(dialect: 'sqlite' | 'postgres'): Promise<{
  deliveriesPerSecond: number;
  received: number;
  cpuMicrosPerDelivery: number;
  statementsPerEvent: number;
  statementsPerDelivery: number;
  meanInFlight: number;
  floor: {
    deliveriesPerSecond: number;
    received: number;
    unrecorded: number;
    cpuMicrosPerDelivery: number;
    meanInFlight: number;
  };
}> {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  const receiver = await startReceiver();
  const services = createServiceDeps({ db: store.db, clock: systemClock, config });
  const tenant = await tenantWithEndpoint(store, services, receiver.url, 'Drain');
  await tenant.stock(50 + EVENTS);
  // Warm-up as in the burst: connections, JIT, prepared paths; then stop and queue the backlog.
  let worker = new DeliveryWorker({ store, clock: systemClock, config, wakeups: services.wakeups });
  await worker.start();
  await receiver.waitFor(await paced(50, 500, tenant.emit), 30_000);
  await worker.stop();
  const ids: string[] = [];
  // Statements sent to the database (each a round trip on PostgreSQL), counted at the driver: by
  // the producers per event, and by the worker per delivery. Counts, not time: they hold on any machine.
  const producerStatements = await statements.during(() =>
    Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (ids.length < EVENTS) {
          const i = ids.push('') - 1;
          ids[i] = await tenant.emit();
        }
      }),
    ),
  );
  worker = new DeliveryWorker({
    store,
    clock: systemClock,
    config,
    wakeups: services.wakeups,
    ...(CLAIM_AHEAD === undefined ? {} : { claimAheadPerEndpoint: CLAIM_AHEAD }),
  });
  const inFlight = inFlightGauge();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const workerStatements = await statements.during(() =>
    profiled(`drain-worker-${dialect}`, async () => {
      await worker.start();
      await receiver.waitFor(ids, 300_000);
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const meanInFlight = inFlight.take();
  const lastReceipt = Math.max(...ids.map((id) => receiver.receivedAt.get(id) ?? 0));
  const received = ids.filter((id) => receiver.receivedAt.has(id)).length;
  await worker.stop();
  // The floor (bench/drain-floor.ts) on a second backlog of the same size in the same database,
  // queued by the same producers, timed as the worker is: from its start to the last receipt.
  const floorIds: string[] = [];
  while (floorIds.length < EVENTS) floorIds.push(await tenant.emit());
  const floorCpu = process.cpuUsage();
  const floorStarted = performance.now();
  const floor = await profiled(`drain-floor-${dialect}`, () =>
    drainFloor(dialect === 'sqlite' ? { sqlitePath: bench.url.slice('sqlite:'.length) } : { pgUrl: bench.url }, EVENTS),
  );
  const floorCpuUsed = process.cpuUsage(floorCpu);
  const floorMeanInFlight = inFlight.take();
  inFlight.close();
  const floorReceived = floorIds.filter((id) => receiver.receivedAt.has(id)).length;
  const floorLastReceipt = Math.max(...floorIds.map((id) => receiver.receivedAt.get(id) ?? 0));
  // Every delivery of both backlogs recorded as succeeded: the floor's recording did its work.
  const unrecorded = await store.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '!=', 'succeeded')
    .executeTakeFirstOrThrow();
  await receiver.close();
  await bench.drop();
  return {
    deliveriesPerSecond: Math.round(ids.length / ((lastReceipt - started) / 1000)),
    received,
    cpuMicrosPerDelivery: Math.round((cpu.user + cpu.system) / ids.length),
    statementsPerEvent: Math.round((producerStatements.length / ids.length) * 100) / 100,
    statementsPerDelivery: Math.round((workerStatements.length / ids.length) * 100) / 100,
    meanInFlight,
    floor: {
      deliveriesPerSecond: Math.round(floorIds.length / ((floorLastReceipt - floorStarted) / 1000)),
      received: floorReceived,
      unrecorded: Number(unrecorded.n),
      cpuMicrosPerDelivery: Math.round((floorCpuUsed.user + floorCpuUsed.system) / floor.recorded),
      meanInFlight: floorMeanInFlight,
    },
  };
}

/** Organization Y's fast endpoint at 50 events/s, alone, then beside organization X's slow one with a queue. */
async function fairness(dialect: 'sqlite' | 'postgres') {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  const fast = await startReceiver();
  const slow = await startReceiver(SLOW_MS);
  const services = createServiceDeps({ db: store.db, clock: systemClock, config });
  const y = await tenantWithEndpoint(store, services, fast.url, 'Y');
  const x = await tenantWithEndpoint(store, services, slow.url, 'X');
  await y.stock(20 + 2 * FAIR);
  await x.stock(SLOW_QUEUED);
  const worker = new DeliveryWorker({ store, clock: systemClock, config, wakeups: services.wakeups });
  await worker.start();
  await fast.waitFor(await paced(20, 100, y.emit), 30_000);
  const aloneIds = await paced(FAIR, 50, y.emit);
  await fast.waitFor(aloneIds, 300_000);
  const alone = latencies(aloneIds, y.committedAt, fast);
  for (let i = 0; i < SLOW_QUEUED; i++) await x.emit();
  const besideIds = await paced(FAIR, 50, y.emit);
  await fast.waitFor(besideIds, 300_000);
  const beside = latencies(besideIds, y.committedAt, fast);
  // The slow endpoint's queue is not drained: stop sends what is in flight (one answer's time).
  await worker.stop();
  await fast.close();
  await slow.close();
  await bench.drop();
  return { alone, beside };
}

/** A receiver that accepts the connection, reads the request and never answers. */
async function startBlackHole() {
  const server = createServer((req) => req.resume());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Organization Y's fast endpoint at 50 events/s, alone, then beside `BLACK_HOLES` organizations' silent endpoints with queues. */
async function blackHoles(dialect: 'sqlite' | 'postgres') {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  const fast = await startReceiver();
  const holes = await Promise.all(Array.from({ length: BLACK_HOLES }, () => startBlackHole()));
  const services = createServiceDeps({ db: store.db, clock: systemClock, config });
  const y = await tenantWithEndpoint(store, services, fast.url, 'Y');
  const silent = [];
  for (const [i, hole] of holes.entries())
    silent.push(await tenantWithEndpoint(store, services, hole.url, `Silent ${i}`));
  await y.stock(20 + 2 * BLACK_HOLE_EVENTS);
  for (const x of silent) await x.stock(BLACK_HOLE_QUEUED);
  const worker = new DeliveryWorker({ store, clock: systemClock, config, wakeups: services.wakeups });
  await worker.start();
  await fast.waitFor(await paced(20, 100, y.emit), 30_000);
  const aloneIds = await paced(BLACK_HOLE_EVENTS, 50, y.emit);
  await fast.waitFor(aloneIds, 300_000);
  const alone = latencies(aloneIds, y.committedAt, fast);
  for (const x of silent) for (let i = 0; i < BLACK_HOLE_QUEUED; i++) await x.emit();
  const besideIds = await paced(BLACK_HOLE_EVENTS, 50, y.emit);
  await fast.waitFor(besideIds, 300_000);
  const beside = latencies(besideIds, y.committedAt, fast);
  // Closing the black holes ends their sends at once: the worker's stop need not wait for timeouts.
  await Promise.all(holes.map((hole) => hole.close()));
  await worker.stop();
  await fast.close();
  await bench.drop();
  return { alone, beside };
}

interface WorkerProcess {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<unknown>;
}

function spawnWorker(databaseUrl: string): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--role', 'worker'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = once(child, 'exit');
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (output.length < 100_000) output += chunk.toString();
      if (output.includes('Matricula worker is running')) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    if (process.env.BENCH_DEBUG) child.stdout!.on('data', (c: Buffer) => process.stderr.write(c));
    void exited.then(() => reject(new Error(`worker exited before it was ready:\n${output}`)));
  });
  ready.catch(() => undefined);
  return { child, ready, exited };
}

/** Two worker processes, events at 100/s, `KILLS` SIGKILLs: events lost and the longest wait. */
async function recovery(dialect: 'sqlite' | 'postgres') {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  const receiver = await startReceiver(50);
  // This process only writes the outbox: no worker subscribes to its wake-ups.
  const services = createServiceDeps({ db: store.db, clock: systemClock, config });
  const tenant = await tenantWithEndpoint(store, services, receiver.url, 'Recovery');
  // About what the kills take at 100 events a second; more are written as needed.
  await tenant.stock(KILLS * 300);
  const workers = [spawnWorker(bench.url), spawnWorker(bench.url)];
  await Promise.all(workers.map((w) => w.ready));
  // One kill every 1.5 s or so, alternating. Its replacement is started, and running, before the
  // kill: starting a process costs seconds of CPU on a busy machine, and the waits are to measure
  // how soon the dead worker's deliveries are taken over, not process start-up.
  const killEveryMs = 1_500;
  let kills = 0;
  const killer = (async () => {
    while (kills < KILLS) {
      await pause(killEveryMs);
      const i = kills % 2;
      const replacement = spawnWorker(bench.url);
      await replacement.ready;
      workers[i].child.kill('SIGKILL');
      await workers[i].exited;
      kills++;
      workers[i] = replacement;
    }
  })();
  const started = performance.now();
  const emitted: Promise<string>[] = [];
  let killsDone = false;
  void killer.then(() => (killsDone = true));
  // Events at 100/s until the last kill, and 1.5 s more.
  for (let i = 0, until = Infinity; performance.now() < until; i++) {
    if (killsDone && until === Infinity) until = performance.now() + killEveryMs;
    const wait = started + i * 10 - performance.now();
    if (wait > 0) await pause(wait);
    emitted.push(tenant.emit());
  }
  const ids = await Promise.all(emitted);
  const events = ids.length;
  await receiver.waitFor(ids, 300_000);
  const drainedAt = Math.max(...ids.map((id) => receiver.receivedAt.get(id) ?? 0));
  const lastCommit = Math.max(...ids.map((id) => tenant.committedAt.get(id)!));
  const wait = latencies(ids, tenant.committedAt, receiver);
  // A receipt is not yet a delivery: the answer of a request in flight when its worker is killed
  // is never recorded, and the delivery is sent again once its lease runs out. So the recovery is
  // measured from the event's creation to the delivery recorded as succeeded (the same clock).
  const recordedBy = Date.now() + 300_000;
  const succeeded = () =>
    store.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('events as e', 'e.id', 'd.event_id')
      .select(['e.created_at', 'd.delivered_at'])
      .where('d.status', '=', 'succeeded')
      .execute();
  let recorded = await succeeded();
  while (recorded.length < ids.length && Date.now() < recordedBy) {
    await pause(500);
    recorded = await succeeded();
  }
  const maxRecordedWaitMs = Math.max(
    ...recorded.map((r) => new Date(r.delivered_at!).getTime() - new Date(r.created_at).getTime()),
  );
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  await receiver.close();
  await bench.drop();
  return {
    events,
    kills,
    lost: ids.length - wait.received,
    maxWaitMs: wait.max,
    maxRecordedWaitMs: round(maxRecordedWaitMs),
    unrecorded: ids.length - recorded.length,
    p99WaitMs: wait.p99,
    drainSeconds: round((drainedAt - lastCommit) / 1000),
  };
}

async function main(): Promise<void> {
  const dialects = values.database.split(',').map((d) => d.trim()) as Array<'sqlite' | 'postgres'>;
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  log(`webhook delivery, ${cpus().length} cores, load ${load()}`);
  log(
    `burst: ${EVENTS} events from ${PRODUCERS} producers; paced: ${PACED} events at ${RATE}/s; ` +
      `fairness: ${FAIR} events at 50/s beside ${SLOW_QUEUED} queued to a ${SLOW_MS} ms endpoint; ` +
      `black holes: ${BLACK_HOLE_EVENTS} events at 50/s beside ${BLACK_HOLES} silent endpoints with ${BLACK_HOLE_QUEUED} queued each; ` +
      `recovery: ${KILLS} SIGKILLs at 100 events/s\n`,
  );
  const json: Record<string, unknown> = {};
  if (PHASES.has('baseline')) {
    const b = await baseline(3000);
    log(
      `baseline: bare undici POSTs to the same receiver, 16 in flight: ${b.requestsPerSecond} req/s warm ` +
        `(median of ${b.rounds.join(', ')}), ${b.cold} req/s cold (the first round)\n`,
    );
    json.baseline_requests_per_s = b.requestsPerSecond;
    json.baseline_cold_requests_per_s = b.cold;
    json.baseline_rounds = b.rounds;
  }
  /** A rate ÷ the warm bare undici baseline, two decimals; undefined (left out of the JSON) without a baseline phase. */
  const vsBare = (perSecond: number) =>
    json.baseline_requests_per_s ? round2(perSecond / Number(json.baseline_requests_per_s)) : undefined;
  for (const dialect of dialects) {
    if (dialect === 'postgres' && !PG_URL) {
      log('postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)');
      continue;
    }
    const out: Record<string, unknown> = {};
    json[dialect] = out;
    if (PHASES.has('producers')) {
      const p = await profiled(`producers-${dialect}`, () => producersAlone(dialect));
      log(
        `${dialect} producers alone: ${p.eventsPerSecond} completions/s from ${PRODUCERS} producers, no worker; ` +
          `${p.cpuMicrosPerEvent} µs of this process's CPU and ${p.statementsPerEvent} statements per completion`,
      );
      out.producers_events_per_s = p.eventsPerSecond;
      out.producers_cpu_us_per_event = p.cpuMicrosPerEvent;
      out.producers_statements_per_event = p.statementsPerEvent;
      out.producers_vs_bare_undici = vsBare(p.eventsPerSecond);
    }
    if (PHASES.has('burst') || PHASES.has('paced')) {
      const { burst, paced: p } = await burstAndPaced(dialect);
      if (burst) {
        log(
          `${dialect} burst: ${burst.deliveriesPerSecond} deliveries/s, commit→receipt p50 ${burst.p50} ms, p99 ${burst.p99} ms (${burst.received}/${burst.count})`,
        );
        out.deliveries_per_s = burst.deliveriesPerSecond;
        out.burst_p99_ms = burst.p99;
        out.deliveries_vs_bare_undici = vsBare(burst.deliveriesPerSecond);
        // The burst cannot deliver faster than its producers commit: its ceiling, from this run.
        const producers = out.producers_events_per_s;
        if (typeof producers === 'number' && producers > 0) {
          const vsProducers = round2(burst.deliveriesPerSecond / producers);
          out.burst_vs_producers = vsProducers;
          log(`${dialect} burst at ${vsProducers} of the producers alone (${producers} completions/s)`);
        }
      }
      if (p) {
        log(
          `${dialect} paced ${RATE}/s: commit→receipt p50 ${p.p50} ms, p99 ${p.p99} ms, max ${p.max} ms (${p.received}/${p.count})`,
        );
        out.paced_p50_ms = p.p50;
        out.paced_p99_ms = p.p99;
      }
    }
    if (PHASES.has('drain')) {
      const d = await drain(dialect);
      log(
        `${dialect} drain: ${d.deliveriesPerSecond} deliveries/s from a backlog of ${EVENTS} (${d.received}/${EVENTS}), ` +
          `${d.cpuMicrosPerDelivery} µs of this process's CPU per delivery (the receiver's included); ` +
          `${d.statementsPerEvent} statements per event enqueued, ${d.statementsPerDelivery} per delivery drained; ` +
          `${d.meanInFlight} POSTs in flight on average`,
      );
      out.drain_statements_per_event = d.statementsPerEvent;
      out.drain_statements_per_delivery = d.statementsPerDelivery;
      out.drain_deliveries_per_s = d.deliveriesPerSecond;
      out.drain_vs_bare_undici = vsBare(d.deliveriesPerSecond);
      out.drain_cpu_us_per_delivery = d.cpuMicrosPerDelivery;
      out.drain_mean_in_flight = d.meanInFlight;
      log(
        `${dialect} drain floor: ${d.floor.deliveriesPerSecond} deliveries/s (${d.floor.received}/${EVENTS} received, ` +
          `${d.floor.unrecorded} deliveries of either drain not recorded as succeeded), ` +
          `${d.floor.cpuMicrosPerDelivery} µs of CPU per delivery, ${d.floor.meanInFlight} POSTs in flight on average; the worker's drain at ` +
          `${round2(d.deliveriesPerSecond / d.floor.deliveriesPerSecond)} of it`,
      );
      out.drain_floor_deliveries_per_s = d.floor.deliveriesPerSecond;
      out.drain_floor_cpu_us_per_delivery = d.floor.cpuMicrosPerDelivery;
      out.drain_floor_mean_in_flight = d.floor.meanInFlight;
      out.drain_floor_vs_bare_undici = vsBare(d.floor.deliveriesPerSecond);
      out.drain_vs_floor = round2(d.deliveriesPerSecond / d.floor.deliveriesPerSecond);
    }
    if (PHASES.has('fairness')) {
      const f = await fairness(dialect);
      log(
        `${dialect} fairness: fast endpoint p50/p99 alone ${f.alone.p50}/${f.alone.p99} ms, beside the slow one ${f.beside.p50}/${f.beside.p99} ms (max ${f.beside.max} ms)`,
      );
      out.fairness = {
        alone_p50_ms: f.alone.p50,
        alone_p99_ms: f.alone.p99,
        beside_slow_p50_ms: f.beside.p50,
        beside_slow_p99_ms: f.beside.p99,
        p99_ratio: round((f.beside.p99 / f.alone.p99) * 100) / 100,
      };
    }
    if (PHASES.has('black-holes') && BLACK_HOLES > 0) {
      const b = await blackHoles(dialect);
      log(
        `${dialect} black holes: fast endpoint p50/p99 alone ${b.alone.p50}/${b.alone.p99} ms, beside ${BLACK_HOLES} black holes ` +
          `${b.beside.p50}/${b.beside.p99} ms (max ${b.beside.max} ms, ${b.beside.received}/${b.beside.count} received)`,
      );
      out.black_holes = {
        black_holes: BLACK_HOLES,
        queued_each: BLACK_HOLE_QUEUED,
        alone_p50_ms: b.alone.p50,
        alone_p99_ms: b.alone.p99,
        beside_p50_ms: b.beside.p50,
        beside_p99_ms: b.beside.p99,
        beside_max_ms: b.beside.max,
        beside_received: b.beside.received,
        p99_ratio: round((b.beside.p99 / b.alone.p99) * 100) / 100,
      };
    }
    if (PHASES.has('recovery')) {
      const r = await recovery(dialect);
      log(
        `${dialect} recovery: ${r.kills} SIGKILLs, ${r.events} events, ${r.lost} lost, longest wait to receipt ${r.maxWaitMs} ms (p99 ${r.p99WaitMs} ms), ` +
          `to a recorded success ${r.maxRecordedWaitMs} ms (${r.unrecorded} unrecorded), drained ${r.drainSeconds} s after the last commit`,
      );
      out.recovery = {
        kills: r.kills,
        events: r.events,
        lost: r.lost,
        max_wait_ms: r.maxWaitMs,
        max_recorded_wait_ms: r.maxRecordedWaitMs,
        unrecorded: r.unrecorded,
        p99_wait_ms: r.p99WaitMs,
        drain_s: r.drainSeconds,
      };
    }
  }
  log(`load at the end: ${load()}`);
  if (values.json) console.log(JSON.stringify(json));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
